// Package python_test runs read_date.py, the pyarrow and pandas reader that
// docs/readers.md shows, with the pinned pyarrow and pandas of
// scripts/pyarrow.sh, over a real publish of the fixture.
package python_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/internal/testenv"
)

// summary is what read_date.py prints for one table of one date.
type summary struct {
	Date     string            `json:"date"`
	JobID    string            `json:"job_id"`
	Table    string            `json:"table"`
	Rows     int64             `json:"rows"`
	Events   int64             `json:"event_count"`
	Unknown  int64             `json:"unknown_lesson_count"`
	Enrolled int64             `json:"enrolled_event_count"`
	Learners int64             `json:"learner_count"`
	ByCourse map[string]int64  `json:"by_course"`
	Columns  map[string]string `json:"columns"` // pandas dtypes
}

// TestReadDate publishes the fixture into a warehouse whose path holds a
// space, URI and glob characters, and runs the snippet for each date and
// table: its figures must be the fixture's hand-counted expected.json.
func TestReadDate(t *testing.T) {
	python := testenv.Tool(t, "ENGAGEMENT_PYARROW_PYTHON", "ENGAGEMENT_SKIP_PYARROW", "scripts/pyarrow.sh")
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "w h?#[x]%20*")
	const jobID = "python-001"
	var stderr strings.Builder
	code := cli.Main(context.Background(), fx.Args(wh, jobID, "2026-03-02", "2026-03-03"), io.Discard, &stderr)
	if code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, stderr.String())
	}
	script := filepath.Join(publishtest.Root(), "examples", "python", "read_date.py")
	var ds []string
	for _, d := range fx.Expected.Dates {
		ds = append(ds, d.String())
	}
	facts := readDates(t, python, script, wh, "fact_lesson_engagement", ds)
	days := readDates(t, python, script, wh, "course_day", ds)
	// As a file:// URL the path is still literal ('%20', '#', '?' and all),
	// as engagement takes it: pyarrow's parser read a sibling warehouse.
	for _, u := range []string{"file://" + wh, "file://localhost" + wh} {
		if got := readDates(t, python, script, u, "course_day", ds); !reflect.DeepEqual(got, days) {
			t.Errorf("through %s: %+v, want %+v", u, got, days)
		}
	}
	for i, d := range fx.Expected.Dates {
		want := fx.Expected.ByDate[d]
		if got := facts[i]; got.JobID != jobID || got.Rows != want.FactRows || got.Events != want.Events ||
			got.Unknown != want.Unknown || got.Enrolled != want.Enrolled || got.Learners != want.Learners {
			t.Errorf("%s fact_lesson_engagement: got %+v, want job %s and %+v", d, got, jobID, want)
		}
		wantCourses := map[string]int64{}
		for c, f := range fx.Expected.ByDateCourse[d] {
			wantCourses[c] = f.Events
		}
		if got := days[i]; got.JobID != jobID || got.Events != want.Events || int(got.Rows) != len(wantCourses) ||
			!reflect.DeepEqual(got.ByCourse, wantCourses) {
			t.Errorf("%s course_day: got %+v, want %d events, by course %v", d, got, want.Events, wantCourses)
		}
	}

	// A date published without events lists no files: it reads as no
	// rows of the columns and types a date with files has.
	publishtest.EmptyPartition(t, fx, "2026-02-27")
	// Its lateness partition too: a missing one, with later ones landed,
	// is an ingestion gap the publish refuses.
	publishtest.EmptyPartition(t, fx, "2026-02-28")
	code = cli.Main(context.Background(), append(fx.Args(wh, "python-002", "2026-02-27"), "--allow-outside-horizon"), io.Discard, &stderr)
	if code != 0 {
		t.Fatalf("publish the empty date: exit %d\n%s", code, stderr.String())
	}
	for i, table := range []string{"fact_lesson_engagement", "course_day"} {
		got := readDates(t, python, script, wh, table, []string{"2026-02-27"})[0]
		want := [][]summary{facts, days}[i][0]
		if got.JobID != "python-002" || got.Rows != 0 || got.Events != 0 || len(got.ByCourse) != 0 ||
			len(want.Columns) == 0 || !reflect.DeepEqual(got.Columns, want.Columns) {
			t.Errorf("%s of a date without events: got %+v, want no rows and the columns %v", table, got, want.Columns)
		}
	}

	// A date the pointer does not hold is refused, not read as empty (exit
	// 1: it may be published later); a bad table or date is a usage error.
	for _, tc := range []struct {
		warehouse string // wh when empty
		args      []string
		code      int
		says      string
	}{
		{"", []string{"course_day", "2026-03-05"}, 1, "2026-03-05 is not published"},
		{"", []string{"Course_Day", "2026-03-02"}, 2, "unknown table 'Course_Day'"},
		{"", []string{"course_day", "2026-3-2"}, 2, "date '2026-3-2': want YYYY-MM-DD"},
		{"", []string{"course_day", "20260302"}, 2, "date '20260302': want YYYY-MM-DD"},
		// Checked before anything is read or printed.
		{"", []string{"course_day", "2026-03-02", "2026-13-01"}, 2, "date '2026-13-01': month must be in 1..12"},
		// The warehouse's parent: the wrong place, as engagement read says.
		{filepath.Dir(wh), []string{"course_day", "2026-03-02"}, 2, "(no pointer.json): nothing was published there"},
		// A host or a relative path, as engagement refuses it: it was
		// read as ./localhost/...
		{"file://localhost", []string{"course_day", "2026-03-02"}, 2, "a file URL names an absolute path"},
		{"file://w", []string{"course_day", "2026-03-02"}, 2, "a file URL names an absolute path"},
	} {
		w := tc.warehouse
		if w == "" {
			w = wh
		}
		args := append([]string{script, w}, tc.args...)
		cmd := exec.Command(python, args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tc.code || !strings.Contains(string(out), tc.says) {
			t.Errorf("%v: exit %d, output %s; want exit %d saying %q", tc.args, cmd.ProcessState.ExitCode(), out, tc.code, tc.says)
		}
		if tc.code == 2 && strings.Contains(string(out), `"date"`) {
			t.Errorf("%v: printed figures before refusing: %s", tc.args, out)
		}
	}

	// A damaged published file is exit 1 (unreadable data, not a usage
	// error), naming the file.
	d := publishtest.Snapshot(t, wh).Dates()[1] // 2026-03-02: the first date with files
	files, _ := d.Files("course_day")
	path := strings.TrimPrefix(files[0].URI, "file://")
	if err := os.WriteFile(path, []byte("PAR1 cut"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script, wh, "course_day", d.Date)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), filepath.Base(filepath.Dir(path))) {
		t.Errorf("a damaged file: exit %d, output %s; want exit 1 naming %s", cmd.ProcessState.ExitCode(), out, path)
	}

	// pointer.json lost with its history there: a damaged warehouse (exit
	// 1, saying how to restore it, as engagement status says), not "nothing
	// was published there" (exit 2), which sends the reader to check the path.
	if code := cli.Main(context.Background(), fx.Args(wh, "python-lost", "2026-03-02"), io.Discard, &stderr); code != 0 {
		t.Fatalf("second publish: exit %d\n%s", code, stderr.String())
	}
	if err := os.Remove(filepath.Join(wh, "pointer.json")); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(python, script, wh, "course_day", "2026-03-02")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "it was lost or deleted by hand") || !strings.Contains(string(out), ".json over pointer.json") {
		t.Errorf("a lost pointer.json: exit %d, output %s; want exit 1 saying how to restore it", cmd.ProcessState.ExitCode(), out)
	}

	// Generation 1 alone, without pointer.json: a first publish that
	// stopped after its commit. Not published yet (exit 1, as engagement
	// status says), not a wrong location (exit 2).
	first := filepath.Join(t.TempDir(), "first")
	if code := cli.Main(context.Background(), fx.Args(first, "python-first", "2026-03-02"), io.Discard, &stderr); code != 0 {
		t.Fatalf("first publish: exit %d\n%s", code, stderr.String())
	}
	if err := os.Remove(filepath.Join(first, "pointer.json")); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(python, script, first, "course_day", "2026-03-02")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "holds only generation 1") {
		t.Errorf("a first publish not yet visible: exit %d, output %s; want exit 1 saying its history holds only generation 1", cmd.ProcessState.ExitCode(), out)
	}

	// A pointer.json that is JSON but not a pointer: exit 1 saying so, where
	// a KeyError's traceback came out.
	for _, body := range []string{`{"format_version":3}`, `[1,2]`, `{"format_version":3,"generation":"2","dates":{}}`} {
		if err := os.WriteFile(filepath.Join(first, "pointer.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(python, script, first, "course_day", "2026-03-02")
		out, _ = cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "is JSON but not a pointer") || strings.Contains(string(out), "Traceback") {
			t.Errorf("pointer.json %s: exit %d, output %s; want exit 1 saying it is not a pointer", body, cmd.ProcessState.ExitCode(), out)
		}
	}
	// A newer format: exit 2, as engagement's own readers (docs/pointer.md).
	if err := os.WriteFile(filepath.Join(first, "pointer.json"), []byte(`{"format_version":99,"generation":2,"dates":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(python, script, first, "course_day", "2026-03-02")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "format 99 is newer than") {
		t.Errorf("a newer pointer format: exit %d, output %s; want exit 2 saying it is newer", cmd.ProcessState.ExitCode(), out)
	}
}

// TestReadDateS3OddKeys: on S3 the warehouse's key is taken literally, as
// engagement takes it. Siblings whose keys differ only by '%20' against a
// space, or by a '#' part, are two warehouses; pyarrow's URI parser read
// the other one's pointer (exit 0, another job's rows).
func TestReadDateS3OddKeys(t *testing.T) {
	python := testenv.Tool(t, "ENGAGEMENT_PYARROW_PYTHON", "ENGAGEMENT_SKIP_PYARROW", "scripts/pyarrow.sh")
	fx := publishtest.LoadFixture(t, "")
	base := s3test.Location(t).String()
	script := filepath.Join(publishtest.Root(), "examples", "python", "read_date.py")
	// Each pair's second key would parse as its first.
	keys := []string{"a b", "a%20b", "c", "c#d"}
	for i, key := range keys {
		wh := base + "/" + key
		var stderr strings.Builder
		if code := cli.Main(context.Background(), fx.Args(wh, fmt.Sprintf("odd-%d", i), "2026-03-02"), io.Discard, &stderr); code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", wh, code, stderr.String())
		}
	}
	for i, key := range keys {
		wh := base + "/" + key
		if i == 1 {
			// Any case of the scheme, and s3a://, as engagement reads them.
			wh = "S3A" + strings.TrimPrefix(wh, "s3")
		}
		got := readDates(t, python, script, wh, "course_day", []string{"2026-03-02"})[0]
		if want := fmt.Sprintf("odd-%d", i); got.JobID != want || got.Events != fx.Expected.ByDate[dates.MustParse("2026-03-02")].Events {
			t.Errorf("%s: read job %s with %d events, want %s's %d", key, got.JobID, got.Events, want, fx.Expected.ByDate[dates.MustParse("2026-03-02")].Events)
		}
	}
	// A URL engagement refuses is a usage error here too (exit 2), never
	// a read that fails (exit 1, which a scheduler retries).
	for _, wh := range []string{strings.Replace(base, "/t/", "//t/", 1) + "/c", base + "/./c", "gs://b/w"} {
		cmd := exec.Command(python, script, wh, "course_day", "2026-03-02")
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 {
			t.Errorf("%s: exit %d, want 2: %s", wh, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// TestReadDateOnePointer: every date of one read comes from the pointer
// loaded once. A publish of both dates lands after the reader loaded it
// and read the first date; the second date must still be the first job's
// (reloading per date showed one date of each job).
func TestReadDateOnePointer(t *testing.T) {
	python := testenv.Tool(t, "ENGAGEMENT_PYARROW_PYTHON", "ENGAGEMENT_SKIP_PYARROW", "scripts/pyarrow.sh")
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	publish := func(job string) {
		t.Helper()
		var stderr strings.Builder
		if code := cli.Main(context.Background(), fx.Args(wh, job, "2026-03-02", "2026-03-03"), io.Discard, &stderr); code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", job, code, stderr.String())
		}
	}
	publish("first")
	dir := filepath.Join(publishtest.Root(), "examples", "python")
	// The script's own functions, paused between the two dates.
	cmd := exec.Command(python, "-c", `import sys, read_date
opened = read_date.open_pointer(sys.argv[1])
print(read_date.read_date(opened, "2026-03-02", "course_day")[0]["job_id"], flush=True)
sys.stdin.readline()
print(read_date.read_date(opened, "2026-03-03", "course_day")[0]["job_id"], flush=True)`, wh)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "first" {
		t.Fatalf("first date read from job %q, want first\n%s", lines.Text(), stderr.String())
	}
	publish("second")
	if p := publishtest.Snapshot(t, wh); p.Generation() != 2 {
		t.Fatalf("the second publish left generation %d", p.Generation())
	}
	io.WriteString(stdin, "\n")
	if !lines.Scan() || lines.Text() != "first" {
		t.Errorf("second date read from job %q after the next publish, want first: one answer mixed two generations\n%s", lines.Text(), stderr.String())
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("reader: %v\n%s", err, stderr.String())
	}
}

// readDates runs the snippet once for the table and dates and decodes its
// line per date.
func readDates(t *testing.T, python, script, wh, table string, dates []string) []summary {
	t.Helper()
	cmd := exec.Command(python, append([]string{script, wh, table}, dates...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read_date.py %s %v: %v\n%s", table, dates, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(dates) {
		t.Fatalf("read_date.py %s %v printed %d lines, want %d:\n%s", table, dates, len(lines), len(dates), out)
	}
	sums := make([]summary, len(dates))
	for i, line := range lines {
		if err := json.Unmarshal([]byte(line), &sums[i]); err != nil {
			t.Fatalf("read_date.py printed %q: %v", line, err)
		}
		if sums[i].Date != dates[i] || sums[i].Table != table {
			t.Fatalf("read_date.py %s %s printed %+v", table, dates[i], sums[i])
		}
	}
	return sums
}

// TestDocShowsTheSnippet keeps docs/readers.md and the file the test runs
// the same: the doc must hold read_date.py verbatim.
func TestDocShowsTheSnippet(t *testing.T) {
	root := publishtest.Root()
	code, err := os.ReadFile(filepath.Join(root, "examples", "python", "read_date.py"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "readers.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```python\n"+string(code)+"```\n") {
		t.Errorf("docs/readers.md does not show examples/python/read_date.py verbatim in a ```python block; copy the file into it")
	}
}
