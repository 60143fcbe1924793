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
