package job_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// recorder keeps what a publish reported, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
	dates  []dateReport
}

type dateReport struct {
	done, total int
	rows        int64
	share       float64
}

func (r *recorder) Dates(done, total int, rows int64, share float64) {
	r.mu.Lock()
	r.dates = append(r.dates, dateReport{done, total, rows, share})
	r.events = append(r.events, fmt.Sprintf("dates %d", len(r.dates)-1))
	r.mu.Unlock()
}

func (r *recorder) add(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }

func (r *recorder) Phase(name string) func() {
	r.add("start " + name)
	return func() { r.add("end " + name) }
}

func (r *recorder) Step(done, total int, rows int64, what string) {
	if what != "" {
		r.add("step " + what)
		return
	}
	// A step with no name ends the last one: all of total are done.
	r.add(fmt.Sprintf("done %d/%d", done, total))
}

// TestProgressReportsPhasesAndSteps: a publish reports its five phases in
// order, each ended, and the DuckDB stage reports a step per date written.
func TestProgressReportsPhasesAndSteps(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	j := fx.Job(t, t.TempDir(), "progress-1", "2026-03-02", "2026-03-03")
	e, err := duckdb.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rec := &recorder{}
	e.SetProgress(rec)
	wh, store := publishtest.Warehouse(j.Warehouse)
	p := &job.Publisher{Engine: e, Warehouse: wh, Store: store, Inputs: publishtest.Source(), Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Clock: func() time.Time { return time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC) }, Progress: rec}
	if _, err := p.Publish(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, ev := range rec.events {
		if !strings.HasPrefix(ev, "step ") && !strings.HasPrefix(ev, "dates ") && !strings.HasPrefix(ev, "done ") {
			phases = append(phases, ev)
		}
	}
	want := []string{"start prepare", "end prepare", "start inspect", "end inspect", "start stage", "end stage", "start gate", "end gate", "start pointer", "end pointer"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	for _, s := range []string{"step aggregate to the fact grain, join manifest and enrollments", "step write fact_lesson_engagement 2026-03-02", "step write course_day 2026-03-03"} {
		if !slices.Contains(rec.events, s) {
			t.Errorf("no %q in %v", s, rec.events)
		}
	}
	// DuckDB writes a date at a time: each is reported done as soon as it
	// is written, before the next date's write starts.
	order := []string{"step write fact_lesson_engagement 2026-03-02", "dates 1", "step write fact_lesson_engagement 2026-03-03",
		"dates 2", "step write course_day 2026-03-02", "dates 3", "step write course_day 2026-03-03", "dates 4"}
	last := -1
	for _, ev := range order {
		i := slices.Index(rec.events, ev)
		if i <= last {
			t.Errorf("%q at %d, want it after %d: %v", ev, i, last, rec.events)
		}
		last = i
	}
	// Before any input is read, the pointer, its history and the warehouse
	// are; on a bucket of many generations that is a wait of its own.
	within(t, rec.events, "prepare", "step read the pointer", "step check the job id against the pointer's history", "step check the warehouse")
	// Inspect and the gate name each of their reads, in order, inside their
	// own phase: at 30,000 files each takes long enough to need it. The
	// raw files of the window's two partitions (ingest dates 2026-03-02
	// and 03-03; the fixture's 03-01 lies before it), one manifest file
	// and one enrollment file.
	within(t, rec.events, "inspect", "step list raw", "step list the manifest and enrollment pins", "step file heads: 4 files",
		"step raw footers: 2 files", "step column pages: 4 files", "step duckdb inspect", "step raw columns: 2 files",
		"step event identity and input counts: 2 files", "step manifest and enrollment pins")
	within(t, rec.events, "gate", "step seal staging", "step inputs unchanged: 4 files", "step read back",
		"step read back 2026-03-02", "step read back 2026-03-03", "done 2/2")
	checkDateReports(t, rec.dates, fx.Expected.ByDate[j.Dates[0]].FactRows, fx.Expected.ByDate[j.Dates[1]].FactRows)
	// The rows written so far: each date's fact rows, then its course_day
	// rows (one a course), as the generator counts them.
	f1, f2 := fx.Expected.ByDate[j.Dates[0]].FactRows, fx.Expected.ByDate[j.Dates[1]].FactRows
	c1, c2 := int64(len(fx.Expected.ByDateCourse[j.Dates[0]])), int64(len(fx.Expected.ByDateCourse[j.Dates[1]]))
	for i, want := range []int64{0, f1, f1 + f2, f1 + f2 + c1, f1 + f2 + c1 + c2} {
		if i < len(rec.dates) && rec.dates[i].rows != want {
			t.Errorf("date report %d: %d rows written, want %d (all: %v)", i, rec.dates[i].rows, want, rec.dates)
		}
	}
}

// within checks that steps were reported in this order between the start
// and the end of phase.
func within(t *testing.T, events []string, phase string, steps ...string) {
	t.Helper()
	start, end := slices.Index(events, "start "+phase), slices.Index(events, "end "+phase)
	last := start
	for _, s := range steps {
		i := slices.Index(events[last+1:], s)
		if i < 0 || last+1+i > end {
			t.Errorf("no %q after event %d within phase %s: %v", s, last, phase, events)
			continue
		}
		last += 1 + i
	}
}

// checkDateReports: the stage reports no date done before both its tables
// are written, a share 0 before any write, and shares in proportion to each
// date's fact rows (the generator's count), so the time-left estimate
// weighs a big date more than a small one.
func checkDateReports(t *testing.T, got []dateReport, rows1, rows2 int64) {
	t.Helper()
	// The start, fact for each date, then course_day for each date.
	if len(got) != 5 {
		t.Fatalf("date reports %v, want 5", got)
	}
	for i, done := range []int{0, 0, 0, 1, 2} {
		if got[i].done != done || got[i].total != 2 {
			t.Errorf("report %d: dates %d/%d, want %d/2 (all: %v)", i, got[i].done, got[i].total, done, got)
		}
	}
	if got[0].share != 0 || got[4].share != 1 {
		t.Errorf("shares start at %v and end at %v, want 0 and 1", got[0].share, got[4].share)
	}
	first := float64(rows1) / float64(rows1+rows2)
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	// The first date's part of each table's writes, whatever the tables weigh.
	if fact := got[1].share / got[2].share; !near(fact, first) {
		t.Errorf("after the first fact date %.6f of the fact writes, want %.6f (fact rows %d of %d)", fact, first, rows1, rows1+rows2)
	}
	if cd := (got[3].share - got[2].share) / (1 - got[2].share); !near(cd, first) {
		t.Errorf("after the first course_day date %.6f of the course_day writes, want %.6f", cd, first)
	}
}
