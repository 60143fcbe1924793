package job

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/monitor"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// maxFileBytes pages the layout signal: a file above 1 GB means the file
// count stopped following the bytes.
const maxFileBytes = 1 << 30

// A fact file above 4/3 of engagement.targetFileBytes (256 MB at the 192 MB
// default: the top of the band) warns the layout signal.
const oversizeNum, oversizeDen = 4, 3

// monitors collects the figures of one attempt and prints every signal of
// the monitoring table once, at the end, whatever the outcome, so a failed
// run is as visible as a good one.
type monitors struct {
	log      *slog.Logger
	store    pointer.Store
	job      config.Job
	signals  []monitor.Signal
	freshSig *monitor.Signal
	// early: the publish failed before it opened the warehouse, so what
	// readers see was not read (MonitorEarlyFailure).
	early bool
}

func newMonitors(log *slog.Logger, store pointer.Store, job config.Job) *monitors {
	return &monitors{log: log, store: store, job: job}
}

func (m *monitors) add(s monitor.Signal) { m.signals = append(m.signals, s) }

// freshness fails the run before staging when the newest ingest partition is
// older than the bound ingestion promised.
// asOf is the run date: the job's as-of date, never later than today.
func (m *monitors) freshness(ctx context.Context, job config.Job, ingest []dates.Date, asOf dates.Date) error {
	newest := ingest[len(ingest)-1]
	s := monitor.Signal{Name: monitor.RawFreshness, Status: monitor.OK, Figures: map[string]any{
		"newest_ingest_date": newest.String(), "as_of": asOf.String(), "age_days": int(asOf - newest), "max_age_days": job.FreshnessMaxDays,
	}}
	m.freshSig = &s
	err := stale(job, ingest, asOf)
	if err != nil {
		s.Status = monitor.Page
	}
	return err
}

// stale is why raw is stale on asOf (its newest landed ingest date older
// than engagement.freshnessMaxDays), or nil.
func stale(job config.Job, ingest []dates.Date, asOf dates.Date) error {
	newest := ingest[len(ingest)-1]
	if age := int(asOf - newest); job.FreshnessMaxDays > 0 && age > job.FreshnessMaxDays {
		return fmt.Errorf("raw %s is stale: newest ingest_date %s is %d days old on %s, bound %s %d",
			job.Raw, newest, age, asOf, config.KeyFreshnessMaxDays, job.FreshnessMaxDays)
	}
	return nil
}

func (m *monitors) staged(st engine.Staged, figures map[dates.Date]gate.StagedFigures) {
	for _, d := range m.job.Dates {
		f, in := figures[d], st.Stage[d]
		rate := gate.Rate(f.UnknownLessonCount, f.EventCount)
		status := monitor.OK
		switch {
		case rate > m.job.UnknownCap:
			status = monitor.Page
		case rate > m.job.UnknownCap/2:
			status = monitor.Warn
		}
		m.add(monitor.Signal{Name: monitor.UnknownLessonRate, Status: status, Date: d.String(), Figures: map[string]any{
			"rate": rate, "unknown_lesson_count": f.UnknownLessonCount, "event_count": f.EventCount, "cap": m.job.UnknownCap,
		}})
		status = monitor.OK
		if in.InputEvents != f.FactEventSum {
			status = monitor.Page
		}
		m.add(monitor.Signal{Name: monitor.InputVsFact, Status: status, Date: d.String(), Figures: map[string]any{
			"input_events": in.InputEvents, "fact_event_sum": f.FactEventSum,
		}})
		var maxBytes, total int64
		for _, file := range st.FactFiles[d] {
			maxBytes = max(maxBytes, file.Bytes)
			total += file.Bytes
		}
		n := len(st.FactFiles[d])
		status = monitor.OK
		switch {
		case maxBytes > maxFileBytes || n > engine.TargetFiles(total, m.job.TargetFileBytes):
			status = monitor.Page
		case maxBytes > m.job.TargetFileBytes*oversizeNum/oversizeDen:
			// The count is planned from an estimate of the written bytes;
			// keys that compress less than it assumes (hashed learner keys)
			// write fewer, larger files, out of the band readers are tuned
			// for, which the count alone never showed.
			status = monitor.Warn
		}
		m.add(monitor.Signal{Name: monitor.FileLayout, Status: status, Date: d.String(), Figures: map[string]any{
			"fact_files": n, "fact_bytes": total, "max_file_bytes": maxBytes,
			"target_files": engine.TargetFiles(total, m.job.TargetFileBytes), "course_day_files": len(st.CourseDayFiles[d]),
		}})
	}
	m.tasks(st)
}

// skewRatioPage is the max/median task time of the enrollment stage above
// which the skew monitor pages (contract.md, monitors).
const skewRatioPage = 10

// tasks judges the enrollment join stage's tasks. DuckDB runs no tasks, so
// the max/median task ratio and per-task spill of the capstone's table do
// not exist there, and a Spark server whose UI the job cannot reach does
// not show them: the signals say so rather than print a made-up zero.
func (m *monitors) tasks(st engine.Staged) {
	t := st.Tasks
	if t == nil {
		reason := st.TasksUnavailable
		if reason == "" {
			reason = "the engine exposes no per-task durations or spill for the enrollment stage"
		}
		for _, name := range []string{monitor.EnrollmentSkew, monitor.EnrollmentSpill} {
			m.add(monitor.Signal{Name: name, Status: monitor.Unavailable, Figures: map[string]any{
				"engine": m.job.Engine, "reason": reason,
			}})
		}
		return
	}
	status := monitor.OK
	if t.SkewRatio > skewRatioPage {
		status = monitor.Page
	}
	m.add(monitor.Signal{Name: monitor.EnrollmentSkew, Status: status, Figures: map[string]any{
		"stage_id": t.StageID, "attempt": t.Attempt, "tasks": t.Tasks, "max_task_ms": t.MaxMillis,
		"median_task_ms": t.MedianMilli, "ratio": t.SkewRatio, "page_above": skewRatioPage,
		// Where the rows went, for the reader of a page: a loaded cluster
		// stretches times, not records.
		"max_task_records": t.MaxRecords, "median_task_records": t.MedianRecords,
	}})
	// Spill on every task is memory; one task holding most of the
	// stage's spill is a hot key (contract.md).
	status = monitor.OK
	spilled := t.MemoryBytesSpilled + t.DiskBytesSpilled
	if t.Tasks > 0 && t.TasksSpilled == t.Tasks || t.Tasks > 1 && t.MaxTaskBytesSpilled > 0 && 2*t.MaxTaskBytesSpilled > spilled {
		status = monitor.Page
	}
	m.add(monitor.Signal{Name: monitor.EnrollmentSpill, Status: status, Figures: map[string]any{
		"stage_id": t.StageID, "tasks": t.Tasks, "tasks_spilled": t.TasksSpilled,
		"memory_bytes_spilled": t.MemoryBytesSpilled, "disk_bytes_spilled": t.DiskBytesSpilled,
		"max_task_bytes_spilled": t.MaxTaskBytesSpilled,
	}})
}

// visibleReadTimeout bounds the pointer read after a failed publish.
const visibleReadTimeout = 10 * time.Second

// MonitorEarlyFailure prints the closing monitor records of a publish of j
// that failed after its config resolved but before the publisher ran (the
// engine or the warehouse could not be opened, a sink was refused), as a
// later failure prints them: gate_rejection unavailable, dates_in_pointer
// with every date missing, job_result page with the error.
func MonitorEarlyFailure(ctx context.Context, log *slog.Logger, j config.Job, err error) {
	m := newMonitors(log, nil, j)
	m.early = true
	m.finish(ctx, Result{}, err)
}

func (m *monitors) finish(ctx context.Context, res Result, err error) {
	if m.log == nil {
		return
	}
	if m.freshSig != nil {
		monitor.Emit(ctx, m.log, *m.freshSig)
	} else {
		monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.RawFreshness, Status: monitor.Unavailable, Figures: map[string]any{
			"reason": "not judged: the run ended before it listed landed raw partitions", "max_age_days": m.job.FreshnessMaxDays,
		}})
	}
	for _, s := range m.signals {
		monitor.Emit(ctx, m.log, s)
	}
	if len(m.signals) == 0 {
		// Ended before its staged dates were judged: every signal still
		// has its record, so an alert that waits on one (a date's input_vs_fact)
		// sees the run, not a gap.
		why := "not judged: the run ended before its staged dates were judged"
		for _, d := range m.job.Dates {
			for _, name := range slices.Sorted(maps.Keys(monitor.PerDate)) {
				monitor.Emit(ctx, m.log, monitor.Signal{Name: name, Status: monitor.Unavailable, Date: d.String(), Figures: map[string]any{"reason": why}})
			}
		}
		for _, name := range []string{monitor.EnrollmentSkew, monitor.EnrollmentSpill} {
			monitor.Emit(ctx, m.log, monitor.Signal{Name: name, Status: monitor.Unavailable, Figures: map[string]any{"engine": m.job.Engine, "reason": why}})
		}
	}
	if res.UnsettledChecked {
		// Dates whose late events a missed run left uncounted: a warning
		// to restate them, whatever this run's own outcome.
		status := monitor.OK
		if len(res.Unsettled) > 0 {
			status = monitor.Warn
		}
		monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.UnsettledDates, Status: status, Figures: map[string]any{
			"dates": dates.Strings(res.Unsettled), "lateness_days": m.job.LatenessDays, "restatement_horizon_days": m.job.RestatementHorizonDays,
		}})
		// Events no publish of any date counts (a producer's clock): lost
		// with exit 0, so a signal an alert can see, not only a log line.
		status = monitor.OK
		if res.StrayEvents > 0 {
			status = monitor.Warn
		}
		monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.StrayEvents, Status: status, Figures: map[string]any{
			"stray_events": res.StrayEvents, "lateness_days": m.job.LatenessDays,
		}})
	}
	// A run that ended before the staged checks (an error, a signal, a job
	// id taken) was judged by nothing, or by its input checks only: "ok"
	// would say its data passed. A failed check pages whenever it ran.
	gateStatus := monitor.Unavailable
	switch {
	case len(res.Report.Checks) > 0 && !res.Report.Passed:
		gateStatus = monitor.Page
	case res.GateJudged:
		gateStatus = monitor.OK
	}
	gateFigures := map[string]any{"checks_run": len(res.Report.Checks), "failed_checks": res.Report.FailedNames(), "reasons": res.Report.Reasons()}
	if gateStatus == monitor.Unavailable {
		gateFigures["reason"] = "not judged: the run ended before the staged checks read its bytes back"
	}
	monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.GateRejection, Status: gateStatus, Figures: gateFigures})
	visible := res.Pointer
	var unread error // what readers see could not be read after a failure
	// A concurrent job's later generation replaced some of its dates
	// before it confirmed: readers see that job for them, so the monitors
	// judge what pointer.json shows, as after a failure.
	if (!res.Published || len(res.Superseded) > 0) && m.store != nil {
		// What readers see now is what the on-call needs after a failure;
		// bounded, as a store that failed the publish may hang this read
		// too (a frozen endpoint doubled the time to exit).
		// A signal cancelled ctx, and what readers see is what its
		// on-call needs most: read on, within the bound.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), visibleReadTimeout)
		p, _, err := m.store.Load(rctx)
		cancel()
		if err == nil {
			visible = p
		} else if !errors.Is(err, fs.ErrNotExist) {
			unread = err
		}
	}
	if m.early {
		unread = errors.New("not read: the publish failed before it opened the warehouse")
	}
	requested := dates.Strings(m.job.Dates)
	inPointer, missing := []string{}, []string{}
	for _, d := range m.job.Dates {
		if e, ok := visible.Dates[d]; ok && e.JobID == m.job.JobID {
			inPointer = append(inPointer, d.String())
		} else {
			missing = append(missing, d.String())
		}
	}
	status := monitor.OK
	if len(missing) > 0 {
		status = monitor.Page
		// Missing only because a concurrent job's later generation
		// replaced them (exit 0): readers see whole dates, and nothing
		// is to be done but know it.
		if res.Published && len(missing) == len(res.Superseded) {
			status = monitor.Warn
		}
	}
	dfig := map[string]any{"requested": requested, "published_by_this_job": inPointer, "missing": missing}
	if len(res.Superseded) > 0 {
		dfig["superseded"] = dates.Strings(res.Superseded)
	}
	if unread != nil {
		dfig["pointer_unread"] = unread.Error()
	}
	monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.DatesInPointer, Status: status, Figures: dfig})
	result, status := "published", monitor.OK
	if err != nil {
		result, status = "failed", monitor.Page
	}
	fig := map[string]any{"result": result, "job_id": m.job.JobID, "generation": visible.Generation}
	if res.Published {
		// The generation this job wrote, as stdout says; a later one
		// readers see instead is current_generation.
		fig["generation"] = res.Pointer.Generation
		if visible.Generation != res.Pointer.Generation {
			fig["current_generation"] = visible.Generation
		}
	}
	if err != nil {
		fig["error"] = err.Error()
	}
	// How the outcome of a failed pointer write was learned, so the on-call
	// sees the store misbehaving even when the publish happened.
	switch {
	case res.LandedDespite != nil:
		fig["pointer_write"], fig["store_error"] = "landed_despite_error", res.LandedDespite.Error()
	case errors.Is(err, pointer.ErrNotWritten):
		fig["pointer_write"] = "not_written"
	case errors.Is(err, pointer.ErrOutcomeUnknown):
		fig["pointer_write"] = "outcome_unknown"
	}
	if unread != nil {
		// Not generation 0 and no dates: that would tell the on-call
		// readers see nothing, when it is only unknown.
		delete(fig, "generation")
		fig["pointer_unread"] = unread.Error()
	} else {
		jobIDs := map[string]string{}
		for d, e := range visible.Dates {
			jobIDs[d.String()] = e.JobID
		}
		fig["pointer_job_ids"] = jobIDs
	}
	monitor.Emit(ctx, m.log, monitor.Signal{Name: monitor.JobResult, Status: status, Figures: fig})
}
