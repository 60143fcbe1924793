package job_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/monitor"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage"
)

type line struct {
	Msg     string         `json:"msg"`
	Signal  string         `json:"signal"`
	Domain  string         `json:"domain"`
	Status  string         `json:"status"`
	Date    string         `json:"date"`
	Figures map[string]any `json:"figures"`
}

func publishLogged(t *testing.T, j config.Job) ([]line, error) {
	t.Helper()
	r := publishWith(t, localStore(j.Warehouse), j)
	return r.lines, r.err
}

// published is one in-process publish and what it logged.
type published struct {
	result job.Result
	err    error
	log    string
	lines  []line // the monitor lines
}

// jobResult returns the figures of the job_result monitor line.
func (p published) jobResult() map[string]any {
	for _, l := range p.lines {
		if l.Signal == monitor.JobResult {
			return l.Figures
		}
	}
	return nil
}

// publishWith runs one in-process publish against store and keeps its log.
// localStore is the pointer on a local warehouse, as publish opens it.
func localStore(dir string) *objstore.Store {
	_, s := publishtest.Warehouse(dir)
	return s
}

func publishWith(t *testing.T, store pointer.Store, j config.Job) published {
	t.Helper()
	return publishWrapped(t, store, j, nil)
}

// publishWrapped is publishWith with the DuckDB engine wrapped by wrap.
func publishWrapped(t *testing.T, store pointer.Store, j config.Job, wrap func(*duckdb.Engine) engine.Engine) published {
	t.Helper()
	return publishCtx(t, context.Background(), store, j, wrap)
}

// publishCtx is publishWrapped under ctx.
func publishCtx(t *testing.T, ctx context.Context, store pointer.Store, j config.Job, wrap func(*duckdb.Engine) engine.Engine) published {
	t.Helper()
	e, err := duckdb.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var eng engine.Engine = e
	if wrap != nil {
		eng = wrap(e)
	}
	var buf bytes.Buffer
	wh, _ := publishtest.Warehouse(j.Warehouse)
	p := &job.Publisher{Engine: eng, Warehouse: wh, Store: store, Inputs: publishtest.Source(), Log: slog.New(slog.NewJSONHandler(&buf, nil)),
		Clock: func() time.Time { return time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC) }}
	res, perr := p.Publish(ctx, j)
	out := published{result: res, err: perr, log: buf.String()}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Text())
		}
		if l.Msg == "monitor" {
			out.lines = append(out.lines, l)
		}
	}
	return out
}

// TestMonitorLines checks that a run prints every signal of the capstone's
// monitoring table with its failure domain, per date where the table says so.
func TestMonitorLines(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	lines, err := publishLogged(t, fx.Job(t, t.TempDir(), "mon-1", "2026-03-02", "2026-03-03"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range lines {
		count[l.Signal]++
		if l.Domain != monitor.Domains[l.Signal] || l.Domain == "" {
			t.Errorf("%s: domain %q, want %q", l.Signal, l.Domain, monitor.Domains[l.Signal])
		}
		if l.Signal == monitor.InputVsFact && l.Figures["input_events"] != l.Figures["fact_event_sum"] {
			t.Errorf("input_vs_fact %s: %v", l.Date, l.Figures)
		}
		if l.Signal == monitor.JobResult && (l.Status != monitor.OK || l.Figures["result"] != "published") {
			t.Errorf("job_result %s %v", l.Status, l.Figures)
		}
	}
	for name := range monitor.Domains {
		want := 1
		if monitor.PerDate[name] {
			want = 2
		}
		if count[name] != want {
			t.Errorf("signal %s printed %d times, want %d", name, count[name], want)
		}
	}
}

func TestMonitorLinesOnRejection(t *testing.T) {
	fx := publishtest.LoadFixture(t, "over-cap")
	lines, err := publishLogged(t, fx.Job(t, t.TempDir(), "mon-bad", "2026-03-02", "2026-03-03"))
	if err == nil {
		t.Fatal("over-cap publish succeeded")
	}
	seen := map[string]line{}
	for _, l := range lines {
		seen[l.Signal] = l
	}
	if l := seen[monitor.JobResult]; l.Status != monitor.Page || l.Figures["result"] != "failed" {
		t.Errorf("job_result %+v, want page/failed", l)
	}
	g := seen[monitor.GateRejection]
	failed, _ := g.Figures["failed_checks"].([]any)
	if g.Status != monitor.Page || len(failed) == 0 || failed[0] != gate.CheckUnknownLessonCap {
		t.Errorf("gate_rejection %+v, want page naming %s", g, gate.CheckUnknownLessonCap)
	}
	if l := seen[monitor.UnknownLessonRate]; l.Status != monitor.Page {
		t.Errorf("unknown_lesson_rate status %s, want page", l.Status)
	}
	if l := seen[monitor.DatesInPointer]; l.Status != monitor.Page {
		t.Errorf("dates_in_pointer status %s, want page", l.Status)
	}
}

// withTasks is the DuckDB engine with the enrollment stage's task figures
// an engine that runs tasks (Spark, on a cluster) would report.
type withTasks struct {
	*duckdb.Engine
	tasks *engine.StageTasks
}

func (w withTasks) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, dir string) (engine.Staged, error) {
	st, err := w.Engine.Stage(ctx, spec, wh, dir)
	st.Tasks = w.tasks
	return st, err
}

// TestTaskMonitors: the skew and spill signals judge the task figures the
// engine reports (pages above a ratio of 10 and when every task spilled),
// and say unavailable, with the reason, when it reports none.
func TestTaskMonitors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tasks       *engine.StageTasks
		skew, spill string
	}{
		{"even", &engine.StageTasks{Tasks: 8, MaxMillis: 300, MedianMilli: 100, SkewRatio: 3, TasksSpilled: 2}, monitor.OK, monitor.OK},
		{"skewed", &engine.StageTasks{Tasks: 8, MaxMillis: 1200, MedianMilli: 100, SkewRatio: 12, MaxRecords: 9000, MedianRecords: 700}, monitor.Page, monitor.OK},
		{"spill everywhere", &engine.StageTasks{Tasks: 8, MaxMillis: 300, MedianMilli: 100, SkewRatio: 3, TasksSpilled: 8, DiskBytesSpilled: 1 << 30, MaxTaskBytesSpilled: 1 << 27}, monitor.OK, monitor.Page},
		// One task holds most of the stage's spill: a hot key, though its
		// time did not stand out.
		{"one task's spill dominates", &engine.StageTasks{Tasks: 8, MaxMillis: 300, MedianMilli: 100, SkewRatio: 3, TasksSpilled: 3, DiskBytesSpilled: 1000, MaxTaskBytesSpilled: 900}, monitor.OK, monitor.Page},
		{"spill spread over some", &engine.StageTasks{Tasks: 8, MaxMillis: 300, MedianMilli: 100, SkewRatio: 3, TasksSpilled: 3, DiskBytesSpilled: 1000, MaxTaskBytesSpilled: 400}, monitor.OK, monitor.OK},
		{"none", nil, monitor.Unavailable, monitor.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, "")
			j := fx.Job(t, t.TempDir(), "tasks-1", "2026-03-02")
			r := publishWrapped(t, localStore(j.Warehouse), j, func(e *duckdb.Engine) engine.Engine { return withTasks{e, tc.tasks} })
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := map[string]line{}
			for _, l := range r.lines {
				got[l.Signal] = l
			}
			skew, spill := got[monitor.EnrollmentSkew], got[monitor.EnrollmentSpill]
			if skew.Status != tc.skew || spill.Status != tc.spill {
				t.Errorf("skew %s %v, spill %s %v; want %s, %s", skew.Status, skew.Figures, spill.Status, spill.Figures, tc.skew, tc.spill)
			}
			if tc.tasks != nil && (skew.Figures["ratio"] != tc.tasks.SkewRatio ||
				skew.Figures["max_task_records"] != float64(tc.tasks.MaxRecords) || skew.Figures["median_task_records"] != tc.tasks.MedianRecords || spill.Figures["tasks_spilled"] != float64(tc.tasks.TasksSpilled)) {
				t.Errorf("figures: skew %v, spill %v", skew.Figures, spill.Figures)
			}
			if tc.tasks == nil && skew.Figures["reason"] == "" {
				t.Errorf("unavailable without a reason: %v", skew.Figures)
			}
		})
	}
}

// TestMonitorLinesAfterASignal: a run cancelled (a signal) before the gate
// still says what readers see, read with the signal's context set aside,
// not "pointer_unread: context canceled"; and its gate signal is
// unavailable, not ok: nothing was checked.
func TestMonitorLinesAfterASignal(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	j := fx.Job(t, t.TempDir(), "first", "2026-03-02", "2026-03-03")
	store := localStore(j.Warehouse)
	if r := publishWith(t, store, j); r.err != nil {
		t.Fatal(r.err)
	}
	j.JobID = "cancelled"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := publishCtx(t, ctx, store, j, nil)
	if r.err == nil {
		t.Fatal("a cancelled publish succeeded")
	}
	fig := r.jobResult()
	if _, unread := fig["pointer_unread"]; unread || fig["pointer_job_ids"] == nil {
		t.Errorf("job_result %v, want the pointer's job ids (first), read despite the signal", fig)
	}
	for _, l := range r.lines {
		if l.Signal == monitor.GateRejection && l.Status != monitor.Unavailable {
			t.Errorf("gate_rejection %s with %v checks run, want unavailable", l.Status, l.Figures["checks_run"])
		}
	}

	// Cancelled once staged, before the read-back: the input checks ran
	// and passed, the staged ones never did. Still unavailable: it was
	// "ok", which says the data passed.
	j.JobID = "cancelled-staged"
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	defer failpoint.SetHook(failpoint.AfterStaging, cancel)()
	r = publishCtx(t, ctx, store, j, nil)
	if r.err == nil {
		t.Fatal("a publish cancelled after staging succeeded")
	}
	var seen bool
	for _, l := range r.lines {
		if l.Signal == monitor.GateRejection {
			seen = true
			if n, _ := l.Figures["checks_run"].(float64); l.Status != monitor.Unavailable || n == 0 {
				t.Errorf("gate_rejection %s with %v checks run, want unavailable after the input checks", l.Status, l.Figures["checks_run"])
			}
		}
	}
	if !seen {
		t.Error("no gate_rejection record")
	}
}
