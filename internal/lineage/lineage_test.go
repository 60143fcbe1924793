package lineage_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/lineage"
	"github.com/techlearningpro/engagement/internal/lineage/lineagetest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRunID(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 6, 0, 0, 123456789, time.UTC)
	id := lineage.RunID("job-1", t0)
	if !uuidV7.MatchString(id) {
		t.Fatalf("%s is not a UUIDv7", id)
	}
	if again := lineage.RunID("job-1", t0.In(time.FixedZone("x", 3600))); again != id {
		t.Errorf("same job and instant gave %s and %s", id, again)
	}
	// The first 48 bits are the start in Unix milliseconds: 1772604000123
	// is 0x019cb76e877b.
	if got, want := strings.ReplaceAll(id, "-", "")[:12], "019cb76e877b"; got != want {
		t.Errorf("time bits %s, want %s (%d ms)", got, want, t0.UnixMilli())
	}
	for _, other := range []string{lineage.RunID("job-2", t0), lineage.RunID("job-1", t0.Add(time.Nanosecond))} {
		if other == id {
			t.Errorf("a different job id or start gave the same run id %s", id)
		}
	}
}

func TestDatasetName(t *testing.T) {
	for _, tc := range []struct{ in, ns, name string }{
		{"/data/raw", "file", "/data/raw"},
		{"/data/raw/", "file", "/data/raw"},
		{"s3://curated/engagement/fact_lesson_engagement", "s3://curated", "engagement/fact_lesson_engagement"},
		{"s3a://raw-bucket/events", "s3://raw-bucket", "events"},
		{"s3://bucket", "s3://bucket", "/"},
	} {
		ns, name := lineage.DatasetName(storage.MustParse(tc.in))
		if ns != tc.ns || name != tc.name {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.in, ns, name, tc.ns, tc.name)
		}
	}
}

func d(s string) dates.Date { return dates.MustParse(s) }

func plan() lineage.Plan {
	return lineage.Plan{
		Namespace: "ns", JobID: "job-1", Dates: []dates.Date{d("2026-03-02"), d("2026-03-03")},
		Raw: storage.MustParse("s3://raw/events"), Lessons: storage.MustParse("/in/lessons"),
		Enrollments: storage.MustParse("/in/enrollments"), Warehouse: storage.MustParse("s3://curated/wh"),
		IngestFrom: d("2026-03-02"), IngestTo: d("2026-03-05"), ManifestID: "m-1", EnrollmentSnapshotID: "e-1",
		Engine: "duckdb", EngineVersion: "v1.4.0", Version: "(devel)", Started: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC),
	}
}

// result is a publish of the two dates: one input check, one staged check
// per date, two raw partitions listed, files with rows and bytes.
func result(passed bool) job.Result {
	raw := func(p string, n int64, day string) inputs.RawFile {
		return inputs.RawFile{File: inputs.File{Path: p, Bytes: n}, IngestDate: d(day)}
	}
	r := job.Result{
		JobID: "job-1",
		Report: gate.Report{Checks: []gate.Check{
			{Name: gate.CheckManifestUniqueLesson, Passed: true, Detail: "none"},
			{Name: gate.CheckEventIDUnique, Passed: true},
			{Name: gate.CheckUnknownLessonCap, Date: "2026-03-02", Passed: passed, Detail: "rate"},
			{Name: gate.CheckUnknownLessonCap, Date: "2026-03-03", Passed: true, Detail: "rate"},
		}},
		Inputs: inputs.Listing{
			Raw:         []inputs.RawFile{raw("s3://raw/events/ingest_date=2026-03-02/a", 10, "2026-03-02"), raw("s3://raw/events/ingest_date=2026-03-02/b", 5, "2026-03-02"), raw("s3://raw/events/ingest_date=2026-03-04/a", 7, "2026-03-04")},
			Lessons:     []inputs.File{{Path: "/in/lessons", Bytes: 3}},
			Enrollments: []inputs.File{{Path: "/in/enrollments/p0", Bytes: 4}, {Path: "/in/enrollments/p1", Bytes: 6}},
		},
	}
	if passed {
		r.Published, r.Pointer = true, pointer.Pointer{Generation: 7}
		r.Entries = map[dates.Date]pointer.DateEntry{
			d("2026-03-02"): {FactFiles: []pointer.File{{Bytes: 100, Rows: 10}, {Bytes: 50, Rows: 4}}, CourseDayFiles: []pointer.File{{Bytes: 20, Rows: 3}}},
			d("2026-03-03"): {FactFiles: []pointer.File{{Bytes: 70, Rows: 6}}, CourseDayFiles: []pointer.File{{Bytes: 30, Rows: 2}}},
			// A date of the pointer this job did not publish: not counted.
			d("2026-03-01"): {FactFiles: []pointer.File{{Bytes: 999, Rows: 999}}},
		}
	}
	return r
}

// validated marshals e, validates it against the vendored schemas and
// decodes it back, so every assertion below reads the wire form.
func validated(t *testing.T, v *lineagetest.Validator, e lineage.Event) lineage.Event {
	t.Helper()
	b, err := lineage.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(b); err != nil {
		t.Fatalf("%s event: %v\n%s", e.EventType, err, b)
	}
	return lineagetest.Decode(t, b)
}

func TestEvents(t *testing.T) {
	v := lineagetest.New(t)
	p := plan()
	at := p.Started.Add(time.Minute)

	start := validated(t, v, lineage.StartEvent(p, p.Started))
	if start.EventType != lineage.Start || start.EventTime != "2026-03-04T06:00:00Z" || start.Job.Namespace != "ns" || start.Job.Name != lineage.JobName {
		t.Errorf("START header: %+v %+v", start, start.Job)
	}
	if len(start.Inputs) != 3 || len(start.Outputs) != 2 {
		t.Fatalf("START: %d inputs, %d outputs", len(start.Inputs), len(start.Outputs))
	}
	if f := start.Inputs[0].InputFacets; f[lineage.FacetInputStats] != nil || f[lineage.FacetRawWindow].(map[string]any)["ingestDates"] != nil {
		t.Errorf("START says what was listed before the listing: %v", f)
	}

	done := validated(t, v, lineage.EndEvent(p, lineage.Outcome{Result: result(true)}, at))
	if done.EventType != lineage.Complete || done.Run.RunID != start.Run.RunID {
		t.Fatalf("end: %s run %s, want COMPLETE of run %s", done.EventType, done.Run.RunID, start.Run.RunID)
	}
	wantIn := []struct {
		ns, name string
		size     float64
		files    float64
		checks   int
	}{
		{"s3://raw", "events", 22, 3, 1},
		{"file", "/in/lessons", 3, 1, 1},
		{"file", "/in/enrollments", 10, 2, 0},
	}
	for i, w := range wantIn {
		in := done.Inputs[i]
		st := in.InputFacets[lineage.FacetInputStats].(map[string]any)
		if in.Namespace != w.ns || in.Name != w.name || st["size"] != w.size || st["fileCount"] != w.files {
			t.Errorf("input %d: %s %s %v, want %+v", i, in.Namespace, in.Name, st, w)
		}
		dq, _ := in.InputFacets[lineage.FacetAssertions].(map[string]any)
		if got := len(list(dq["assertions"])); got != w.checks {
			t.Errorf("input %s: %d assertions, want %d", w.name, got, w.checks)
		}
	}
	win := done.Inputs[0].InputFacets[lineage.FacetRawWindow].(map[string]any)
	if got := list(win["ingestDates"]); len(got) != 2 || got[0] != "2026-03-02" || got[1] != "2026-03-04" || win["from"] != "2026-03-02" || win["to"] != "2026-03-05" {
		t.Errorf("raw window %v", win)
	}
	if pin := done.Inputs[1].InputFacets[lineage.FacetPin].(map[string]any); pin["column"] != "manifest_id" || pin["value"] != "m-1" {
		t.Errorf("manifest pin %v", pin)
	}
	for i, w := range []struct {
		name              string
		rows, size, files float64
	}{{"wh/fact_lesson_engagement", 20, 220, 3}, {"wh/course_day", 5, 50, 2}} {
		out := done.Outputs[i]
		st := out.OutputFacets[lineage.FacetOutputStats].(map[string]any)
		if out.Namespace != "s3://curated" || out.Name != w.name || st["rowCount"] != w.rows || st["size"] != w.size || st["fileCount"] != w.files {
			t.Errorf("output %d: %s %s %v, want %+v", i, out.Namespace, out.Name, st, w)
		}
		as := list(out.OutputFacets[lineage.FacetAssertions].(map[string]any)["assertions"])
		if len(as) != 2 || as[0].(map[string]any)["name"] != "unknown_lesson_cap[2026-03-02]" {
			t.Errorf("output %s assertions %v", w.name, as)
		}
	}
	att := done.Run.Facets[lineage.FacetAttempt].(map[string]any)
	if att["jobId"] != "job-1" || att["exitCode"] != 0.0 || att["generation"] != 7.0 {
		t.Errorf("attempt facet %v", att)
	}

	rejected := validated(t, v, lineage.EndEvent(p, lineage.Outcome{Result: result(false), Code: exitcode.GateRejected,
		Err: errors.New("gate rejected job job-1: unknown_lesson_cap[2026-03-02]: rate")}, at))
	if rejected.EventType != lineage.Fail {
		t.Fatalf("rejected: %s", rejected.EventType)
	}
	msg := rejected.Run.Facets[lineage.FacetErrorMessage].(map[string]any)["message"].(string)
	if !strings.HasPrefix(msg, "exit code 3: gate rejected job job-1") {
		t.Errorf("error message %q", msg)
	}
	for _, out := range rejected.Outputs {
		if out.OutputFacets[lineage.FacetOutputStats] != nil {
			t.Errorf("%s: output statistics in a FAIL", out.Name)
		}
		as := list(out.OutputFacets[lineage.FacetAssertions].(map[string]any)["assertions"])
		if len(as) != 2 || as[0].(map[string]any)["success"] != false || as[1].(map[string]any)["success"] != true {
			t.Errorf("%s: assertions %v", out.Name, as)
		}
	}
}

// TestEventsBadLocation: a location that did not parse (the run's error
// names it) is no dataset: named, it was "." or a bare table name, which a
// consumer (Marquez) keeps as a dataset of its own.
func TestEventsBadLocation(t *testing.T) {
	v := lineagetest.New(t)
	p := plan()
	p.Raw, p.Warehouse = storage.Location{}, storage.Location{}
	fail := validated(t, v, lineage.EndEvent(p, lineage.Outcome{Code: exitcode.Usage, Err: errors.New("--raw: bad")}, p.Started))
	if len(fail.Inputs) != 2 || len(fail.Outputs) != 0 {
		t.Fatalf("FAIL: %d inputs, %d outputs; want the 2 that parsed and none", len(fail.Inputs), len(fail.Outputs))
	}
	for _, in := range fail.Inputs {
		if in.Name == "." || in.Name == "events" {
			t.Errorf("input %s %s: named after a location that did not parse", in.Namespace, in.Name)
		}
	}
}

func list(v any) []any { l, _ := v.([]any); return l }

// TestValidatorRefuses: the validator catches what the schemas forbid, so
// the passing validations above mean something.
func TestValidatorRefuses(t *testing.T) {
	v := lineagetest.New(t)
	p := plan()
	good, err := lineage.Marshal(lineage.EndEvent(p, lineage.Outcome{Result: result(true)}, p.Started))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(good); err != nil {
		t.Fatalf("the good event: %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"runId not a UUID", `"runId":"`, `"runId":"x`},
		{"unknown event type", `"eventType":"COMPLETE"`, `"eventType":"DONE"`},
		{"eventTime not a date-time", `"eventTime":"2026-03-04T06:00:00Z"`, `"eventTime":"yesterday"`},
		{"a size that is not an integer", `"size":220`, `"size":"220"`},
		{"a facet without _producer", `"processing_engine":{"_producer":"https://github.com/techlearningpro/engagement",`, `"processing_engine":{`},
		{"jobType without integration", `"integration":"ENGAGEMENT"`, `"x":"ENGAGEMENT"`},
		{"a pin of an unknown column", `"column":"manifest_id"`, `"column":"lesson_id"`},
		{"an assertion field the facet lacks", `"severity":"error"`, `"level":"error"`},
		{"an assertion without success", `"success":true`, `"passed":true`},
	} {
		bad := strings.Replace(string(good), tc.from, tc.to, 1)
		if bad == string(good) {
			t.Errorf("%s: %q is not in the event", tc.name, tc.from)
			continue
		}
		if err := v.Validate([]byte(bad)); err == nil {
			t.Errorf("%s: validated", tc.name)
		}
	}
}

func TestAppendFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lineage.jsonl")
	p := plan()
	for i := 0; i < 2; i++ {
		if err := lineage.AppendFile(file, lineage.StartEvent(p, p.Started)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 2 || lines[0] != lines[1] {
		t.Errorf("want the same event on two lines, got %d lines:\n%s", len(lines), b)
	}
	if err := lineage.AppendFile(filepath.Join(file, "under-a-file"), lineage.StartEvent(p, p.Started)); err == nil || !strings.Contains(err.Error(), "under-a-file") {
		t.Errorf("a file under a regular file: %v", err)
	}

	// A write a full disk cut short left half a line: the next event
	// starts a line of its own instead of being glued to it.
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, b[:len(b)/2+7], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := lineage.AppendFile(cut, lineage.StartEvent(p, p.Started)); err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(cut)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(c), "\n"), "\n")
	var e map[string]any
	if len(lines) != 3 || json.Unmarshal([]byte(lines[2]), &e) != nil {
		t.Errorf("after a cut line, want the new event whole on a line of its own, got %d lines:\n%s", len(lines), c)
	}
}

func TestPost(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "marquez is sad", http.StatusInternalServerError)
			return
		}
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/api/v1/lineage"
	l.Close()
	p := plan()
	e := lineage.StartEvent(p, p.Started)
	ctx := context.Background()
	if err := lineage.Post(ctx, srv.Client(), srv.URL+"/api/v1/lineage", e); err != nil {
		t.Errorf("201: %v", err)
	}
	if len(got) != 1 || got[0] != "POST /api/v1/lineage application/json" {
		t.Errorf("received %v", got)
	}
	if err := lineage.Post(ctx, srv.Client(), srv.URL+"/fail", e); err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "marquez is sad") {
		t.Errorf("500: %v", err)
	}
	if err := lineage.Post(ctx, srv.Client(), closed, e); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("closed port: %v", err)
	}
}
