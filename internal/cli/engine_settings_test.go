package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestEngineSettingsRefused: engine keys that wrote outside the engine or
// were dropped in silence, exit 0 each, are refused (exit 2) naming the
// key and its line, before anything is written:
//   - duckdb.log_query_path wrote every statement, the S3 secret's
//     CREATE SECRET among them, to a file;
//   - duckdb.profiling_output replaced pointer.json with a profile;
//   - duckdb.s3_secret_access_key was ignored for the engine's secret, and
//     written into _attempt.json;
//   - a key one engine refuses passed on the other (a config that worked
//     failed the day a scheduler switched engines);
//   - spark.speculation true was told to start the server with it on;
//   - a duckdb.temp_directory in raw made the engine's spill directories
//     part of the input (the next listing of raw failed);
//   - a spark.* value the server refuses named no config line.
func TestEngineSettingsRefused(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	base, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(base), "\n") + 2
	for _, tc := range []struct {
		name   string
		lines  func(wh, dir string) []string
		engine string
		says   string
		absent string // a file the run must not write, relative to dir
		server bool   // the test Spark server answers (engagement.sparkRemote)
	}{
		{"query log", func(_, dir string) []string { return []string{"duckdb.log_query_path " + filepath.Join(dir, "q.log")} },
			"", "duckdb.log_query_path (%s): not settable: it writes the engine's statements", "q.log", false},
		{"profile over the pointer", func(wh, _ string) []string {
			return []string{"duckdb.enable_profiling json", "duckdb.profiling_output " + filepath.Join(wh, "pointer.json")}
		}, "", "duckdb.enable_profiling (%s): not settable", "", false},
		{"an S3 key the secret overrides", func(_, _ string) []string { return []string{"duckdb.s3_secret_access_key MYSECRETVALUE"} },
			"", "duckdb.s3_secret_access_key (%s): not settable: the engine's S3 secret", "", false},
		{"a Spark key refused on DuckDB", func(_, _ string) []string { return []string{"spark.sql.session.timeZone America/New_York"} },
			"", "spark.sql.session.timeZone (%s) = ", "", false},
		// No Spark server is asked: the refusal comes first.
		{"a DuckDB key refused on Spark", func(_, _ string) []string {
			return []string{"duckdb.timezone America/New_York", "engagement.sparkRemote sc://127.0.0.1:1"}
		}, "spark", "duckdb.timezone (%s): not settable: the engine forces UTC", "", false},
		// Refused before the server is asked: speculation is not the
		// config's to turn on (the server's value is checked besides).
		{"speculation on", func(_, _ string) []string {
			return []string{"spark.speculation true", "engagement.sparkRemote sc://127.0.0.1:1"}
		}, "spark", "spark.speculation (%s) = ", "", false},
		{"spill into raw", func(_, _ string) []string { return []string{"duckdb.temp_directory " + fx.Input("raw")} },
			"", "duckdb.temp_directory (%s) " + fx.Input("raw") + " lies in --raw", "", false},
		// Only the server knows its settings' types: its refusal is
		// named by the config's line, still exit 2.
		{"a Spark value the server refuses", func(_, _ string) []string { return []string{"spark.sql.shuffle.partitions two"} },
			"spark", "spark.sql.shuffle.partitions (%s): spark ", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wh := filepath.Join(dir, "wh")
			conf := filepath.Join(dir, "engine.conf")
			lines := tc.lines(wh, dir)
			if tc.server {
				lines = append(lines, "engagement.sparkRemote "+sparktest.Remote(t))
			}
			if err := os.WriteFile(conf, append(append(base, '\n'), strings.Join(lines, "\n")+"\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			args := publishtest.WithFlag(fx.Args(wh, "settings-1", "2026-03-02"), "--config", conf)
			if tc.engine != "" {
				args = append(args, "--engine", tc.engine)
			}
			code, stdout, stderr := h.Run(t, nil, args...)
			want := strings.Replace(tc.says, "%s", conf+":"+strconv.Itoa(line), 1)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s%s", code, want, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(wh, "pointer.json")); !os.IsNotExist(err) {
				t.Errorf("pointer.json: %v, want it never written", err)
			}
			if tc.absent != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.absent)); !os.IsNotExist(err) {
					t.Errorf("%s: %v, want it never written", tc.absent, err)
				}
			}
		})
	}
}

// TestSpillDirRelativeToConfig: a relative duckdb.temp_directory is
// relative to the config file, as every path in it is; it was made in the
// directory the scheduler started the command in.
func TestSpillDirRelativeToConfig(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	base, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir, cwd := t.TempDir(), t.TempDir()
	conf := filepath.Join(dir, "spill.conf")
	if err := os.WriteFile(conf, append(base, "\nduckdb.temp_directory spill-here\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	args := publishtest.WithFlag(fx.Args(filepath.Join(dir, "wh"), "spill-1", "2026-03-02"), "--config", conf)
	code, stdout, stderr := h.RunIn(t, cwd, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "spill-here")); err != nil {
		t.Errorf("no spill directory beside the config: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "spill-here")); !os.IsNotExist(err) {
		t.Errorf("spill directory in the working directory: %v", err)
	}

	// Under a hidden name inside raw, no listing reads it: accepted, and
	// twice (the second run lists raw with the first's spill parent in it).
	hidden := filepath.Join(dir, "hidden.conf")
	if err := os.WriteFile(hidden, append(base, "\nduckdb.temp_directory "+filepath.Join(fx.Input("raw"), ".spill")+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"spill-2", "spill-3"} {
		args := publishtest.WithFlag(fx.Args(filepath.Join(dir, "wh"), id, "2026-03-02"), "--config", hidden)
		if code, stdout, stderr := h.Run(t, nil, args...); code != 0 {
			t.Fatalf("%s with the spill under raw/.spill: exit %d:\n%s%s", id, code, stdout, stderr)
		}
	}
}

// TestLocationErrorsNameTheirSource: a bad location from a variable or the
// config file is named by its key and where it was set; the flag the
// error named before was never typed.
func TestLocationErrorsNameTheirSource(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	conf := filepath.Join(publishtest.Root(), "config", "fixture.conf")
	noWarehouse := []string{"publish", "--config", conf, "--raw", fx.Input("raw"), "--lessons", fx.Input("lessons"),
		"--enrollments", fx.Input("enrollments"), "--job-id", "named-1", "--dates", "2026-03-02"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"variable", []string{"ENGAGEMENT_WAREHOUSE=s3:/bucket/x"}, noWarehouse,
			`engagement.warehouse (ENGAGEMENT_WAREHOUSE): s3:/bucket/x: looks like a URL`},
		{"flag", nil, append(noWarehouse, "--warehouse", "s3:/bucket/x"), `--warehouse: s3:/bucket/x: looks like a URL`},
		{"variable inside raw", []string{"ENGAGEMENT_WAREHOUSE=" + filepath.Join(fx.Input("raw"), "wh")}, noWarehouse,
			"engagement.warehouse (ENGAGEMENT_WAREHOUSE) " + filepath.Join(fx.Input("raw"), "wh") + " lies inside the input --raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := h.Run(t, tc.env, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s%s", code, tc.says, stdout, stderr)
			}
		})
	}
}

// TestSparkWarehouseGlobRefused: a warehouse whose path holds a glob
// character is refused for the Spark engine (exit 2, naming it) before the
// server is asked or anything is written: Spark's partitioned write reads
// its location as a pattern, and the publish failed after the whole stage
// (PATH_NOT_FOUND), exit 1, on every retry. The server here answers no one.
func TestSparkWarehouseGlobRefused(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	for _, name := range []string{"wh[1]", "wh*", "a:b{c}", "relative[2]"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			wh := filepath.Join(dir, name, "wh")
			arg, shown := wh, wh
			if strings.HasPrefix(name, "relative") {
				// Relative, from a working directory whose own name holds
				// one: the server is handed it absolute (review CO).
				if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Chdir(filepath.Join(dir, name))
				arg, shown = "wh", "wh ("+wh+")"
			}
			args := append(fx.Args(arg, "glob-1", "2026-03-02"), "--engine", "spark", "--spark-remote", "sc://127.0.0.1:1")
			code, stdout, stderr := h.Run(t, nil, args...)
			want := "--warehouse: " + shown + " holds a glob character"
			if code != 2 || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s%s", code, want, stdout, stderr)
			}
			if _, err := os.Stat(wh); !os.IsNotExist(err) {
				t.Errorf("%s: %v, want nothing created", wh, err)
			}
		})
	}
}
