package report_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/testenv"
)

// ChromiumEnv names the browser the test drives; scripts/test.sh installs
// Debian's chromium (scripts/chromium.sh) and exports its path here.
const ChromiumEnv = "ENGAGEMENT_CHROMIUM"

// SkipChromiumEnv lets a developer without Chromium skip the browser test on
// purpose. scripts/test.sh never sets it, and under CI it is ignored.
const SkipChromiumEnv = "ENGAGEMENT_SKIP_CHROMIUM"

// ArtifactsEnv is where the test leaves the page and its screenshot
// (default .cache/artifacts under the module root).
const ArtifactsEnv = "ENGAGEMENT_ARTIFACTS"

func chromium(t *testing.T) string {
	t.Helper()
	return testenv.Require(t, ChromiumEnv, SkipChromiumEnv,
		"run the tests with scripts/test.sh, which installs Chromium, or run `export "+ChromiumEnv+"=$(bash scripts/chromium.sh install)`")
}

// artifacts is the directory the browser test writes its screenshot to.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = filepath.Join(publishtest.Root(), ".cache", "artifacts")
	}
	dir = filepath.Join(dir, "report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// seen is what the page did while it loaded, as the browser reported it.
type seen struct {
	mu       sync.Mutex
	requests []string
	problems []string // console errors, exceptions, error log entries
}

func (s *seen) listen(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		s.requests = append(s.requests, e.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			s.problems = append(s.problems, fmt.Sprintf("console.%s: %d args", e.Type, len(e.Args)))
		}
	case *runtime.EventExceptionThrown:
		s.problems = append(s.problems, "exception: "+e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			s.problems = append(s.problems, fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// pageFacts is what the test reads back from the rendered page.
type pageFacts struct {
	Charts []struct {
		ID string  `json:"id"`
		W  float64 `json:"w"`
		H  float64 `json:"h"`
	} `json:"charts"`
	Marks map[string][]mark `json:"marks"`
	Runs  []mark            `json:"runs"`
	Rows  []struct {
		Check string `json:"check"`
		Date  string `json:"date"`
		Cells []struct {
			Job     string `json:"job"`
			Verdict string `json:"verdict"`
		} `json:"cells"`
	} `json:"rows"`
	Lineage [][]string `json:"lineage"`
}

// mark is an element's data-* attributes and class.
type mark struct {
	Class      string `json:"cls"`
	Date       string `json:"date"`
	Generation string `json:"generation"`
	Value      string `json:"value"`
	Job        string `json:"job"`
	Outcome    string `json:"outcome"`
	Bytes      string `json:"bytes"`
}

const readPage = `(() => {
  const data = sel => [...document.querySelectorAll(sel)].map(e => ({...e.dataset, cls: e.getAttribute('class')}));
  return {
    charts: [...document.querySelectorAll('svg.chart')].map(e => { const r = e.getBoundingClientRect(); return {id: e.id, w: r.width, h: r.height}; }),
    marks: {
      events: data('#chart-events .bar, #chart-events .earlier'),
      rates: data('#chart-rates .bar, #chart-rates .earlier'),
      caps: data('#chart-rates .cap'),
      rejected: data('#chart-rates .rejected'),
      files: data('#chart-sizes .file'),
    },
    runs: data('#gate-checks th.run'),
    rows: [...document.querySelectorAll('#gate-checks tr.check')].map(tr => ({
      check: tr.dataset.check, date: tr.dataset.date,
      cells: [...tr.querySelectorAll('td[data-job]')].map(td => ({job: td.dataset.job, verdict: td.textContent})),
    })),
    lineage: [...document.querySelectorAll('#lineage-table tr.lineage')].map(tr => [...tr.cells].map(td => td.textContent)),
  };
})()`

func checkInBrowser(t *testing.T, w world, b storage.Bucket, name, page string) {
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The network is closed here: without these flags Chromium spends the
	// test on background connections that are refused.
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.Flag("disable-extensions", true))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	var s seen
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	if err := chromedp.Listen(bctx, s.listen); err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: page}).String()
	if err := chromedp.Do(bctx, chromedp.Navigate(u), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("load %s: %v", u, err)
	}
	facts, err := chromedp.Run(bctx, chromedp.Evaluate[pageFacts](readPage))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := artifacts(t)
	png := filepath.Join(dir, name+".png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if html, err := os.ReadFile(page); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name+".html"), html, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes)", png, len(shot))

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) > 0 {
		t.Errorf("the page logged errors: %q", s.problems)
	}
	for _, r := range s.requests {
		if r != u {
			t.Errorf("the page requested %s: it must need nothing but itself", r)
		}
	}
	if len(s.requests) == 0 {
		t.Errorf("the browser reported no request at all: the request listener saw nothing")
	}

	// Every chart is drawn with a size.
	if len(facts.Charts) != 3 {
		t.Errorf("%d charts, want 3: %+v", len(facts.Charts), facts.Charts)
	}
	for _, c := range facts.Charts {
		if c.W <= 0 || c.H <= 0 {
			t.Errorf("chart %s is %gx%g px", c.ID, c.W, c.H)
		}
	}

	// The figures: expected.json's counts, the config's cap, the over-cap
	// variant's rate for the rejected attempt.
	var wantEvents, wantRates, wantCaps, wantRejected []string
	for _, d := range fixtureDates {
		wantEvents = append(wantEvents, "bar current "+d+" 2 "+expectedEvents(w.fixture, d), "earlier "+d+" 1 "+expectedEvents(w.fixture, d))
		wantRates = append(wantRates, "bar current "+d+" 2 "+expectedRate(w.fixture, d), "earlier "+d+" 1 "+expectedRate(w.fixture, d))
		wantCaps = append(wantCaps, fmt.Sprintf("cap %s  %g", d, w.capValue))
		wantRejected = append(wantRejected, "rejected "+d+"  "+expectedRate(w.overCap, d)+" cap-bad")
	}
	for _, tc := range []struct {
		name string
		want []string
	}{{"events", wantEvents}, {"rates", wantRates}, {"caps", wantCaps}, {"rejected", wantRejected}} {
		var got []string
		for _, m := range facts.Marks[tc.name] {
			got = append(got, strings.TrimSpace(strings.Join([]string{m.Class, m.Date, m.Generation, m.Value, m.Job}, " ")))
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s chart marks:\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	// Every current file of both tables, with its size from pointer.json.
	var wantFiles, gotFiles []string
	for d, e := range currentPointer(t, b).Dates {
		for _, f := range e.FactFiles {
			wantFiles = append(wantFiles, fmt.Sprintf("file fact %s %d", d, f.Bytes))
		}
		for _, f := range e.CourseDayFiles {
			wantFiles = append(wantFiles, fmt.Sprintf("file course_day %s %d", d, f.Bytes))
		}
	}
	for _, m := range facts.Marks["files"] {
		gotFiles = append(gotFiles, fmt.Sprintf("%s %s %s", m.Class, m.Date, m.Bytes))
	}
	if len(gotFiles) != 4 || !sameSet(gotFiles, wantFiles) {
		t.Errorf("file marks %q, want %q (one file of each table per date)", gotFiles, wantFiles)
	}

	// The gate table: newest run first, the rejection failing exactly the
	// cap on both dates, the publishes failing nothing.
	var runs []string
	for _, r := range facts.Runs {
		runs = append(runs, r.Job+" "+r.Outcome)
	}
	if want := []string{"cap-bad rejected", "pub-2 published", "pub-1 published"}; strings.Join(runs, ",") != strings.Join(want, ",") {
		t.Errorf("gate table runs %q, want %q", runs, want)
	}
	// Each cell as the figures decide it: the cap fails on the over-cap
	// variant's dates, and warns on the fixture's when its rate is over
	// half the cap (the gate's rule); every other check passes.
	want := func(job, check, date string) string {
		if check != gate.CheckUnknownLessonCap {
			return "pass"
		}
		fx := w.fixture
		if job == "cap-bad" {
			fx = w.overCap
		}
		f := fx.Expected.ByDate[dates.MustParse(date)]
		switch rate := gate.Rate(f.Unknown, f.Events); {
		case rate > w.capValue:
			return "FAIL"
		case rate > w.capValue/2:
			return "warn"
		}
		return "pass"
	}
	fails := 0
	for _, row := range facts.Rows {
		if len(row.Cells) != 3 {
			t.Errorf("row %s %s has %d cells, want 3", row.Check, row.Date, len(row.Cells))
			continue
		}
		for _, c := range row.Cells {
			if v := want(c.Job, row.Check, row.Date); c.Verdict != v {
				t.Errorf("%s %s %s: %q, want %q", c.Job, row.Check, row.Date, c.Verdict, v)
			}
			if c.Verdict == "FAIL" {
				fails++
			}
		}
	}
	if fails != len(fixtureDates) {
		t.Errorf("%d failed cells, want %d (the over-cap run's cap on each date)", fails, len(fixtureDates))
	}
	if len(facts.Rows) < 2*len(fixtureDates) {
		t.Errorf("only %d gate rows", len(facts.Rows))
	}

	// The lineage: per date, generation 2 (pub-2) over generation 1 (pub-1),
	// both with the fixture's pins.
	var lineage []string
	for _, cells := range facts.Lineage {
		if len(cells) < 8 {
			t.Fatalf("lineage row %q", cells)
		}
		lineage = append(lineage, strings.Join([]string{cells[0], cells[1], cells[3], cells[4], cells[5], cells[6], cells[7]}, " "))
	}
	var wantLineage []string
	for _, d := range fixtureDates {
		for _, g := range []string{"2 publish pub-2", "1 publish pub-1"} {
			wantLineage = append(wantLineage, fmt.Sprintf("%s %s %s %s %s", d, g, w.fixture.Expected.ManifestID, w.fixture.Expected.EnrollmentSnapshotID, expectedEvents(w.fixture, d)))
		}
	}
	if strings.Join(lineage, "\n") != strings.Join(wantLineage, "\n") {
		t.Errorf("lineage:\n%s\nwant\n%s", strings.Join(lineage, "\n"), strings.Join(wantLineage, "\n"))
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
