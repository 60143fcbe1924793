package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/report"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

var fixtureDates = []string{"2026-03-02", "2026-03-03"}

// world is a warehouse with two published generations (pub-1, then pub-2
// of the same dates) and one gate rejection (cap-bad, the over-cap
// fixture), made through cli.Main as an operator would.
type world struct {
	wh       string
	fixture  publishtest.Fixture // the fixture pub-1 and pub-2 read
	overCap  publishtest.Fixture // the over-cap variant cap-bad read
	capValue float64             // the config's unknown-lesson cap
}

func newWorld(t *testing.T, on publishtest.Backend) world {
	t.Helper()
	h := publishtest.Harness{Backend: on}
	w := world{wh: on.Root(t), fixture: h.LoadFixture(t, ""), overCap: h.LoadFixture(t, "over-cap")}
	w.capValue = w.fixture.Job(t, w.wh, "x", fixtureDates...).UnknownCap
	for _, run := range []struct {
		fx    publishtest.Fixture
		jobID string
		want  int
	}{{w.fixture, "pub-1", exitcode.OK}, {w.fixture, "pub-2", exitcode.OK}, {w.overCap, "cap-bad", exitcode.GateRejected}} {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), run.fx.Args(w.wh, run.jobID, fixtureDates...), &stdout, &stderr); code != run.want {
			t.Fatalf("publish %s: exit %d, want %d\n%s%s", run.jobID, code, run.want, stdout.String(), stderr.String())
		}
	}
	return w
}

func runReport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"report"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestReport renders the page for the world, on local disk and on the test
// S3 server, and checks it three ways: the warehouse is left object for
// object as it was and a second run writes the same bytes; a real Chromium
// loads the page from file:// and finds every chart drawn, no console
// error, no request but the page, and the figures of expected.json; and a
// gate report that gc removed leaves a partial column and a note, not a
// failure.
func TestReport(t *testing.T) {
	for _, on := range []publishtest.Backend{publishtest.Local, publishtest.S3} {
		t.Run(on.Name, func(t *testing.T) { testReport(t, on) })
	}
}

func testReport(t *testing.T, on publishtest.Backend) {
	w := newWorld(t, on)
	b := publishtest.Bucket(t, w.wh)
	before := tree(t, b)
	out := filepath.Join(t.TempDir(), "report")
	code, stdout, stderr := runReport(t, "--warehouse", w.wh, "--out", out)
	if code != exitcode.OK {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	if want := fmt.Sprintf("wrote %s (generation 2, 2 dates published, 3 runs)\n", filepath.Join(out, "index.html")); stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if after := tree(t, b); !maps.Equal(before, after) {
		t.Errorf("report changed the warehouse:\nbefore %v\nafter  %v", before, after)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "again")
	if code, _, stderr := runReport(t, "--warehouse", w.wh, "--out", again); code != exitcode.OK {
		t.Fatalf("second report: exit %d\n%s", code, stderr)
	}
	if second, err := os.ReadFile(filepath.Join(again, "index.html")); err != nil || !bytes.Equal(page, second) {
		t.Errorf("a second report of the same warehouse differs (err %v)", err)
	}
	for _, ref := range []string{"<script", "http://", "https://", "<link", "<img", "url("} {
		// The one URL allowed is the SVG namespace, which names and loads nothing.
		if n := strings.Count(string(page), ref) - strings.Count(string(page), `xmlns="http://www.w3.org/2000/svg"`)*boolInt(ref == "http://"); n > 0 {
			t.Errorf("the page has %d %q: it must stand alone", n, ref)
		}
	}

	t.Run("browser", func(t *testing.T) { checkInBrowser(t, w, b, on.Name, filepath.Join(out, "index.html")) })

	t.Run("gate report gone", func(t *testing.T) {
		// gc deletes a rejected attempt's staging after --min-age, its
		// record stays: the run keeps its failed checks and is marked partial.
		if err := b.Delete(context.Background(), warehouse.GatePath("cap-bad")); err != nil {
			t.Fatal(err)
		}
		m, err := report.Build(context.Background(), objstore.New(b), b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Runs) != 3 || m.Runs[0].JobID != "cap-bad" || !m.Runs[0].Partial {
			t.Fatalf("runs %+v: want cap-bad first, partial", m.Runs)
		}
		for _, d := range fixtureDates {
			k := report.CheckKey{Name: gate.CheckUnknownLessonCap, Date: d}
			if v := m.Runs[0].Verdict(k); v != "fail" {
				t.Errorf("cap-bad %v: %q, want fail", k, v)
			}
			if v := m.Runs[0].Verdict(report.CheckKey{Name: gate.CheckNullKeys, Date: d}); v != "" {
				t.Errorf("cap-bad %s on %s: %q, want unknown (\"\")", gate.CheckNullKeys, d, v)
			}
		}
		if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "no gate report for job cap-bad") || !strings.Contains(m.Notes[0], "only its failed checks are shown") {
			t.Errorf("notes %q: want one naming cap-bad's gate report and saying its failed checks are shown", m.Notes)
		}
		var page bytes.Buffer
		if err := report.Render(&page, m); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(page.String(), "failed checks only</span>"); n != 1 {
			t.Errorf("%d runs marked as failed checks only, want cap-bad's", n)
		}
	})
	t.Run("altered copy", func(t *testing.T) {
		// A figure of generation 1's history copy edited in place, the JSON
		// still valid: the page says so before its figures, as history does.
		data, _, err := b.Get(context.Background(), "pointer-history/1.json")
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(data, []byte(`"event_count": `))
		if i < 0 {
			t.Fatalf("pointer-history/1.json has no event_count: %s", data)
		}
		i += len(`"event_count": `)
		if data[i] == '9' {
			data[i] = '8'
		} else {
			data[i]++
		}
		if _, err := b.Put(context.Background(), "pointer-history/1.json", data, storage.Cond{}); err != nil {
			t.Fatal(err)
		}
		m, err := report.Build(context.Background(), objstore.New(b), b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Notes) == 0 || !strings.Contains(m.Notes[0], "pointer-history/1.json was changed after it was written") {
			t.Errorf("notes %q: want the altered copy named first", m.Notes)
		}
	})
	t.Run("pointer.json edited", func(t *testing.T) {
		// What readers follow is pointer.json: an entry no retained
		// generation holds is drawn as visible now, marked as such, not the
		// history's newest change.
		orig, _, err := b.Get(context.Background(), "pointer.json")
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := b.Put(context.Background(), "pointer.json", orig, storage.Cond{}); err != nil {
				t.Fatal(err)
			}
		}()
		var p map[string]any
		if err := json.Unmarshal(orig, &p); err != nil {
			t.Fatal(err)
		}
		day := fixtureDates[0]
		entry := p["dates"].(map[string]any)[day].(map[string]any)
		edited := entry["event_count"].(float64) + 7
		entry["event_count"] = edited
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(context.Background(), "pointer.json", data, storage.Cond{}); err != nil {
			t.Fatal(err)
		}
		m, err := report.Build(context.Background(), objstore.New(b), b, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.Dates {
			if d.Date.String() != day {
				continue
			}
			if c := d.Changes[0]; !c.FromPointer || c.EventCount != int64(edited) {
				t.Errorf("%s visible now: %d events (from pointer.json %v), want pointer.json's %.0f", day, c.EventCount, c.FromPointer, edited)
			}
			return
		}
		t.Errorf("%s is not on the page", day)
	})
	t.Run("record not its own", func(t *testing.T) {
		// A record whose job id is no job id (a path out of the
		// warehouse) or another record's: noted, naming the record, and
		// the page still made; its gate report is never looked for.
		for key, id := range map[string]string{"rejections/job_id=crafted-1.json": "../../../../evil", "rejections/job_id=crafted-2.json": "cap-bad"} {
			if _, err := b.Put(context.Background(), key, []byte(`{"job_id":"`+id+`"}`), storage.Cond{}); err != nil {
				t.Fatal(err)
			}
		}
		m, err := report.Build(context.Background(), objstore.New(b), b, 0)
		if err != nil {
			t.Fatalf("a crafted record failed the page: %v", err)
		}
		for _, rec := range []string{"crafted-1.json", "crafted-2.json"} {
			if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, rec) && strings.Contains(n, "which is not its own") }) {
				t.Errorf("notes %q: none names %s", m.Notes, rec)
			}
		}
	})
}

// TestReportRefusals: a missing warehouse is exit 2 with the status-style
// message; so is --out inside the warehouse; nothing is written.
func TestReportRefusals(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	if err := os.MkdirAll(wh, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no pointer", []string{"--warehouse", wh, "--out", filepath.Join(dir, "out")}, "engagement: report: no warehouse at " + wh + " (no pointer.json): nothing was published there; check --warehouse\n"},
		{"no warehouse flag", []string{"--out", filepath.Join(dir, "out")}, "engagement: report: --warehouse is required\n"},
		{"no out", []string{"--warehouse", wh}, "engagement: report: --out is required\n"},
		{"out inside", []string{"--warehouse", wh, "--out", filepath.Join(wh, "report")}, "engagement: report: --out " + filepath.Join(wh, "report") + ": lies inside the warehouse " + wh + ", which report only reads; write the page elsewhere\n"},
		{"out is a file", []string{"--warehouse", wh, "--out", file}, "engagement: report: --out " + file + ": not a directory\n"},
		{"runs", []string{"--warehouse", wh, "--out", filepath.Join(dir, "out"), "--runs", "0"}, "engagement: report: --runs 0: want at least 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The error line as people read it; the JSON record form is
			// internal/cli's test.
			code, stdout, stderr := runReport(t, append([]string{"--log-format", "text"}, tc.args...)...)
			if code != exitcode.Usage || stderr != tc.want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr, stdout, exitcode.Usage, tc.want)
			}
			if entries, _ := os.ReadDir(wh); len(entries) != 0 {
				t.Errorf("the warehouse holds %d entries", len(entries))
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("--out was created")
			}
		})
	}
}

// expectedRate is the unknown-lesson rate of expected.json's figures, as the
// page writes it.
func expectedRate(fx publishtest.Fixture, d string) string {
	f := fx.Expected.ByDate[dates.MustParse(d)]
	return fmt.Sprintf("%.6f", gate.Rate(f.Unknown, f.Events))
}

func expectedEvents(fx publishtest.Fixture, d string) string {
	return fmt.Sprint(fx.Expected.ByDate[dates.MustParse(d)].Events)
}

// currentPointer reads pointer.json as readers do, for the file sizes.
func currentPointer(t *testing.T, b storage.Bucket) pointer.Pointer {
	t.Helper()
	data, _, err := b.Get(context.Background(), "pointer.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pointer.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tree is every object of the warehouse with its size and version (the
// ETag on S3; size, time and inode on disk).
func tree(t *testing.T, b storage.Bucket) map[string]string {
	t.Helper()
	objs, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		out[o.Key] = fmt.Sprintf("%d %s", o.Size, o.Version)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
