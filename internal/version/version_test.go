package version

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		module   string
		settings []debug.BuildSetting
		want     string
	}{
		{"TestBinary", "", nil, "(devel)"},
		{"Release", "v1.2.0", nil, "v1.2.0"},
		{"Checkout", "(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "9a4dede1c0de55aa"}, {Key: "vcs.modified", Value: "true"}}, "(devel) rev 9a4dede1c0de modified"},
		{"Clean", "(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "9a4dede1c0de55aa"}, {Key: "vcs.modified", Value: "false"}}, "(devel) rev 9a4dede1c0de"},
		{"PseudoVersion", "v0.0.0-20261130-9a4dede1c0de", []debug.BuildSetting{{Key: "vcs.revision", Value: "9a4dede1c0de55aa"}}, "v0.0.0-20261130-9a4dede1c0de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(tc.module, tc.settings); got != tc.want {
				t.Errorf("describe = %q, want %q", got, tc.want)
			}
		})
	}
	if String() == "" {
		t.Errorf("String() is empty")
	}
}

func TestFill(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/techlearningpro/engagement", Version: "v1.2.0"},
		Deps: []*debug.Module{
			{Path: duckdbGoModule, Version: "v2.10505.0"},
			{Path: sparkModule, Version: "v0.1.1-old", Replace: &debug.Module{Path: sparkModule, Version: "v0.2.0"}},
			{Path: "golang.org/x/sys", Version: "v0.40.0"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "9a4dede1c0de55aa"}, {Key: "vcs.modified", Value: "true"}},
	}
	got := fill(Build{}, bi)
	want := Build{Module: "v1.2.0", Revision: "9a4dede1c0de55aa", Modified: true, Go: "go1.26.8", DuckDBGo: "v2.10505.0", SparkConnect: "v0.2.0"}
	if got != want {
		t.Errorf("fill = %+v\nwant %+v", got, want)
	}
	// The linked library answers without a database: "v1.5.5" and the like.
	if d := Get().DuckDB; len(d) < 2 || d[0] != 'v' {
		t.Errorf("Get().DuckDB = %q, want a version such as v1.5.5", d)
	}
}
