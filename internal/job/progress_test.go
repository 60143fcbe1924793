package job_test

import (
	"context"
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
}

func (r *recorder) add(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }

func (r *recorder) Phase(name string) func() {
	r.add("start " + name)
	return func() { r.add("end " + name) }
}

func (r *recorder) Step(done, total int, rows int64, what string) {
	if what != "" {
		r.add("step " + what)
	}
}

// TestProgressReportsPhasesAndSteps: a publish reports its four phases in
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
		if !strings.HasPrefix(ev, "step ") {
			phases = append(phases, ev)
		}
	}
	want := []string{"start inspect", "end inspect", "start stage", "end stage", "start gate", "end gate", "start pointer", "end pointer"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	for _, s := range []string{"step aggregate to the fact grain, join manifest and enrollments", "step write fact_lesson_engagement 2026-03-02", "step write course_day 2026-03-03"} {
		if !slices.Contains(rec.events, s) {
			t.Errorf("no %q in %v", s, rec.events)
		}
	}
}
