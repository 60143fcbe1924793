package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
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
	// A HOME whose ~/.duckdb holds httpfs, as after any INSTALL httpfs:
	// DuckDB autoloaded it from there to set an httpfs key, past an
	// empty --duckdb-extensions, and refused a bad value a local run
	// never uses (exit 2 on one host, 0 on another).
	ext := os.Getenv(duckdb.ExtensionsEnv)
	if ext == "" {
		t.Fatalf("%s is not set: run the tests with scripts/test.sh, which installs httpfs", duckdb.ExtensionsEnv)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".duckdb"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ext, filepath.Join(home, ".duckdb", "extensions")); err != nil {
		t.Fatal(err)
	}
	withHome := []string{"HOME=" + home}
	empty := []string{"--duckdb-extensions", t.TempDir()}
	for _, tc := range []struct {
		name    string
		backend publishtest.Backend
		conf    string
		exit    int
		says    string
		env     []string
		flags   []string
	}{
		{"local, a bad value unused, httpfs in ~/.duckdb", publishtest.Local, bad, 0, "", withHome, nil},
		{"s3, httpfs in ~/.duckdb alone", publishtest.S3, good, 2, "load the httpfs extension", withHome, empty},
		{"local", publishtest.Local, good, 0, "", nil, nil},
		{"s3", publishtest.S3, good, 0, "", nil, nil},
		{"local, a bad value unused", publishtest.Local, bad, 0, "", nil, nil},
		{"s3, globs back on", publishtest.S3, globs, 2, "duckdb.s3_url_compatibility_mode (" + globs + ":", nil, nil},
		{"local, globs back on", publishtest.Local, globs, 2, "not settable: the engine reads every S3 URL literally", nil, nil},
		{"s3, a bad value", publishtest.S3, bad, 2, fmt.Sprintf("duckdb.http_timeout (%s:%d) = \"abc\"", bad, badLine), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := publishtest.Harness{Backend: tc.backend}
			fx := h.LoadFixture(t, "")
			wh := h.NewWarehouse(t)
			args := publishtest.WithFlag(fx.Args(wh, "httpfs-1", "2026-03-02"), "--config", tc.conf)
			for i := 0; i < len(tc.flags); i += 2 {
				args = publishtest.WithFlag(args, tc.flags[i], tc.flags[i+1])
			}
			code, _, stderr := publishtest.Harness{}.Run(t, append([]string{"ENGAGEMENT_LOG_FORMAT=text"}, tc.env...), args...)
			if code != tc.exit || tc.says != "" && !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want %d saying %q\n%s", code, tc.exit, tc.says, stderr)
			}
		})
	}
}
