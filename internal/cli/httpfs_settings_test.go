package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestDuckDBHttpfsSettings: a duckdb.* key of the httpfs extension
// (http_timeout) was refused on every publish, exit 2, "Failed to download
// extension httpfs": DuckDB autoloads httpfs to set it, before the engine
// loaded it from the configured directory. It is set once httpfs is
// loaded, for s3:// locations; a bad value is refused there naming its
// line; without an s3:// location it is unused.
func TestDuckDBHttpfsSettings(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := func(line string) string {
		p := filepath.Join(t.TempDir(), "httpfs.conf")
		if err := os.WriteFile(p, append(append(base, '\n'), line+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := conf("duckdb.http_timeout 60000"), conf("duckdb.http_timeout abc")
	// Applied after the engine's own, it turned globs back on in S3 URLs:
	// a hidden file beside a listed [_]x.parquet was read, exit 0.
	globs := conf("duckdb.s3_url_compatibility_mode false")
	badLine := strings.Count(string(base), "\n") + 2
	for _, tc := range []struct {
		name    string
		backend publishtest.Backend
		conf    string
		exit    int
		says    string
	}{
		{"local", publishtest.Local, good, 0, ""},
		{"s3", publishtest.S3, good, 0, ""},
		{"local, a bad value unused", publishtest.Local, bad, 0, ""},
		{"s3, globs back on", publishtest.S3, globs, 2, "duckdb.s3_url_compatibility_mode (" + globs + ":"},
		{"local, globs back on", publishtest.Local, globs, 2, "not settable: the engine reads every S3 URL literally"},
		{"s3, a bad value", publishtest.S3, bad, 2, fmt.Sprintf("duckdb.http_timeout (%s:%d) = \"abc\"", bad, badLine)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := publishtest.Harness{Backend: tc.backend}
			fx := h.LoadFixture(t, "")
			wh := h.NewWarehouse(t)
			args := publishtest.WithFlag(fx.Args(wh, "httpfs-1", "2026-03-02"), "--config", tc.conf)
			code, _, stderr := publishtest.Harness{}.Run(t, []string{"ENGAGEMENT_LOG_FORMAT=text"}, args...)
			if code != tc.exit || tc.says != "" && !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want %d saying %q\n%s", code, tc.exit, tc.says, stderr)
			}
		})
	}
}
