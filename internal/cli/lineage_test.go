package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/lineage"
	"github.com/techlearningpro/engagement/internal/lineage/lineagetest"
	"github.com/techlearningpro/engagement/internal/metrics"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// receiver is a small OpenLineage HTTP endpoint: it keeps every body it
// is sent and answers with status.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if req.Method != http.MethodPost || req.URL.Path != "/api/v1/lineage" || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want POST /api/v1/lineage with JSON", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) url() string { return r.URL + "/api/v1/lineage" }

func (r *receiver) events() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// fileEvents are the lines of a --lineage-file.
func fileEvents(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

// checkRun validates every event, checks they are one run with the given
// event types in order, and decodes them.
func checkRun(t *testing.T, v *lineagetest.Validator, raw [][]byte, types ...string) []lineage.Event {
	t.Helper()
	if len(raw) != len(types) {
		t.Fatalf("%d events, want %v", len(raw), types)
	}
	var out []lineage.Event
	for i, b := range raw {
		if err := v.Validate(b); err != nil {
			t.Fatalf("event %d: %v\n%s", i, err, b)
		}
		e := lineagetest.Decode(t, b)
		if e.EventType != types[i] {
			t.Errorf("event %d is %s, want %s", i, e.EventType, types[i])
		}
		if e.Run.RunID != out0(out, e).Run.RunID {
			t.Errorf("event %d: run %s, the START's %s", i, e.Run.RunID, out[0].Run.RunID)
		}
		out = append(out, e)
	}
	return out
}

func out0(out []lineage.Event, e lineage.Event) lineage.Event {
	if len(out) == 0 {
		return e
	}
	return out[0]
}

// facet re-decodes one facet of an event into dst.
func facet(t *testing.T, facets map[string]any, name string, dst any) bool {
	t.Helper()
	f, ok := facets[name]
	if !ok {
		return false
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("facet %s: %v", name, err)
	}
	return true
}

// onDisk is the count and bytes of the regular files under dir.
func onDisk(t *testing.T, dir string) (files, size int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || inputs.Hidden(d.Name()) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files, size = files+1, size+info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, size
}

// TestLineagePublished publishes the fixture with both sinks. The file and
// the receiver hold the same START and COMPLETE, valid against the
// OpenLineage 2-0-2 schemas; the inputs are the raw partitions of the
// window, the manifest and the snapshot with the fixture's pins; the
// outputs carry the rows of expected.json and the bytes and files on disk;
// every check of the gate's report is an assertion that passed.
func TestLineagePublished(t *testing.T) {
	v := lineagetest.New(t)
	rcv := newReceiver(t, http.StatusCreated)
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	file := filepath.Join(t.TempDir(), "lineage.jsonl")
	ds := []string{"2026-03-02", "2026-03-03"}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append(fx.Args(wh, "lineage-ok", ds...),
		"--lineage-file", file, "--lineage-url", rcv.url(), "--lineage-namespace", "test-ns"), &stdout, &stderr)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "lineage event was not sent") {
		t.Errorf("a lineage warning on a healthy run:\n%s", stderr.String())
	}
	lines := fileEvents(t, file)
	posted := rcv.events()
	for i := range posted {
		if i < len(lines) && !bytes.Equal(bytes.TrimSpace(posted[i]), lines[i]) {
			t.Errorf("event %d: the file and the endpoint differ:\n%s\n%s", i, lines[i], posted[i])
		}
	}
	checkRun(t, v, posted, lineage.Start, lineage.Complete)
	evs := checkRun(t, v, lines, lineage.Start, lineage.Complete)
	start, done := evs[0], evs[1]
	if done.Job.Namespace != "test-ns" || done.Job.Name != lineage.JobName {
		t.Errorf("job %s/%s", done.Job.Namespace, done.Job.Name)
	}

	// Inputs: the window's partitions as the fixture holds them.
	j := fx.Job(t, wh, "x", ds...)
	from, to := dates.MustParse(ds[0]), dates.MustParse(ds[len(ds)-1]).AddDays(j.LatenessDays)
	var wantDates []string
	var rawFiles, rawBytes int64
	parts, err := os.ReadDir(filepath.Join(fx.Dir, "raw"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		day := dates.MustParse(strings.TrimPrefix(p.Name(), inputs.PartitionPrefix))
		if day < from || day > to {
			continue
		}
		wantDates = append(wantDates, day.String())
		n, b := onDisk(t, filepath.Join(fx.Dir, "raw", p.Name()))
		rawFiles, rawBytes = rawFiles+n, rawBytes+b
	}
	if len(wantDates) != len(ds) || wantDates[len(wantDates)-1] != fx.Expected.NewestIngestDate.String() {
		t.Fatalf("the fixture's window holds %v; expected.json says the newest ingest date is %s", wantDates, fx.Expected.NewestIngestDate)
	}
	abs := func(rel string) string {
		p, err := filepath.Abs(filepath.Join(fx.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, ev := range evs {
		if len(ev.Inputs) != 3 {
			t.Fatalf("%s: %d inputs", ev.EventType, len(ev.Inputs))
		}
		for i, rel := range []string{"raw", "lessons", "enrollments"} {
			if in := ev.Inputs[i]; in.Namespace != "file" || in.Name != abs(rel) {
				t.Errorf("%s input %d: %s %s, want file %s", ev.EventType, i, in.Namespace, in.Name, abs(rel))
			}
		}
		var pin lineage.Pin
		if !facet(t, ev.Inputs[1].InputFacets, lineage.FacetPin, &pin) || pin.Value != fx.Expected.ManifestID {
			t.Errorf("%s: manifest pin %+v, want %s", ev.EventType, pin, fx.Expected.ManifestID)
		}
		if !facet(t, ev.Inputs[2].InputFacets, lineage.FacetPin, &pin) || pin.Value != fx.Expected.EnrollmentSnapshotID {
			t.Errorf("%s: snapshot pin %+v, want %s", ev.EventType, pin, fx.Expected.EnrollmentSnapshotID)
		}
	}
	var win lineage.RawWindow
	facet(t, done.Inputs[0].InputFacets, lineage.FacetRawWindow, &win)
	if win.From != from.String() || win.To != to.String() || strings.Join(win.IngestDates, ",") != strings.Join(wantDates, ",") {
		t.Errorf("raw window %+v, want %s..%s listing %v", win, from, to, wantDates)
	}
	var st lineage.Statistics
	if !facet(t, done.Inputs[0].InputFacets, lineage.FacetInputStats, &st) || st.FileCount != rawFiles || st.Size != rawBytes {
		t.Errorf("raw statistics %+v, want %d files of %d bytes", st, rawFiles, rawBytes)
	}
	if facet(t, start.Inputs[0].InputFacets, lineage.FacetInputStats, &st) {
		t.Error("START has input statistics before anything was listed")
	}

	// Outputs: rows from expected.json, files and bytes from the disk.
	var factRows, courseDayRows int64
	for _, d := range ds {
		day := dates.MustParse(d)
		factRows += int64(fx.Expected.ByDate[day].FactRows)
		courseDayRows += int64(len(fx.Expected.ByDateCourse[day]))
	}
	staging := filepath.Join(wh, filepath.FromSlash(warehouse.StagingDir("lineage-ok")))
	for i, tc := range []struct {
		table string
		rows  int64
	}{{engine.FactTable, factRows}, {engine.CourseDayTable, courseDayRows}} {
		out := done.Outputs[i]
		whAbs, _ := filepath.Abs(wh)
		if out.Namespace != "file" || out.Name != filepath.Join(whAbs, tc.table) {
			t.Errorf("output %d: %s %s", i, out.Namespace, out.Name)
		}
		files, size := onDisk(t, filepath.Join(staging, tc.table))
		if !facet(t, out.OutputFacets, lineage.FacetOutputStats, &st) || st.RowCount == nil || *st.RowCount != tc.rows || st.Size != size || st.FileCount != files {
			t.Errorf("%s statistics %+v (rows %v), want %d rows, %d files, %d bytes", tc.table, st, st.RowCount, tc.rows, files, size)
		}
		if facet(t, start.Outputs[i].OutputFacets, lineage.FacetOutputStats, &st) {
			t.Errorf("START has %s output statistics", tc.table)
		}
	}

	// Assertions: one per check of the report the gate wrote, all passed;
	// the input checks on the inputs, the staged ones on each table.
	rep := gateReport(t, wh, "lineage-ok")
	var staged int
	for _, c := range rep.Checks {
		if c.Date != "" {
			staged++
		}
	}
	count := func(facets map[string]any) (n int) {
		var a lineage.Assertions
		facet(t, facets, lineage.FacetAssertions, &a)
		for _, x := range a.Assertions {
			if !x.Success {
				t.Errorf("assertion %s failed in a published run", x.Name)
			}
		}
		return len(a.Assertions)
	}
	var onInputs int
	for _, in := range done.Inputs {
		onInputs += count(in.InputFacets)
	}
	if onInputs != len(rep.Checks)-staged || staged == 0 {
		t.Errorf("%d assertions on the inputs, want the report's %d input checks", onInputs, len(rep.Checks)-staged)
	}
	for _, out := range done.Outputs {
		if n := count(out.OutputFacets); n != staged {
			t.Errorf("%s: %d assertions, want the report's %d dated checks", out.Name, n, staged)
		}
	}
	var att lineage.Attempt
	facet(t, done.Run.Facets, lineage.FacetAttempt, &att)
	if att.JobID != "lineage-ok" || att.ExitCode == nil || *att.ExitCode != 0 || att.Generation != publishtest.LoadPointer(t, wh).Generation {
		t.Errorf("attempt facet %+v", att)
	}
}

func gateReport(t *testing.T, wh, jobID string) gate.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wh, filepath.FromSlash(warehouse.GatePath(jobID))))
	if err != nil {
		t.Fatal(err)
	}
	var rep gate.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestLineageFailedRuns: a rejected run (the over-cap fixture) and an
// errored one (a raw path that does not exist) each send START and FAIL,
// whose errorMessage names the exit code and the cause; the rejected one
// carries the failed cap checks, and neither has output statistics.
func TestLineageFailedRuns(t *testing.T) {
	v := lineagetest.New(t)
	ds := []string{"2026-03-02", "2026-03-03"}
	over := publishtest.LoadFixture(t, "over-cap")
	ok := publishtest.LoadFixture(t, "")
	missingRaw := ok.Args(filepath.Join(t.TempDir(), "wh"), "lineage-errored", ds...)
	for i := range missingRaw {
		if missingRaw[i] == "--raw" {
			missingRaw[i+1] = filepath.Join(t.TempDir(), "no-such-raw")
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in the error message
	}{
		{"rejected", over.Args(filepath.Join(t.TempDir(), "wh"), "lineage-rejected", ds...), exitcode.GateRejected,
			[]string{"exit code 3: ", "gate rejected job lineage-rejected", gate.CheckUnknownLessonCap}},
		{"errored", missingRaw, exitcode.Error, []string{"exit code 1: ", "no-such-raw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newReceiver(t, http.StatusOK)
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), append(tc.args, "--lineage-url", rcv.url()), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			evs := checkRun(t, v, rcv.events(), lineage.Start, lineage.Fail)
			fail := evs[1]
			var em lineage.ErrorMessage
			if !facet(t, fail.Run.Facets, lineage.FacetErrorMessage, &em) {
				t.Fatal("FAIL without an errorMessage")
			}
			for _, w := range tc.want {
				if !strings.Contains(em.Message, w) {
					t.Errorf("error message lacks %q: %s", w, em.Message)
				}
			}
			var att lineage.Attempt
			if facet(t, fail.Run.Facets, lineage.FacetAttempt, &att); att.ExitCode == nil || *att.ExitCode != tc.code || att.Generation != 0 {
				t.Errorf("attempt facet %+v", att)
			}
			failedCaps := 0
			for _, out := range fail.Outputs {
				var st lineage.Statistics
				if facet(t, out.OutputFacets, lineage.FacetOutputStats, &st) {
					t.Errorf("%s: output statistics in a FAIL", out.Name)
				}
				var a lineage.Assertions
				facet(t, out.OutputFacets, lineage.FacetAssertions, &a)
				for _, x := range a.Assertions {
					if x.Assertion == gate.CheckUnknownLessonCap && !x.Success {
						failedCaps++
					}
				}
			}
			if want := map[string]int{"rejected": 2 * len(ds), "errored": 0}[tc.name]; failedCaps != want {
				t.Errorf("%d failed cap assertions over both tables, want %d", failedCaps, want)
			}
		})
	}
}

// TestLineageSinkDown: an endpoint that answers 500 and one that refuses
// connections are warnings. A publish still exits 0 with the pointer moved
// (and the file still gets its events); a rejected one keeps exit 3; the
// metrics count the failed sends.
func TestLineageSinkDown(t *testing.T) {
	v := lineagetest.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/api/v1/lineage"
	l.Close()
	status500 := newReceiver(t, http.StatusInternalServerError).url()
	// A front that moves the endpoint (an SSO proxy, http to https): the
	// POST was followed as a GET of a page that answered 200, and the
	// event counted as sent.
	landing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/landing", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer landing.Close()
	moved := landing.URL + "/moved"
	ds := []string{"2026-03-02"}
	for _, tc := range []struct {
		endpoint, variant string
		url               string
		code              int
		end               string
	}{
		{"500", "", status500, exitcode.OK, lineage.Complete},
		{"refused", "", refused, exitcode.OK, lineage.Complete},
		{"302", "", moved, exitcode.OK, lineage.Complete},
		{"500", "over-cap", status500, exitcode.GateRejected, lineage.Fail},
		{"refused", "over-cap", refused, exitcode.GateRejected, lineage.Fail},
	} {
		t.Run(tc.endpoint+"/"+tc.variant, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, tc.variant)
			wh := filepath.Join(t.TempDir(), "wh")
			file := filepath.Join(t.TempDir(), "lineage.jsonl")
			prom := filepath.Join(t.TempDir(), "engagement.prom")
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), append(fx.Args(wh, "lineage-down", ds...),
				"--lineage-url", tc.url, "--lineage-file", file, "--metrics-file", prom), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			if got := strings.Count(stderr.String(), "a lineage event was not sent; the run's outcome stands"); got != 2 {
				t.Errorf("%d lineage warnings, want 2 (START and %s):\n%s", got, tc.end, stderr.String())
			}
			if !strings.Contains(stderr.String(), `"lineage_failures":2`) {
				t.Errorf("the second warning does not count 2 failures:\n%s", stderr.String())
			}
			checkRun(t, v, fileEvents(t, file), lineage.Start, tc.end)
			_, statErr := os.Stat(filepath.Join(wh, "pointer.json"))
			if tc.code == exitcode.OK {
				if got := publishtest.LoadPointer(t, wh); got.Generation != 1 || got.Dates[dates.MustParse(ds[0])].JobID != "lineage-down" {
					t.Errorf("pointer generation %d, %+v: want generation 1 naming lineage-down", got.Generation, got.Dates)
				}
				if !strings.HasPrefix(stdout.String(), "published job_id=lineage-down") {
					t.Errorf("stdout lacks the summary:\n%s", stdout.String())
				}
			} else if !os.IsNotExist(statErr) {
				t.Errorf("a rejected publish left pointer.json (%v)", statErr)
			}
			if got := mustValue(t, readTextfile(t, prom), metrics.LineageFails, nil); got != 2 {
				t.Errorf("%s = %v, want 2", metrics.LineageFails, got)
			}
		})
	}
}

// TestLineageOnS3: with the inputs and the warehouse on S3, every dataset
// is named by the OpenLineage S3 convention (namespace s3://BUCKET, name
// the key) and the figures are the same as on local disk.
func TestLineageOnS3(t *testing.T) {
	v := lineagetest.New(t)
	h := publishtest.Harness{Backend: publishtest.S3}
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	file := filepath.Join(t.TempDir(), "lineage.jsonl")
	ds := []string{"2026-03-02", "2026-03-03"}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append(fx.Args(wh, "lineage-s3", ds...), "--lineage-file", file), &stdout, &stderr)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	done := checkRun(t, v, fileEvents(t, file), lineage.Start, lineage.Complete)[1]
	split := func(url string) (string, string) {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(url, "s3://"), "/")
		return "s3://" + bucket, key
	}
	for i, rel := range []string{"raw", "lessons", "enrollments"} {
		ns, name := split(fx.Input(rel))
		if in := done.Inputs[i]; in.Namespace != ns || in.Name != name {
			t.Errorf("input %d: %s %s, want %s %s", i, in.Namespace, in.Name, ns, name)
		}
	}
	var factRows int64
	for _, d := range ds {
		factRows += fx.Expected.ByDate[dates.MustParse(d)].FactRows
	}
	ns, name := split(wh + "/" + engine.FactTable)
	var st lineage.Statistics
	if out := done.Outputs[0]; out.Namespace != ns || out.Name != name ||
		!facet(t, out.OutputFacets, lineage.FacetOutputStats, &st) || st.RowCount == nil || *st.RowCount != factRows {
		t.Errorf("fact output %s %s %+v, want %s %s with %d rows", out.Namespace, out.Name, st, ns, name, factRows)
	}
}

// TestLineageJobIDReused: rerunning a job id that already published is
// refused (exit 4) as a run of its own: its START and FAIL carry another
// run id, so a consumer never sees the published run fail.
func TestLineageJobIDReused(t *testing.T) {
	v := lineagetest.New(t)
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	file := filepath.Join(t.TempDir(), "lineage.jsonl")
	args := append(fx.Args(wh, "lineage-twice", "2026-03-02"), "--lineage-file", file)
	for i, want := range []int{exitcode.OK, exitcode.AlreadyPublished} {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), args, &stdout, &stderr); code != want {
			t.Fatalf("run %d: exit %d, want %d\n%s", i+1, code, want, stderr.String())
		}
	}
	evs := fileEvents(t, file)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	first := checkRun(t, v, evs[:2], lineage.Start, lineage.Complete)
	second := checkRun(t, v, evs[2:], lineage.Start, lineage.Fail)
	if first[0].Run.RunID == second[0].Run.RunID {
		t.Errorf("the refused rerun reuses the published run's id %s", first[0].Run.RunID)
	}
	var em lineage.ErrorMessage
	if !facet(t, second[1].Run.Facets, lineage.FacetErrorMessage, &em) || !strings.HasPrefix(em.Message, "exit code 4: ") || !strings.Contains(em.Message, "already published") {
		t.Errorf("error message %q", em.Message)
	}
}

// TestLineageRedirectKept: a redirect that keeps the POST and its body
// (308, as an ingress's ssl-redirect answers) is followed, and the events
// land where it points.
func TestLineageRedirectKept(t *testing.T) {
	var mu sync.Mutex
	var landed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		landed = append(landed, r.Method+" "+r.URL.Path+" "+fmt.Sprint(len(b) > 0))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	fx := publishtest.LoadFixture(t, "")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append(fx.Args(filepath.Join(t.TempDir(), "wh"), "lineage-308", "2026-03-02"),
		"--lineage-url", srv.URL+"/old"), &stdout, &stderr)
	if code != exitcode.OK || strings.Contains(stderr.String(), "was not sent") {
		t.Fatalf("exit %d, want 0 without a failed send\n%s", code, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"POST /new true", "POST /new true"}; strings.Join(landed, ",") != strings.Join(want, ",") {
		t.Errorf("landed %q, want %q (START and COMPLETE, with their bodies)", landed, want)
	}
}
