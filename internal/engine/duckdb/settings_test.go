package duckdb_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
)

// TestOpenRefusesSettings: a duckdb.* key the engine would override or that
// changes what is published is refused naming the key, in DuckDB's own
// spelling too; a mistyped name says what it is.
func TestOpenRefusesSettings(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{"timezone", "America/New_York", "duckdb.timezone: not settable: the engine forces UTC"},
		{"TimeZone", "America/New_York", "duckdb.TimeZone: not settable: the engine forces UTC"},
		{"default_collation", "nocase", "duckdb.default_collation: not settable"},
		// ICU's date casts follow it: every date was published as 0 events.
		{"calendar", "japanese", "duckdb.calendar: not settable: an event's date is the Gregorian UTC date"},
		// A binary learner_key published as if a string (Spark refuses it).
		{"binary_as_string", "true", "duckdb.binary_as_string: not settable: an unannotated binary key column"},
		// The longest title's tie went to the larger lesson_id.
		{"default_order", "desc", "duckdb.default_order: not settable"},
		{"default_null_order", "nulls_first", "duckdb.default_null_order: not settable"},
		{"null_order", "nulls_first", "duckdb.null_order: not settable"}, // its other name
		{"errors_as_json", "true", "duckdb.errors_as_json: not settable"},
		// Each wrote the CREATE SECRET statement, with the secret key, to a
		// file or to stdout (exit 0).
		{"log_query_path", "/tmp/q.log", "duckdb.log_query_path: not settable: it writes the engine's statements"},
		{"enable_logging", "true", "duckdb.enable_logging: not settable: it writes the engine's statements"},
		{"logging_storage", "stdout", "duckdb.logging_storage: not settable"},
		// A profile written over pointer.json; progress bars on stdout.
		{"profiling_output", "/tmp/wh/pointer.json", "duckdb.profiling_output: not settable"},
		{"enable_profiling", "json", "duckdb.enable_profiling: not settable"},
		{"enable_progress_bar", "true", "duckdb.enable_progress_bar: not settable"},
		{"enable_logging", "on", "duckdb.enable_logging: not settable"},
		// Dropped in silence for the engine's secret, and recorded in
		// _attempt.json.
		{"s3_secret_access_key", "MYSECRET", "duckdb.s3_secret_access_key: not settable: the engine's S3 secret, made from the AWS chain"},
		{"s3_endpoint", "127.0.0.1:1", "duckdb.s3_endpoint: not settable"},
		{"Threads", "2", "duckdb.Threads: not a DuckDB setting name: write it in lower case (duckdb.threads)"},
		{"memory-limit", "1GB", "duckdb.memory-limit: not a DuckDB setting name"},
		// Loaded httpfs from ~/.duckdb or the internet, past
		// --duckdb-extensions.
		{"autoload_known_extensions", "true", "duckdb.autoload_known_extensions: not settable"},
		{"autoinstall_known_extensions", "true", "duckdb.autoinstall_known_extensions: not settable"},
		// Other names of the settings the engine reads: the later of two
		// lines lost, and the memory error said no limit was set.
		{"max_memory", "2GB", "duckdb.max_memory: not settable: it is memory_limit's other name"},
		{"worker_threads", "2", "duckdb.worker_threads: not settable: it is threads' other name"},
		// A saved secret scoped to raw sent the reads to its server.
		{"allow_persistent_secrets", "true", "duckdb.allow_persistent_secrets: not settable: the engine's S3 secret must be the only one"},
		{"secret_directory", "/tmp/secrets", "duckdb.secret_directory: not settable"},
		{"home_directory", "/tmp/home", "duckdb.home_directory: not settable"},
		// explain printed the unoptimized plan under its header.
		{"explain_output", "all", "duckdb.explain_output: not settable"},
		// The first zoneless raw file failed every run, blamed on raw.
		{"disable_timestamptz_casts", "true", "duckdb.disable_timestamptz_casts: not settable"},
		{"disabled_filesystems", "LocalFileSystem", "duckdb.disabled_filesystems: not settable"},
		{"search_path", "temp", "duckdb.search_path: not settable"},
		{"schema", "information_schema", "duckdb.schema: not settable"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			e, err := duckdb.Open(context.Background(), map[string]string{tc.key: tc.value})
			if err == nil {
				e.Close()
				t.Fatalf("Open accepted duckdb.%s = %s", tc.key, tc.value)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestOneSettingTwoNames: two names of one DuckDB setting are refused
// together (the later line would not win), each alone is accepted.
func TestOneSettingTwoNames(t *testing.T) {
	both := map[string]string{"checkpoint_threshold": "16MB", "wal_autocheckpoint": "32MB"}
	if err := duckdb.CheckSettings(both); err == nil || !strings.Contains(err.Error(), "duckdb.wal_autocheckpoint: one DuckDB setting with duckdb.checkpoint_threshold") {
		t.Errorf("both names: %v", err)
	}
	for k, v := range both {
		e, err := duckdb.Open(context.Background(), map[string]string{k: v})
		if err != nil {
			t.Errorf("%s alone: %v", k, err)
			continue
		}
		e.Close()
	}
}

// TestMemoryErrorNamesKeys: DuckDB's out-of-memory error loses its advice in
// SET statements and names the config keys instead, saying when one is not
// set; the DuckDB error stays reachable.
func TestMemoryErrorNamesKeys(t *testing.T) {
	duck := errors.New("build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)")
	tests := []struct {
		limit, threads, want string
	}{
		{"8MB", "2", "build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used): DuckDB reached its memory limit (duckdb.memory_limit 8MB; duckdb.threads 2): raise duckdb.memory_limit or lower duckdb.threads in the config"},
		{"", "", "build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used): DuckDB reached its memory limit (duckdb.memory_limit not set, DuckDB's default of 80% of the RAM; duckdb.threads not set, one a core): raise duckdb.memory_limit or lower duckdb.threads in the config"},
	}
	for _, tc := range tests {
		err := error(&duckdb.MemoryError{Limit: tc.limit, Threads: tc.threads, Err: duck})
		if err.Error() != tc.want {
			t.Errorf("limit %q threads %q:\n got %q\nwant %q", tc.limit, tc.threads, err, tc.want)
		}
		if !errors.Is(err, duck) {
			t.Errorf("limit %q: the DuckDB error is not wrapped", tc.limit)
		}
	}
}

// TestSpillDirPerEngine: engines given one temp_directory (two publishes
// on a machine, one config) each spill into their own directory under it,
// which Close removes. DuckDB names spill files by size class, not by
// process, and removes them all when it closes: in one shared directory a
// publish read another's blocks and published wrong figures with exit 0.
func TestSpillDirPerEngine(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "spill") // created when missing
	const rows = 1_500_000
	var engines [2]*duckdb.Engine
	var dirs [2]string
	for i := range engines {
		e, err := duckdb.Open(t.Context(), map[string]string{"temp_directory": parent, "memory_limit": "40MB", "threads": "1"})
		if err != nil {
			t.Fatal(err)
		}
		engines[i] = e
		if err := e.DB().QueryRowContext(t.Context(), "SELECT current_setting('temp_directory')").Scan(&dirs[i]); err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(dirs[i]) != parent {
			t.Fatalf("engine %d spills to %s, want a directory of its own in %s", i, dirs[i], parent)
		}
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("both engines spill to %s", dirs[0])
	}
	// Both at once, each with more than its memory limit in a temp table.
	var wg sync.WaitGroup
	errs := make([]error, len(engines))
	for i, e := range engines {
		wg.Go(func() {
			_, errs[i] = e.DB().ExecContext(t.Context(), fmt.Sprintf(
				"CREATE TEMP TABLE t AS SELECT x + %d AS x, repeat('p', 60) AS pad FROM range(%d) r(x) ORDER BY hash(x)", i, rows))
		})
	}
	wg.Wait()
	for i, e := range engines {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if files, _ := filepath.Glob(filepath.Join(dirs[i], "duckdb_temp_*")); len(files) == 0 {
			t.Errorf("engine %d wrote nothing to %s: the test no longer spills", i, dirs[i])
		}
		var n, sum int64
		if err := e.DB().QueryRowContext(t.Context(), "SELECT count(*), sum(x) FROM t").Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		if want := int64(rows)*(rows-1)/2 + int64(i*rows); n != rows || sum != want {
			t.Errorf("engine %d read back %d rows summing %d, want %d summing %d", i, n, sum, rows, want)
		}
	}
	if err := engines[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("closed engine's %s: %v, want it removed", dirs[0], err)
	}
	var n int64
	if err := engines[1].DB().QueryRowContext(t.Context(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != rows {
		t.Errorf("the other engine after the first closed: %d rows (%v), want %d", n, err, rows)
	}
	if err := engines[1].Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSpillDirSwept: a run killed while spilling leaves its directory;
// the next engine removes those whose lock no process holds (the kernel
// lets go of a dead process's, whatever its pid namespace), and leaves a
// live engine's, a new one's, one without the lock file and other names.
// A parent that cannot be made fails no engine that never spills.
func TestSpillDirSwept(t *testing.T) {
	parent := t.TempDir()
	old := time.Now().Add(-time.Hour)
	dirs := map[string]bool{"run-dead": true, "run-live": false, "run-new": false, "run-nolock": false, "notes": false}
	var held *os.File
	for name := range dirs {
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "duckdb_temp_storage_DEFAULT-0.tmp"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if name != "run-nolock" {
			if err := os.WriteFile(filepath.Join(dir, "engagement.lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if name == "run-live" {
			f, err := os.Open(filepath.Join(dir, "engagement.lock"))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			held = f
		}
		if name != "run-new" {
			if err := os.Chtimes(dir, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer held.Close()
	e, err := duckdb.Open(t.Context(), map[string]string{"temp_directory": parent})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	for name, swept := range dirs {
		if _, err := os.Stat(filepath.Join(parent, name)); swept != errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: stat %v, want swept %v", name, err, swept)
		}
	}

	// Under a file: no directory can be made there.
	e, err = duckdb.Open(t.Context(), map[string]string{"temp_directory": "/dev/null/spill"})
	if err != nil {
		t.Fatalf("open with an unmakeable temp_directory, nothing spilled: %v", err)
	}
	defer e.Close()
	var n int
	if err := e.DB().QueryRowContext(t.Context(), "SELECT count(*) FROM range(1000)").Scan(&n); err != nil || n != 1000 {
		t.Errorf("a query that does not spill: %d, %v", n, err)
	}
}

// TestOpenAcceptsOffSwitches: a refused output switch pinned off writes
// nothing, and a config that says so works (it was exit 2 at any value).
func TestOpenAcceptsOffSwitches(t *testing.T) {
	for _, s := range []map[string]string{
		{"enable_progress_bar": "false"}, {"enable_logging": "0"}, {"allow_unredacted_secrets": "FALSE"}, {"s3_kms_key_id": "my-key"},
		// A hardened config's own, the engine's value too.
		{"autoinstall_known_extensions": "false", "autoload_known_extensions": "false", "allow_persistent_secrets": "false", "disable_timestamptz_casts": "false"},
	} {
		e, err := duckdb.Open(context.Background(), s)
		if err != nil {
			t.Errorf("Open(%v): %v, want it accepted", s, err)
			continue
		}
		e.Close()
	}
}

// TestSpillDiskFullNamesTheDisk: DuckDB's own error when memory is full and
// so is the disk it spills to (here its cap on the spill directory) was
// reported as a memory limit to raise, with DuckDB's PRAGMA advice; it now
// names the spill directory and the disk.
func TestSpillDiskFullNamesTheDisk(t *testing.T) {
	dir := t.TempDir()
	e, err := duckdb.Open(t.Context(), map[string]string{"memory_limit": "30MB", "threads": "1", "max_temp_directory_size": "1MB", "temp_directory": dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, duck := e.DB().ExecContext(t.Context(), "CREATE TABLE big AS SELECT i, repeat('x', 200) || i AS s FROM range(2000000) t(i) ORDER BY s DESC")
	if duck == nil || !strings.Contains(duck.Error(), "max_temp_directory_size") {
		t.Fatalf("DuckDB said %v; want its full-spill error", duck)
	}
	msg := (&duckdb.MemoryError{Limit: "30MB", Threads: "1", Spill: dir, Err: duck}).Error()
	if !strings.Contains(msg, "could not spill past its memory limit (duckdb.memory_limit 30MB) into "+dir) || strings.Contains(msg, "PRAGMA") {
		t.Errorf("message %q, want it to name the spill directory and no PRAGMA", msg)
	}
}

// TestEngineDefaults: a setting the engine chooses (DuckDB keeping each S3
// object's metadata for the run) is on the engine's connection unless the
// config names the key, and then the config's value is.
func TestEngineDefaults(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		want     bool
	}{
		{nil, true},
		{map[string]string{"enable_http_metadata_cache": "false"}, false},
	} {
		e, err := duckdb.Open(context.Background(), tc.settings)
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		err = e.DB().QueryRowContext(context.Background(), "SELECT current_setting('enable_http_metadata_cache')").Scan(&got)
		e.Close()
		if err != nil || got != tc.want {
			t.Errorf("config %v: enable_http_metadata_cache %v (%v), want %v", tc.settings, got, err, tc.want)
		}
	}
}
