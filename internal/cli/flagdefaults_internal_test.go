package cli

import (
	"regexp"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
)

// TestFlagHelpDefaults: the default a job flag's help names is the config's
// own (a flag's value is "" so that the file's wins): help showed none for
// --spark-remote and --s3-path-style, and one written by hand can drift.
func TestFlagHelpDefaults(t *testing.T) {
	named := regexp.MustCompile(`\(default ([^ ,)]+)\)`)
	checked := 0
	for _, k := range flagKeys {
		m := named.FindStringSubmatch(k.help)
		if m == nil || m[1] == "$ENGAGEMENT_DUCKDB_EXTENSIONS" {
			continue
		}
		checked++
		if want := config.Default(k.key); m[1] != want {
			t.Errorf("--%s's help names the default %q; %s's is %q", k.flag, m[1], k.key, want)
		}
	}
	for _, flag := range []string{"spark-remote", "s3-path-style", "unknown-cap", "lock-timeout"} {
		found := false
		for _, k := range flagKeys {
			found = found || k.flag == flag && named.MatchString(k.help)
		}
		if !found {
			t.Errorf("--%s's help names no default", flag)
		}
	}
	if checked < 4 {
		t.Errorf("checked %d defaults, want at least 4", checked)
	}
}
