package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gen"
)

// Paths of the committed fixture and its config, relative to this package.
var (
	biFixtureDir  = filepath.Join("..", "..", "testdata", "fixture")
	biFixtureConf = filepath.Join("..", "..", "config", "fixture.conf")
)

const (
	biGoodJob   = "good-1"
	biBadJob    = "bad-1"
	biGoodDates = "2026-03-02,2026-03-03"
	// The raw partition corrupted by the file cases; its ingest date lies in
	// the read window of biGoodDates (2026-03-02 .. 2026-03-03 + lateness 1).
	biRawPart = "raw/ingest_date=2026-03-02/part-0.parquet"
)

// biFixture returns the committed fixture's absolute path.
func biFixture(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(biFixtureDir, biRawPart)); err != nil {
		t.Fatalf("committed fixture missing: %v", err)
	}
	abs, err := filepath.Abs(biFixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// biWS is one case's workspace: a private copy of the fixture and a warehouse.
type biWS struct {
	t                              *testing.T
	dir, raw, lessons, enrollments string
	warehouse, conf                string
	src                            string // the pristine committed fixture
}

func biNewWS(t *testing.T) *biWS {
	t.Helper()
	if v := os.Getenv(failpoint.Env); v != "" {
		// cli.Main runs in this process: an armed failpoint would kill the test binary.
		t.Fatalf("%s=%s is set; in-process publishes would be killed", failpoint.Env, v)
	}
	src := biFixture(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatalf("copy fixture: %v", err)
	}
	conf, err := filepath.Abs(biFixtureConf)
	if err != nil {
		t.Fatal(err)
	}
	return &biWS{
		t: t, dir: dir, src: src, conf: conf,
		raw:         filepath.Join(dir, "raw"),
		lessons:     filepath.Join(dir, "lessons"),
		enrollments: filepath.Join(dir, "enrollments"),
		warehouse:   filepath.Join(dir, "warehouse"),
	}
}

// publishArgs are the arguments of a publish against this workspace's copy.
func (w *biWS) publishArgs(jobID, ds string, extra ...string) []string {
	args := []string{"publish", "--config", w.conf, "--job-id", jobID, "--dates", ds,
		"--raw", w.raw, "--lessons", w.lessons, "--enrollments", w.enrollments, "--warehouse", w.warehouse}
	return append(args, extra...)
}

type biResult struct {
	code           int
	stdout, stderr string
}

// errLine is the one "engagement: ..." line Main prints for an error.
func (r biResult) errLine(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "engagement: ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("stderr has %d 'engagement: ' lines, want 1:\n%s", len(lines), r.stderr)
	}
	return lines[0]
}

func biRun(t *testing.T, args ...string) biResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := cli.Main(ctx, args, &out, &errb)
	return biResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func (w *biWS) goodPublish() {
	w.t.Helper()
	r := biRun(w.t, w.publishArgs(biGoodJob, biGoodDates)...)
	if r.code != 0 {
		w.t.Fatalf("good publish: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "published job_id="+biGoodJob) {
		w.t.Fatalf("good publish stdout = %q", r.stdout)
	}
}

func (w *biWS) pointerBytes() []byte {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.warehouse, "pointer.json"))
	if err != nil {
		w.t.Fatalf("read pointer: %v", err)
	}
	return b
}

// biHashTree maps every regular file under the roots to its sha256.
func biHashTree(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				out[p+"/"] = "dir"
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[p] = hex.EncodeToString(sum[:])
			return nil
		})
		if err != nil {
			t.Fatalf("hash %s: %v", root, err)
		}
	}
	return out
}

func (w *biWS) inputHashes() map[string]string {
	return biHashTree(w.t, w.raw, w.lessons, w.enrollments)
}

func biDiffTrees(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s: %s was removed", what, p)
		} else if a != h {
			t.Errorf("%s: %s changed", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was added", what, p)
		}
	}
}

// rewriteParquet replaces the copy's file rel with the biResult of a query over
// the pristine fixture file (bound to the view src).
func (w *biWS) rewriteParquet(rel, query string) {
	w.t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		w.t.Fatal(err)
	}
	defer db.Close()
	srcFile := filepath.Join(w.src, rel)
	dst := filepath.Join(w.dir, rel)
	tmp := dst + ".new"
	if _, err := db.Exec("CREATE VIEW src AS SELECT * FROM read_parquet(" + biSQLQuote(srcFile) + ", hive_partitioning=false)"); err != nil {
		w.t.Fatal(err)
	}
	if _, err := db.Exec("COPY (" + query + ") TO " + biSQLQuote(tmp) + " (FORMAT parquet)"); err != nil {
		w.t.Fatalf("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		w.t.Fatal(err)
	}
}

// biParquetColumnTypes reads the column types from a Parquet file, to prove a
// rewritten fixture file has the shape the case needs.
func biParquetColumnTypes(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name, type FROM parquet_schema(" + biSQLQuote(path) + ")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var typ sql.NullString
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		out[name] = typ.String
	}
	return out
}

func biSQLQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func biWriteFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type biCase struct {
	name string
	// setup runs after the good publish and before the snapshot; it may
	// change the workspace and returns the bad invocation's arguments.
	setup func(w *biWS) []string
	code  int
	// want are substrings of the "engagement: ..." line; a function so they
	// can name workspace paths.
	want func(w *biWS) []string
	// pointerChanges marks the one case that is expected to publish.
	pointerChanges bool
	// stagingKept: the bad job id's staging prefix existed before and must
	// be byte-identical after (instead of absent).
	stagingKept string
	// check runs extra assertions after the bad invocation.
	check func(t *testing.T, w *biWS, before []byte, r biResult)
}

func TestPublishBadInput(t *testing.T) {
	cases := []biCase{
		{
			name: "missing raw path",
			setup: func(w *biWS) []string {
				return w.publishArgs(biBadJob, biGoodDates, "--raw", filepath.Join(w.dir, "no-such-raw"))
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, "no-such-raw")} },
		},
		{
			name: "missing lessons path",
			setup: func(w *biWS) []string {
				return w.publishArgs(biBadJob, biGoodDates, "--lessons", filepath.Join(w.dir, "no-such-lessons"))
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, "no-such-lessons")} },
		},
		{
			name: "raw file replaced by a zero-byte file",
			setup: func(w *biWS) []string {
				biWriteFile(w.t, filepath.Join(w.dir, biRawPart), nil)
				return w.publishArgs(biBadJob, biGoodDates)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, biRawPart)} },
		},
		{
			name: "raw file replaced by garbage bytes",
			setup: func(w *biWS) []string {
				biWriteFile(w.t, filepath.Join(w.dir, biRawPart), bytes.Repeat([]byte("not parquet at all\n"), 200))
				return w.publishArgs(biBadJob, biGoodDates)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, biRawPart)} },
		},
		{
			name: "raw file truncated to its first half",
			setup: func(w *biWS) []string {
				p := filepath.Join(w.dir, biRawPart)
				b, err := os.ReadFile(p)
				if err != nil {
					w.t.Fatal(err)
				}
				biWriteFile(w.t, p, b[:len(b)/2])
				return w.publishArgs(biBadJob, biGoodDates)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, biRawPart)} },
		},
		{
			name: "lessons directory with no parquet files",
			setup: func(w *biWS) []string {
				empty := filepath.Join(w.dir, "lessons-empty")
				if err := os.Mkdir(empty, 0o755); err != nil {
					w.t.Fatal(err)
				}
				biWriteFile(w.t, filepath.Join(empty, "README.txt"), []byte("no parquet here\n"))
				return w.publishArgs(biBadJob, biGoodDates, "--lessons", empty)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, "lessons-empty"), "parquet"} },
		},
		{
			name: "raw file missing event_time",
			setup: func(w *biWS) []string {
				w.rewriteParquet(biRawPart, "SELECT * EXCLUDE (event_time) FROM src")
				if _, ok := biParquetColumnTypes(w.t, filepath.Join(w.dir, biRawPart))["event_time"]; ok {
					w.t.Fatal("rewritten file still has event_time")
				}
				return w.publishArgs(biBadJob, biGoodDates)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, biRawPart), "event_time"} },
		},
		{
			name: "raw file with event_time as VARCHAR",
			setup: func(w *biWS) []string {
				w.rewriteParquet(biRawPart, "SELECT * REPLACE (CAST(event_time AS VARCHAR) AS event_time) FROM src")
				if typ := biParquetColumnTypes(w.t, filepath.Join(w.dir, biRawPart))["event_time"]; typ != "BYTE_ARRAY" {
					w.t.Fatalf("rewritten event_time has physical type %q, want BYTE_ARRAY", typ)
				}
				return w.publishArgs(biBadJob, biGoodDates)
			},
			code: 1,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, biRawPart), "event_time", "VARCHAR"} },
		},
		{
			name:  "--dates empty",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--dates", "empty"} },
		},
		{
			name:  "--dates month 13",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-13-01") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--dates", "2026-13-01"} },
		},
		{
			name:  "--dates duplicate",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-03-02,2026-03-02") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--dates", "2026-03-02", "twice"} },
		},
		{
			name:  "--job-id empty",
			setup: func(w *biWS) []string { return w.publishArgs("", biGoodDates) },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--job-id", "empty"} },
		},
		{
			name:  "--job-id ../x",
			setup: func(w *biWS) []string { return w.publishArgs("../x", biGoodDates) },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--job-id", `"../x"`} },
			check: func(t *testing.T, w *biWS, _ []byte, _ biResult) {
				for _, p := range []string{filepath.Join(w.warehouse, "x"), filepath.Join(w.warehouse, "staging", "x"), filepath.Join(w.dir, "x")} {
					if _, err := os.Stat(p); err == nil {
						t.Errorf("%s was created by a refused job id", p)
					}
				}
			},
		},
		{
			name:  "--job-id a/b",
			setup: func(w *biWS) []string { return w.publishArgs("a/b", biGoodDates) },
			code:  2,
			want:  func(w *biWS) []string { return []string{"--job-id", `"a/b"`} },
			check: func(t *testing.T, w *biWS, _ []byte, _ biResult) {
				if _, err := os.Stat(filepath.Join(w.warehouse, "staging", "job_id=a")); err == nil {
					t.Errorf("staging/job_id=a was created by a refused job id")
				}
			},
		},
		{
			name: "config file with an unknown key",
			setup: func(w *biWS) []string {
				base, err := os.ReadFile(w.conf)
				if err != nil {
					w.t.Fatal(err)
				}
				if !bytes.HasSuffix(base, []byte("\n")) {
					base = append(base, '\n')
				}
				conf := append(base, []byte("engagement.unknownCapp 0.05\n")...)
				p := filepath.Join(w.dir, "bad.conf")
				biWriteFile(w.t, p, conf)
				args := w.publishArgs(biBadJob, biGoodDates)
				args[2] = p // --config
				return args
			},
			code: 2,
			want: func(w *biWS) []string {
				base, _ := os.ReadFile(w.conf)
				line := bytes.Count(base, []byte("\n")) + 1
				if !bytes.HasSuffix(base, []byte("\n")) {
					line++
				}
				return []string{filepath.Join(w.dir, "bad.conf") + ":" + strconv.Itoa(line),
					`"engagement.unknownCapp"`, `did you mean "engagement.unknownCap"`}
			},
		},
		{
			name: "config file that does not exist",
			setup: func(w *biWS) []string {
				args := w.publishArgs(biBadJob, biGoodDates)
				args[2] = filepath.Join(w.dir, "no-such.conf") // --config
				return args
			},
			code: 2,
			want: func(w *biWS) []string { return []string{filepath.Join(w.dir, "no-such.conf")} },
		},
		{
			name:  "unknown --manifest-id pin",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "--manifest-id", "dim-1999-01-01") },
			code:  2,
			want: func(w *biWS) []string {
				exp := biReadExpected(w.t, w.src)
				return []string{"--manifest-id", "dim-1999-01-01", "present", exp.ManifestID, exp.PreviousManifestID}
			},
		},
		{
			name: "unknown --enrollment-snapshot-id pin",
			setup: func(w *biWS) []string {
				return w.publishArgs(biBadJob, biGoodDates, "--enrollment-snapshot-id", "enr-nope")
			},
			code: 2,
			want: func(w *biWS) []string {
				exp := biReadExpected(w.t, w.src)
				return []string{"--enrollment-snapshot-id", "enr-nope", "present", exp.EnrollmentSnapshotID, exp.PreviousEnrollmentSnapshotID}
			},
		},
		{
			// Newest ingest_date 2026-03-03, horizon 2: 2026-03-02..2026-03-03.
			name:  "date outside the restatement horizon",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-03-01") },
			code:  2,
			want: func(w *biWS) []string {
				return []string{"2026-03-01", "horizon", "2026-03-02", "--allow-outside-horizon"}
			},
		},
		{
			name:  "date outside the horizon mixed with one inside",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-03-01,2026-03-03") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"2026-03-01", "horizon"} },
		},
		{
			name:           "date outside the horizon with --allow-outside-horizon",
			setup:          func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-03-01", "--allow-outside-horizon") },
			code:           0,
			pointerChanges: true,
			check: func(t *testing.T, w *biWS, before []byte, r biResult) {
				var old, cur map[string]any
				if err := json.Unmarshal(before, &old); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(w.pointerBytes(), &cur); err != nil {
					t.Fatal(err)
				}
				oldDates, _ := old["dates"].(map[string]any)
				curDates, _ := cur["dates"].(map[string]any)
				for _, d := range []string{"2026-03-02", "2026-03-03"} {
					if !reflect.DeepEqual(oldDates[d], curDates[d]) {
						t.Errorf("publishing 2026-03-01 changed the entry of %s:\nbefore %v\nafter  %v", d, oldDates[d], curDates[d])
					}
				}
				e, _ := curDates["2026-03-01"].(map[string]any)
				if e == nil || e["job_id"] != biBadJob {
					t.Fatalf("pointer entry for 2026-03-01 = %v, want job %s", e, biBadJob)
				}
				exp := biReadExpected(t, w.src)
				if got, want := e["event_count"], float64(exp.ByDate[dates.MustParse("2026-03-01")].Events); got != want {
					t.Errorf("2026-03-01 event_count = %v, want %v from expected.json", got, want)
				}
				if cur["generation"] != old["generation"].(float64)+1 {
					t.Errorf("generation %v after %v", cur["generation"], old["generation"])
				}
				if !strings.Contains(r.stderr, "outside the restatement horizon") {
					t.Errorf("the override was not logged:\n%s", r.stderr)
				}
			},
		},
		{
			// Newest ingest_date is 2026-03-03: a later date is outside too.
			name:  "date after the newest ingest date",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, "2026-03-04") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"2026-03-04", "horizon"} },
		},
		{
			name:  "--unknown-cap out of range",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "--unknown-cap", "1.5") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"engagement.unknownCap", "flag", "1.5"} },
		},
		{
			name:  "--raw given as empty",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "--raw", "") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"engagement.raw"} },
		},
		{
			name:  "unknown flag",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "--no-such-flag", "x") },
			code:  2,
			want:  func(w *biWS) []string { return []string{"no-such-flag"} },
		},
		{
			name:  "stray positional argument",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "extra") },
			code:  2,
			want:  func(w *biWS) []string { return []string{`"extra"`} },
		},
		{
			// As of 2026-03-10 the newest ingest_date (2026-03-03) is 7 days
			// old, past the fixture's 2-day bound: fail before staging.
			name:  "stale raw",
			setup: func(w *biWS) []string { return w.publishArgs(biBadJob, biGoodDates, "--as-of", "2026-03-10") },
			code:  1,
			want:  func(w *biWS) []string { return []string{w.raw, "2026-03-03", "engagement.freshnessMaxDays"} },
		},
		{
			// good-2 replaces good-1 in the pointer; good-1 is then named
			// only by a retained history generation and is still refused.
			name: "rerun of a job id named only by pointer history",
			setup: func(w *biWS) []string {
				if r := biRun(w.t, w.publishArgs("good-2", biGoodDates)...); r.code != 0 {
					w.t.Fatalf("good-2: exit %d\n%s", r.code, r.stderr)
				}
				if b := w.pointerBytes(); bytes.Contains(b, []byte(`"job_id": "good-1"`)) {
					w.t.Fatalf("pointer still names good-1 after good-2:\n%s", b)
				}
				return w.publishArgs(biGoodJob, biGoodDates)
			},
			code:        4,
			stagingKept: biGoodJob,
			want:        func(w *biWS) []string { return []string{biGoodJob, "already published"} },
		},
		{
			name:        "rerun of the published job id",
			setup:       func(w *biWS) []string { return w.publishArgs(biGoodJob, biGoodDates) },
			code:        4,
			stagingKept: biGoodJob,
			want:        func(w *biWS) []string { return []string{biGoodJob, "already published"} },
		},
		{
			name:        "rerun of the published job id for another date",
			setup:       func(w *biWS) []string { return w.publishArgs(biGoodJob, "2026-03-03") },
			code:        4,
			stagingKept: biGoodJob,
			want:        func(w *biWS) []string { return []string{biGoodJob} },
		},
		{
			name: "job id whose staging prefix exists from an earlier failed attempt",
			setup: func(w *biWS) []string {
				// A real failed attempt: the gate rejects at a 0.1% cap (the
				// fixture runs at ~1%), leaving staging/job_id=failed-1.
				r := biRun(w.t, w.publishArgs("failed-1", biGoodDates, "--unknown-cap", "0.001")...)
				if r.code != 3 {
					w.t.Fatalf("earlier attempt: exit %d, want 3 (gate)\n%s", r.code, r.stderr)
				}
				if _, err := os.Stat(filepath.Join(w.warehouse, "staging", "job_id=failed-1")); err != nil {
					w.t.Fatalf("earlier failed attempt left no staging prefix: %v", err)
				}
				if _, err := os.Stat(filepath.Join(w.warehouse, "rejections", "job_id=failed-1.json")); err != nil {
					w.t.Errorf("earlier failed attempt left no rejection record: %v", err)
				}
				return w.publishArgs("failed-1", biGoodDates)
			},
			code:        2,
			stagingKept: "failed-1",
			want:        func(w *biWS) []string { return []string{"failed-1", "staging"} },
		},
		{
			name: "job id whose staging prefix was left by a crash (attempt record only)",
			setup: func(w *biWS) []string {
				dir := filepath.Join(w.warehouse, "staging", "job_id=crashed-1")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					w.t.Fatal(err)
				}
				biWriteFile(w.t, filepath.Join(dir, "_attempt.json"), []byte(`{"job_id":"crashed-1"}`+"\n"))
				return w.publishArgs("crashed-1", biGoodDates)
			},
			code:        2,
			stagingKept: "crashed-1",
			want:        func(w *biWS) []string { return []string{"crashed-1"} },
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := biNewWS(t)
			w.goodPublish()
			args := tc.setup(w)

			pointerBefore := w.pointerBytes()
			inputsBefore := w.inputHashes()
			whFiles := biHashTree(t, w.warehouse)
			var stagingBefore map[string]string
			stagingRoot := filepath.Join(w.warehouse, "staging")
			if tc.stagingKept != "" {
				stagingBefore = biHashTree(t, filepath.Join(stagingRoot, "job_id="+tc.stagingKept))
			}
			goodStaging := biHashTree(t, filepath.Join(stagingRoot, "job_id="+biGoodJob))

			r := biRun(t, args...)

			if r.code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.code != 0 {
				line := r.errLine(t)
				t.Logf("exit %d: %s", r.code, line)
				for _, s := range tc.want(w) {
					if !strings.Contains(line, s) {
						t.Errorf("stderr line %q does not name %q", line, s)
					}
				}
				if strings.Contains(r.stdout, "published") {
					t.Errorf("stdout of a failed publish says published: %q", r.stdout)
				}
			}
			if !tc.pointerChanges {
				if after := w.pointerBytes(); !bytes.Equal(after, pointerBefore) {
					t.Errorf("pointer.json changed:\nbefore %s\nafter  %s", pointerBefore, after)
				}
				// Nothing new under the warehouse either: no history
				// generation, no staging for a refused id.
				biDiffTrees(t, "warehouse", whFiles, biHashTree(t, w.warehouse))
			}
			biDiffTrees(t, "inputs", inputsBefore, w.inputHashes())
			biDiffTrees(t, "staging/job_id="+biGoodJob, goodStaging, biHashTree(t, filepath.Join(stagingRoot, "job_id="+biGoodJob)))
			if tc.stagingKept != "" {
				biDiffTrees(t, "staging/job_id="+tc.stagingKept, stagingBefore, biHashTree(t, filepath.Join(stagingRoot, "job_id="+tc.stagingKept)))
			}
			if tc.check != nil {
				tc.check(t, w, pointerBefore, r)
			}
		})
	}
}

func biReadExpected(t *testing.T, fixture string) gen.Expected {
	t.Helper()
	exp, err := gen.ReadExpected(filepath.Join(fixture, gen.ExpectedFile))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func TestCLIReadAndStatusAfterPublish(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	exp := biReadExpected(t, w.src)

	t.Run("read course_day csv", func(t *testing.T) {
		r := biRun(t, "read", engine.CourseDayTable, "--warehouse", w.warehouse, "--format", "csv")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
		if err != nil {
			t.Fatalf("csv: %v\n%s", err, r.stdout)
		}
		want := []string{"course_id", "event_count", "matched_lesson_count", "unknown_lesson_count",
			"enrolled_event_count", "learner_count", "job_id", "event_date"}
		if len(recs) == 0 || !reflect.DeepEqual(recs[0], want) {
			t.Fatalf("header = %v, want %v", recs[0], want)
		}
		col := map[string]int{}
		for i, c := range recs[0] {
			col[c] = i
		}
		sums := map[string]int64{}
		unknown := map[string]int64{}
		for _, rec := range recs[1:] {
			n, err := strconv.ParseInt(rec[col["event_count"]], 10, 64)
			if err != nil {
				t.Fatalf("event_count %q: %v", rec[col["event_count"]], err)
			}
			u, err := strconv.ParseInt(rec[col["unknown_lesson_count"]], 10, 64)
			if err != nil {
				t.Fatalf("unknown_lesson_count %q: %v", rec[col["unknown_lesson_count"]], err)
			}
			sums[rec[col["event_date"]]] += n
			unknown[rec[col["event_date"]]] += u
			if rec[col["job_id"]] != biGoodJob {
				t.Errorf("row %v has job_id %q, want %s", rec, rec[col["job_id"]], biGoodJob)
			}
		}
		for _, d := range []string{"2026-03-02", "2026-03-03"} {
			want := exp.ByDate[dates.MustParse(d)]
			if want.Events == 0 {
				t.Fatalf("expected.json has no events for %s", d)
			}
			if sums[d] != want.Events {
				t.Errorf("%s: course_day event_count sum %d, want %d from expected.json", d, sums[d], want.Events)
			}
			if unknown[d] != want.Unknown {
				t.Errorf("%s: course_day unknown_lesson_count sum %d, want %d", d, unknown[d], want.Unknown)
			}
		}
		if len(sums) != 2 {
			t.Errorf("course_day has dates %v, want exactly the two published", sums)
		}
	})

	t.Run("read course_day one date", func(t *testing.T) {
		r := biRun(t, "read", engine.CourseDayTable, "--warehouse", w.warehouse, "--date", "2026-03-03", "--format", "csv")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
		if err != nil || len(recs) < 2 {
			t.Fatalf("csv: %v %v", recs, err)
		}
		for _, rec := range recs[1:] {
			if rec[len(rec)-1] != "2026-03-03" {
				t.Errorf("--date 2026-03-03 returned a row of %s", rec[len(rec)-1])
			}
		}
	})

	t.Run("read unknown table", func(t *testing.T) {
		r := biRun(t, "read", "nope", "--warehouse", w.warehouse)
		if r.code != 2 {
			t.Errorf("exit %d, want 2\n%s", r.code, r.stderr)
		}
		if line := r.errLine(t); !strings.Contains(line, "nope") {
			t.Errorf("stderr line %q does not name the table", line)
		}
	})

	t.Run("read bad format", func(t *testing.T) {
		r := biRun(t, "read", engine.CourseDayTable, "--warehouse", w.warehouse, "--format", "xml")
		if r.code != 2 {
			t.Errorf("exit %d, want 2", r.code)
		}
	})

	t.Run("status json", func(t *testing.T) {
		r := biRun(t, "status", "--warehouse", w.warehouse, "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var st struct {
			Generation     int64  `json:"generation"`
			UpdatedByJobID string `json:"updated_by_job_id"`
			Dates          []struct {
				Date       string `json:"date"`
				JobID      string `json:"job_id"`
				EventCount int64  `json:"event_count"`
			} `json:"dates"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status json: %v\n%s", err, r.stdout)
		}
		if st.Generation != 1 || st.UpdatedByJobID != biGoodJob {
			t.Errorf("generation %d by %q, want 1 by %s", st.Generation, st.UpdatedByJobID, biGoodJob)
		}
		if len(st.Dates) != 2 {
			t.Fatalf("status lists %d dates, want 2: %+v", len(st.Dates), st.Dates)
		}
		for i, d := range []string{"2026-03-02", "2026-03-03"} {
			if st.Dates[i].Date != d || st.Dates[i].JobID != biGoodJob {
				t.Errorf("status date %d = %+v, want %s by %s", i, st.Dates[i], d, biGoodJob)
			}
			if want := exp.ByDate[dates.MustParse(d)].Events; st.Dates[i].EventCount != want {
				t.Errorf("status %s event_count %d, want %d", d, st.Dates[i].EventCount, want)
			}
		}
	})

	t.Run("status without warehouse", func(t *testing.T) {
		if r := biRun(t, "status"); r.code != 2 {
			t.Errorf("exit %d, want 2", r.code)
		}
	})
}
