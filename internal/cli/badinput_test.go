package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
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
	"github.com/techlearningpro/engagement/internal/job/publishtest"
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
	// s3 is the S3 root the inputs are uploaded to and the warehouse
	// lives under (toS3); empty for a workspace on local disk.
	s3 string
}

// toS3 moves the workspace's inputs and warehouse to the S3 root: the
// pristine inputs are uploaded now, a setup's breakage by upload.
func (w *biWS) toS3(root string) {
	w.t.Helper()
	w.s3 = root
	w.raw, w.lessons, w.enrollments, w.warehouse = root+"/raw", root+"/lessons", root+"/enrollments", root+"/warehouse"
	w.upload()
}

// root is what {dir} names: the local workspace, or its S3 root.
func (w *biWS) root() string {
	if w.s3 != "" {
		return w.s3
	}
	return w.dir
}

// upload makes the S3 root hold exactly the local workspace's files (the
// local warehouse directory is left out: on S3 the warehouse is remote, and
// only a file a setup put inside it, say an input, is uploaded). Nothing
// happens on local disk.
func (w *biWS) upload() {
	w.t.Helper()
	if w.s3 == "" {
		return
	}
	b := publishtest.Bucket(w.t, w.s3)
	local := map[string]bool{}
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(w.dir, p)
		local[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, in := range []string{"raw/", "lessons/", "enrollments/"} {
		objs, err := b.List(context.Background(), in)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, o := range objs {
			if !local[o.Key] {
				if err := b.Delete(context.Background(), o.Key); err != nil {
					w.t.Fatal(err)
				}
			}
		}
	}
	for key := range local {
		publishtest.Put(w.t, w.s3, key, w.read(filepath.Join(w.dir, filepath.FromSlash(key))))
	}
}

// join names elems under base, a path or an s3:// URL.
func (w *biWS) join(base string, elems ...string) string {
	if strings.HasPrefix(base, "s3://") {
		return strings.Join(append([]string{base}, elems...), "/")
	}
	return filepath.Join(append([]string{base}, elems...)...)
}

// get reads the object at the s3:// URL p, nil when absent.
func (w *biWS) get(p string) []byte {
	w.t.Helper()
	dir, key := path.Split(p)
	return publishtest.Get(w.t, strings.TrimSuffix(dir, "/"), key)
}

func (w *biWS) exists(p string) bool {
	if strings.HasPrefix(p, "s3://") {
		return w.get(p) != nil || len(w.hashTree(p)) > 0
	}
	return fileExists(p)
}

// hashTree is biHashTree, for an s3:// root too (keyed by URL).
func (w *biWS) hashTree(roots ...string) map[string]string {
	w.t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		if !strings.HasPrefix(root, "s3://") {
			maps.Copy(out, biHashTree(w.t, root))
			continue
		}
		b := publishtest.Bucket(w.t, root)
		objs, err := b.List(context.Background(), "")
		if err != nil {
			w.t.Fatal(err)
		}
		for _, o := range objs {
			data, _, err := b.Get(context.Background(), o.Key)
			if err != nil {
				w.t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			out[root+"/"+o.Key] = hex.EncodeToString(sum[:])
		}
	}
	return out
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
// A flag of extra replaces the base one (the command refuses a flag given
// twice).
func (w *biWS) publishArgs(jobID, ds string, extra ...string) []string {
	given := map[string]bool{}
	for _, a := range extra {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			given[name] = true
		}
	}
	args := []string{"publish"}
	for _, f := range [][2]string{{"--config", w.conf}, {"--job-id", jobID}, {"--dates", ds},
		{"--raw", w.raw}, {"--lessons", w.lessons}, {"--enrollments", w.enrollments}, {"--warehouse", w.warehouse}} {
		if !given[f[0]] {
			args = append(args, f[0], f[1])
		}
	}
	return append(args, extra...)
}

type biResult struct {
	code           int
	stdout, stderr string
}

// errLine is the one error line Main prints, as text mode prints it
// ("engagement: ..."): in json mode (the default off a terminal) it is the
// record carrying the exit code, which must be the code Main returned.
func (r biResult) errLine(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "engagement: ") {
			lines = append(lines, l)
		}
		var rec struct {
			Level, Msg string
			Code       *int `json:"exit_code"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Code != nil {
			if rec.Level != "ERROR" || *rec.Code != r.code {
				t.Errorf("error record %s: want level ERROR and exit_code %d", l, r.code)
			}
			lines = append(lines, "engagement: "+rec.Msg)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("stderr has %d error lines, want 1:\n%s", len(lines), r.stderr)
	}
	return lines[0]
}

func biRun(t *testing.T, args ...string) biResult {
	t.Helper()
	// A bound against a hang, not a speed test: a Spark publish on the
	// cluster, beside the other parallel cases on 2 shared cores, can take
	// minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
	return w.read(w.join(w.warehouse, "pointer.json"))
}

// biHashTree maps every regular file under the roots to its sha256.
func biHashTree(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		// A root may be a symlink (a symlinked warehouse); walk what it names.
		if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if root, err = filepath.EvalSymlinks(root); err != nil {
				t.Fatal(err)
			}
		}
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
	return w.hashTree(w.raw, w.lessons, w.enrollments)
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

// rewriteParquet writes the copy's file rel from a query over the pristine
// fixture file from (bound to the view src).
func (w *biWS) rewriteParquet(rel, from, query string) {
	w.t.Helper()
	db := w.srcDB(from)
	defer db.Close()
	dst := filepath.Join(w.dir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		w.t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(dst), ".rewrite.new")
	if _, err := db.Exec("COPY (" + query + ") TO " + biSQLQuote(tmp) + " (FORMAT parquet)"); err != nil {
		w.t.Fatalf("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		w.t.Fatal(err)
	}
}

// splitParquet replaces the workspace file rel by n files of the pristine
// file's rows, split by a hash of event_id (so every row lands in exactly
// one, and some files may hold none), named after rel's stem.
func (w *biWS) splitParquet(rel string, n int) {
	w.t.Helper()
	db := w.srcDB(rel)
	defer db.Close()
	dst := filepath.Join(w.dir, rel)
	stem := strings.TrimSuffix(dst, ".parquet")
	for i := range n {
		q := fmt.Sprintf("COPY (SELECT * FROM src WHERE hash(event_id) %% %d = %d) TO %s (FORMAT parquet)", n, i, biSQLQuote(fmt.Sprintf("%s-%04d.parquet", stem, i)))
		if _, err := db.Exec(q); err != nil {
			w.t.Fatalf("split %s: %v", rel, err)
		}
	}
	if err := os.Remove(dst); err != nil {
		w.t.Fatal(err)
	}
}

// srcDB is a DuckDB connection with the pristine fixture file from bound
// to the view src.
func (w *biWS) srcDB(from string) *sql.DB {
	w.t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := db.Exec("CREATE VIEW src AS SELECT * FROM read_parquet(" + biSQLQuote(filepath.Join(w.src, from)) + ", hive_partitioning=false)"); err != nil {
		db.Close()
		w.t.Fatal(err)
	}
	return db
}

func biSQLQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func biWriteFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
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

	// One date, whole: its rows and sums are expected.json's (a reader
	// that returned part of the date passed when only the dates were
	// checked).
	for _, tc := range []struct {
		table string
		rows  func(dates.Date) int64
	}{
		{engine.CourseDayTable, func(d dates.Date) int64 { return int64(len(exp.ByDateCourse[d])) }},
		{engine.FactTable, func(d dates.Date) int64 { return exp.ByDate[d].FactRows }},
	} {
		t.Run("read "+tc.table+" one date", func(t *testing.T) {
			const day = "2026-03-03"
			r := biRun(t, "read", tc.table, "--warehouse", w.warehouse, "--date", day, "--format", "csv")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			recs, col := csvRows(t, r.stdout)
			var events int64
			for _, rec := range recs[1:] {
				if rec[col["event_date"]] != day {
					t.Errorf("--date %s returned a row of %s", day, rec[col["event_date"]])
				}
				n, err := strconv.ParseInt(rec[col["event_count"]], 10, 64)
				if err != nil {
					t.Fatalf("event_count %q: %v", rec[col["event_count"]], err)
				}
				events += n
			}
			d := dates.MustParse(day)
			if got, want := int64(len(recs)-1), tc.rows(d); got != want || want == 0 {
				t.Errorf("%d rows, want %d from expected.json", got, want)
			}
			if want := exp.ByDate[d].Events; events != want {
				t.Errorf("event_count sum %d, want %d from expected.json", events, want)
			}
		})
	}

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

// csvRows parses read's CSV output, which must hold a row besides its
// header, and indexes its columns by name.
func csvRows(t *testing.T, out string) ([][]string, map[string]int) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("csv: %v %v", recs, err)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	return recs, col
}
