// Package job runs one publish attempt end to end: inspect the inputs, stage
// both tables under the job id, gate the staged bytes, and only then move the
// pointer. It owns the order of those steps; engines own how a step runs and
// package pointer owns how the pointer moves.
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/redact"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/version"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Attempt is the content of _attempt.json.
type Attempt struct {
	JobID                string   `json:"job_id"`
	WriterVersion        string   `json:"writer_version"`
	Engine               string   `json:"engine"`
	Dates                []string `json:"dates"`
	IngestFrom           string   `json:"ingest_from,omitempty"` // absent with no dates: no window
	IngestTo             string   `json:"ingest_to,omitempty"`
	Raw                  string   `json:"raw"`
	Lessons              string   `json:"lessons"`
	Enrollments          string   `json:"enrollments"`
	ManifestID           string   `json:"manifest_id"`
	EnrollmentSnapshotID string   `json:"enrollment_snapshot_id"`
	UnknownCap           float64  `json:"unknown_cap"`
	HotCourses           []string `json:"hot_courses"`
	OutsideHorizon       bool     `json:"outside_horizon_override"`
	// The job settings that decide which events count and which checks
	// ran: what an audit (and warnUnsettled, later) must not take from
	// today's config.
	LatenessDays           int      `json:"lateness_days"`
	RestatementHorizonDays int      `json:"restatement_horizon_days"`
	FreshnessMaxDays       int      `json:"freshness_max_days"`
	ProhibitedColumns      []string `json:"prohibited_columns"`
	AsOfDate               string   `json:"as_of_date,omitempty"` // engagement.asOfDate or --as-of, when given
	// WorkingDirectory is the one the relative paths above and in Inputs
	// are relative to.
	WorkingDirectory string    `json:"working_directory,omitempty"`
	StartedAt        time.Time `json:"started_at"`
	// BaseGeneration is the generation the attempt started from, the
	// newest committed one (pointer.json's, or the history copy an
	// interrupted write committed past it): a rollback of one of its dates
	// in a later generation refuses its write.
	BaseGeneration int64             `json:"base_generation"`
	Settings       map[string]string `json:"settings"`
	// Inputs is the attempt's one listing: every file it read, with the
	// size and modification time it was read at.
	Inputs inputs.Listing `json:"inputs"`
	// Build names the binary's module, DuckDB and Spark Connect client
	// versions, so an attempt can be tied to the code that wrote it.
	Build version.Build `json:"build"`
}

// Result is what a publish did.
type Result struct {
	JobID     string
	Published bool
	Pointer   pointer.Pointer // after the move, when published
	Report    gate.Report
	// Rejection is the record written when the gate rejected the attempt.
	Rejection *Rejection
	Entries   map[dates.Date]pointer.DateEntry
	// Inputs is the attempt's one listing, once it was made (lineage
	// reports what was read).
	Inputs inputs.Listing
	// LandedDespite is the pointer store's error for this job's write when
	// a re-read showed the write landed anyway (Published is then true).
	LandedDespite error
	// Superseded are this job's dates that a concurrent job's later
	// generation, built on this one's, already names instead.
	Superseded []dates.Date
	// Unsettled are published dates outside this run's dates that left the
	// restatement horizon before a publish read their last lateness
	// partition (warnUnsettled); UnsettledChecked is whether the run got
	// far enough to look.
	Unsettled        []dates.Date
	UnsettledChecked bool
	// StrayEvents are the read window's events that no publish of any date
	// counts (gate.InputFigures.StrayEvents), set with UnsettledChecked.
	StrayEvents int64
	// GateJudged: every check ran, the staged ones on the bytes read back.
	// A run stopped between its input checks and the read-back passed the
	// input checks only: its data was judged by nothing.
	GateJudged bool
}

// Publisher runs attempts. Clock is read at the start of an attempt (the
// attempt record, the freshness check), when the pointer is written (the
// generation's write time) and when a rejection is recorded, never inside
// the transform. Version names the tool in what it writes (version.String()
// when empty). Progress, when set, hears when each phase (inspect, stage,
// gate, pointer) starts and ends; it only reports and never feeds back into
// the run.
type Publisher struct {
	Engine engine.Engine
	// Warehouse is the warehouse's bucket and Store the pointer on it;
	// Inputs reads the inputs (on any backend).
	Warehouse storage.Bucket
	Store     pointer.Store
	Inputs    *inputs.Source
	// Log is the run's logger; its records name no job: the command
	// attaches job_id, command and version to the logger once.
	Log      *slog.Logger
	Clock    func() time.Time
	Version  string
	Progress progress.Reporter
	// ProbeNonce is the process's own, for the S3 probe's object name
	// (warehouse.ProbePath); the command draws it, as it reads the clock,
	// outside the transform.
	ProbeNonce string
}

func (p *Publisher) version() string {
	if p.Version == "" {
		return version.String()
	}
	return p.Version
}

// phase starts a reported phase. The returned func ends it once; later
// calls do nothing, so a caller can both defer it (for early returns) and
// call it where the phase really ends.
func (p *Publisher) phase(name string) func() {
	if p.Progress == nil {
		return func() {}
	}
	end, done := p.Progress.Phase(name), false
	return func() {
		if !done {
			done = true
			end()
		}
	}
}

// step reports what the current phase runs now. Inspect and the gate are
// many reads of every input file: at 30,000 raw files, a minute of
// "inspect" with no step said nothing of where it was (review CR).
func (p *Publisher) step(what string) {
	if p.Progress != nil {
		p.Progress.Step(0, 0, 0, what)
	}
}

// Publish runs one attempt for job. A returned error carries its exit code
// (package exitcode); the pointer moves only when the error is nil.
func (p *Publisher) Publish(ctx context.Context, job config.Job) (res Result, err error) {
	res.JobID = job.JobID
	mon := newMonitors(p.Log, p.Store, job)
	defer func() { mon.finish(ctx, res, err) }()
	claimed := false
	defer func() {
		// A store's refusal is a usage error where it is met first (exit 2,
		// "fix the command; nothing was attempted"). After the attempt
		// record it is not: the credentials were rotated or revoked during
		// the run, staging exists, and at the pointer a generation may
		// even have been committed; a scheduler failing fast on 2 would
		// skip the safe retry. The same refusal from the engine's own
		// writes was exit 1 already.
		if claimed && errors.Is(err, storage.ErrRefused) && exitcode.Code(err) == exitcode.Usage {
			err = exitcode.FailedError(err)
		}
	}()

	if err := job.CheckPublish(); err != nil {
		return res, err
	}
	locs, err := Locations(job)
	if err != nil {
		return res, err
	}
	// Before anything is created: a warehouse inside an input (or holding
	// one) would have the job write into what it reads.
	if err := warehouse.Overlap(locs.all()); err != nil {
		return res, exitcode.UsageError(err)
	}
	// Prepare: the pointer, its history and the warehouse are read before
	// any input is, and on a bucket of many generations that takes a
	// while of its own.
	endPrepare := p.phase("prepare")
	defer endPrepare()
	p.step("read the pointer")
	// The generation this attempt starts from: a rollback of one of its
	// dates written after it is never silently undone by this publish.
	base, ver, err := p.Store.Load(ctx)
	if err != nil {
		return res, fmt.Errorf("read the pointer: %w", err)
	}
	if ver == pointer.NoVersion {
		// Refused before any work, not at the swap after all of it.
		if newest, lost, err := pointer.Lost(ctx, p.Store); err != nil {
			return res, fmt.Errorf("read the pointer: %w", err)
		} else if lost {
			return res, fmt.Errorf("read the pointer: %w", pointer.LostError(locs.Warehouse.String(), newest))
		}
	}
	if err := pointer.OwnCopy(ctx, p.Store, base, warehouse.Witness(p.Warehouse)); err != nil {
		return res, fmt.Errorf("read the pointer: %w", err)
	}
	if err := pointer.Refused(ctx, p.Store); err != nil {
		return res, fmt.Errorf("read the pointer: %w", err)
	}
	// A rollback interrupted before its pointer.json replace had committed
	// before this attempt began: it is not one written after it.
	seen := pointer.Committed(ctx, p.Store, base)
	committed := base
	if seen != base.Generation {
		if committed, err = p.Store.LoadGeneration(ctx, seen); err != nil {
			return res, fmt.Errorf("read the pointer: %w", err)
		}
	}
	p.step("check the job id against the pointer's history")
	published, err := pointer.JobPublished(ctx, p.Store, job.JobID)
	if err != nil {
		return res, fmt.Errorf("check job id %s against the pointer: %w", job.JobID, err)
	}
	if published && committed.Generation > base.Generation && pointer.Names(committed, job.JobID) && !pointer.Names(base, job.JobID) {
		// The job's own write was interrupted after its commit point:
		// published, but not yet what readers see.
		return res, exitcode.PublishedError(fmt.Errorf("job id %s is already published as generation %d (pointer-history/%d.json), which pointer.json does not show yet: its write stopped after the commit; "+
			"the next publish or rollback of any date rolls pointer.json forward to it, and readers see it then; its staging is never rewritten",
			job.JobID, committed.Generation, committed.Generation))
	}
	if published {
		return res, exitcode.PublishedError(fmt.Errorf("job id %s is already published, or used by a rollback (named by the pointer or its history); a job id is used once, and its staging is never rewritten: rerun with a new job id", job.JobID))
	}
	// The records first: a gc expiring the job's generation has written
	// its expiry record (exit 4, published) before it deletes the copies
	// and then the staging, and in between the staging read as an earlier
	// attempt's (exit 2, review CU).
	if err := history.CheckRecords(ctx, p.Warehouse, job.JobID); err != nil {
		return res, err
	}
	p.step("check the warehouse")
	stagingRel := warehouse.StagingDir(job.JobID)
	stagingURI := locs.Warehouse.Join(stagingRel).String()
	if objs, err := p.Warehouse.List(ctx, stagingRel+"/"); err != nil {
		return res, fmt.Errorf("check staging %s: %w", stagingURI, err)
	} else if len(objs) > 0 {
		return res, exitcode.UsageError(fmt.Errorf("job id %s already has a staging prefix %s from an earlier attempt; it is kept for inspection: rerun with a new job id", job.JobID, stagingURI))
	}

	// Before the first write: a store whose create-if-absent depends on the
	// server must show that it refuses a second create, or two writers
	// could take one generation.
	if pr, ok := p.Warehouse.(storage.Prober); ok {
		if err := pr.Probe(ctx, warehouse.ProbePath(job.JobID, p.ProbeNonce)); err != nil {
			return res, fmt.Errorf("warehouse %s: %w", locs.Warehouse, err)
		}
	}

	if len(job.Dates) == 0 {
		return p.rejectNoDates(ctx, job, seen, stagingURI)
	}
	WarnSettings(p.Log, job)
	// One reading of the clock for the window's end and the date checks:
	// two, across midnight, would judge the dates on a later day than the
	// window was cut for.
	now := p.Clock().UTC()
	spec := Spec(job, dates.FromTime(now))
	req := request(locs, spec)
	endPrepare()
	endInspect := p.phase("inspect")
	defer endInspect()
	// One listing for the whole attempt: every later step and the engine
	// read exactly these files, and the listing is checked again before
	// the gate.
	p.step("list raw")
	ingest, raw, partitions, err := p.Inputs.ListRawAll(ctx, req.Raw, req.From, req.To)
	if err != nil {
		return res, err // "read raw …", naming the location
	}
	run, landed, err := checkDates(job, ingest, dates.FromTime(now), p.Log)
	if landed != nil {
		// Before a missing partition's error: stale raw is its likelier
		// cause, and the freshness monitor is ingestion's page. Judged
		// too when the dates are refused (not over, outside the horizon):
		// that refusal, the command's fault, stays the exit (2), and the
		// page still fires.
		if ferr := mon.freshness(ctx, job, landed, run); ferr != nil && exitcode.Code(err) != exitcode.Usage {
			return res, ferr
		}
	}
	if err != nil {
		return res, err
	}
	p.step("list the manifest and enrollment pins")
	if spec.Inputs, err = p.Inputs.ListPins(ctx, ingest, raw, req.Lessons, req.Enrollments); err != nil {
		return res, fmt.Errorf("inspect inputs: %w", err)
	}
	res.Inputs = spec.Inputs
	failpoint.HitCtx(ctx, failpoint.Inspecting)
	in, err := p.inspect(ctx, spec)
	endInspect()
	if err != nil {
		// A file replaced while it was read reads as damage (a footer
		// that is not one): the change is the cause to name, as for Stage.
		if ctx.Err() == nil {
			if verr := p.Inputs.Verify(ctx, req, spec.Inputs); errors.Is(verr, inputs.ErrChanged) {
				return res, fmt.Errorf("job %s: %w (inspect failed on it: %w)", job.JobID, verr, err)
			}
		}
		return res, fmt.Errorf("inspect inputs: %w", err)
	}
	spec.InputEvents = in.Events
	if err := p.checkOwnRows(ctx, job, raw, in, committed); err != nil {
		return res, err
	}
	warnUncounted(p.Log, job, in)
	res.Unsettled, res.UnsettledChecked = p.warnUnsettled(ctx, job, committed, landed, dates.FromTime(now), partitions), true
	res.StrayEvents = in.Figures.StrayEvents

	if err := p.claim(ctx, job, spec, seen, now, stagingURI); err != nil {
		return res, err
	}
	claimed = true
	failpoint.HitCtx(ctx, failpoint.AfterAttempt)

	res.Report = gate.Report{JobID: job.JobID, Dates: dates.Strings(job.Dates), UnknownCap: job.UnknownCap}
	res.Report.Checks = gate.InputChecks(in.Figures)
	res.Report.Finish()
	if !res.Report.Passed {
		res.Rejection, err = p.reject(ctx, job, res.Report, nil)
		return res, err
	}

	endStage := p.phase("stage")
	defer endStage()
	staged, err := p.Engine.Stage(ctx, spec, p.Warehouse, stagingRel)
	endStage()
	if err != nil {
		// An input changed under the attempt can fail the engine first (a
		// removed file, or one rewritten shorter than the size Spark's raw
		// view was resolved with): the changed input is the cause to name,
		// beside the engine's error. Not after a signal: that is the cause.
		if ctx.Err() == nil {
			if verr := p.Inputs.Verify(ctx, req, spec.Inputs); errors.Is(verr, inputs.ErrChanged) {
				return res, fmt.Errorf("job %s: %w (stage failed on it: %w)", job.JobID, verr, err)
			}
		}
		return res, fmt.Errorf("stage job %s: %w", job.JobID, err)
	}
	failpoint.HitCtx(ctx, failpoint.AfterStaging)
	endGate := p.phase("gate")
	defer endGate()
	// The engine wrote the prefix: it is sealed (durable, and on a local
	// disk free of symlinks) before anything reads or names it.
	p.step("seal staging")
	if _, err := p.Warehouse.Seal(ctx, stagingRel+"/"); err != nil {
		return res, fmt.Errorf("stage job %s: %w", job.JobID, err)
	}
	p.step(fmt.Sprintf("inputs unchanged: %d files", spec.Inputs.Files()))
	if err := p.Inputs.Verify(ctx, req, spec.Inputs); err != nil {
		return res, fmt.Errorf("job %s: %w", job.JobID, err)
	}
	p.step("read back")
	figures, err := p.Engine.ReadBack(ctx, p.Warehouse, spec, staged)
	if err != nil {
		endGate()
		return res, fmt.Errorf("gate read-back of job %s: %w", job.JobID, err)
	}
	res.Report.Checks = append(res.Report.Checks, gate.StagedChecks(job.Dates, job.UnknownCap, staged.Stage, figures)...)
	res.Report.Finish()
	res.GateJudged = true
	mon.staged(staged, figures)
	if !res.Report.Passed {
		res.Rejection, err = p.reject(ctx, job, res.Report, &staged)
		endGate()
		return res, err
	}
	err = warehouse.WriteJSON(ctx, p.Warehouse, warehouse.GatePath(job.JobID), res.Report, storage.Cond{})
	endGate()
	if err != nil {
		return res, err
	}
	failpoint.HitCtx(ctx, failpoint.BeforePointer)

	res.Entries = entries(job, staged, figures)
	noRollback := pointer.NoRollbackSince(ctx, p.Store, seen, job.Dates)
	endPointer := p.phase("pointer")
	defer endPointer()
	out, err := pointer.PublishOutcome(ctx, p.Store, pointer.Commit{
		JobID: job.JobID, Entries: res.Entries, WrittenAt: p.Clock().UTC(), WriterVersion: p.version(),
		Check: func(cur pointer.Pointer) error {
			// The job id first: a rollback that took it is that, whatever
			// dates it changed.
			if err := pointer.TakenSince(ctx, p.Store, seen, cur, job.JobID, pointer.OpPublish); err != nil {
				return err
			}
			return noRollback(cur)
		},
	})
	endPointer()
	if err != nil {
		return res, pointerError(job, stagingRel, err)
	}
	res.Published, res.Pointer, res.LandedDespite, res.Superseded = true, out.Pointer, out.LandedDespite, out.Superseded
	if out.LandedDespite != nil {
		p.Log.Warn("the pointer store reported an error for this job's write, and re-reading the pointer and its history shows the write landed: published",
			"generation", out.Pointer.Generation, "store_error", out.LandedDespite.Error())
	}
	if len(out.Superseded) > 0 {
		p.Log.Info("published; a concurrent job's later generation, built on this one, already replaced some of its dates",
			"generation", out.Pointer.Generation, "current_generation", out.Current, "dates", dates.Strings(out.Superseded))
	}
	failpoint.HitCtx(ctx, failpoint.AfterPointer)
	if err := context.Cause(ctx); err != nil {
		// Published all the same: exit 0 promises that pointer.json names
		// the job, and it does; the cancellation came too late to matter.
		p.Log.Warn("a cancellation (a signal) arrived after the pointer write had landed: published",
			"generation", out.Pointer.Generation, "cause", err.Error())
	}
	return res, nil
}

// claim takes the job's staging prefix by creating its attempt record only
// if absent, so two attempts racing on one job id cannot both write into it.
func (p *Publisher) claim(ctx context.Context, job config.Job, spec engine.Spec, base int64, now time.Time, stagingURI string) error {
	record := attemptRecord(job, spec, p.Engine.Name(), p.version(), now)
	record.BaseGeneration = base
	if err := warehouse.WriteJSON(ctx, p.Warehouse, warehouse.AttemptPath(job.JobID), record, storage.Cond{IfAbsent: true}); err != nil {
		if errors.Is(err, storage.ErrPrecondition) {
			return exitcode.UsageError(fmt.Errorf("job id %s: staging prefix %s appeared while starting: another attempt uses this job id", job.JobID, stagingURI))
		}
		return err
	}
	return nil
}

// ListedSpec is the engine's view of job on today with the inputs listed,
// for a command that reads them without publishing (explain).
func ListedSpec(ctx context.Context, src *inputs.Source, job config.Job, today dates.Date) (engine.Spec, error) {
	spec := Spec(job, today)
	locs, err := Locations(job)
	if err != nil {
		return spec, err
	}
	spec.Inputs, err = src.List(ctx, request(locs, spec))
	return spec, err
}

// pointerError says what a failed pointer move means for the orchestrator.
// Every case exits 1, but a race lost to a rollback (6), and keeps the
// staging prefix: the job never deletes staging, and after an unknown
// outcome it may be the published bytes.
func pointerError(job config.Job, stagingRel string, err error) error {
	switch {
	case errors.Is(err, pointer.ErrNotVisible):
		return fmt.Errorf("move pointer for job %s: not visible to readers: %w; staging %s is kept", job.JobID, err, stagingRel)
	case errors.Is(err, pointer.ErrRaced):
		// The swap may have rolled another writer's committed generation
		// forward first, so "unchanged" would not be true: nothing of this job is.
		return fmt.Errorf("move pointer for job %s: not published, nothing of this job is in the pointer; staging %s is kept: %w", job.JobID, stagingRel, err)
	case errors.Is(err, pointer.ErrBrokenChain):
		return fmt.Errorf("move pointer for job %s: refused, nothing written: %w; staging %s is kept", job.JobID, err, stagingRel)
	case errors.Is(err, pointer.ErrOutcomeUnknown):
		return fmt.Errorf("move pointer for job %s: outcome unknown: the pointer write or the re-read that confirms it failed, so this job may or may not be published; "+
			"run engagement status to see which job each date names; staging %s is kept; a rerun with a new job id is safe either way: %w", job.JobID, stagingRel, err)
	case errors.Is(err, pointer.ErrStuck):
		return fmt.Errorf("move pointer for job %s: not published, the pointer is unchanged and staging %s is kept; every publish and rollback fails the same way until pointer.json can be replaced (docs/runbook.md): %w", job.JobID, stagingRel, err)
	case errors.Is(err, pointer.ErrNotWritten):
		return fmt.Errorf("move pointer for job %s: not published, the pointer is unchanged and staging %s is kept; rerun with a new job id (safe): %w", job.JobID, stagingRel, err)
	}
	return fmt.Errorf("move pointer for job %s: not published; staging %s is kept; rerun with a new job id (safe): %w", job.JobID, stagingRel, err)
}

// Spec turns a job into the engine's view of it on the clock's UTC date
// today. The ingest read window is [min(dates), max(dates) + latenessDays]:
// wide enough for events that land after their event date, and no wider;
// and it ends by yesterday (or the last date, never before it). Today's
// partition is still being written: a file landing in it during the run
// failed the attempt's second listing (exit 1, on every retry while
// ingestion streams), and a rerun read other events. Its late events are
// counted by the next day's run, which restates the date again inside the
// horizon (latenessDays <= H-1), as for every lateness partition.
func Spec(job config.Job, today dates.Date) engine.Spec {
	s := engine.Spec{
		JobID:                job.JobID,
		Dates:                job.Dates,
		Raw:                  job.Raw,
		Lessons:              job.Lessons,
		Enrollments:          job.Enrollments,
		ManifestID:           job.ManifestID,
		EnrollmentSnapshotID: job.EnrollmentSnapshotID,
		HotCourses:           job.HotCourses,
		SaltBuckets:          job.SaltBuckets,
		ProhibitedColumns:    job.ProhibitedColumns,
		TargetFileBytes:      job.TargetFileBytes,
		Settings:             job.DuckDB,
	}
	if job.Engine == "spark" {
		s.Settings = job.Spark
	}
	if len(job.Dates) > 0 {
		last := job.Dates[len(job.Dates)-1]
		s.IngestFrom = job.Dates[0]
		s.IngestTo = last.AddDays(job.LatenessDays)
		if ended := max(today.AddDays(-1), last); s.IngestTo > ended {
			s.IngestTo = ended
		}
		s.LatenessDays = job.LatenessDays
	}
	return s
}

func attemptRecord(job config.Job, spec engine.Spec, engineName, writer string, now time.Time) Attempt {
	a := Attempt{
		JobID: job.JobID, WriterVersion: writer, Engine: engineName, Dates: dates.Strings(job.Dates),
		Raw: job.Raw, Lessons: job.Lessons, Enrollments: job.Enrollments,
		ManifestID: job.ManifestID, EnrollmentSnapshotID: job.EnrollmentSnapshotID,
		UnknownCap: job.UnknownCap, HotCourses: job.HotCourses, OutsideHorizon: job.AllowOutsideHorizon,
		LatenessDays: job.LatenessDays, RestatementHorizonDays: job.RestatementHorizonDays, FreshnessMaxDays: job.FreshnessMaxDays,
		ProhibitedColumns: nonNil(job.ProhibitedColumns),
		StartedAt:         now, Settings: redact.Settings(spec.Settings), Inputs: spec.Inputs, Build: version.Get(),
	}
	if job.AsOfSet {
		a.AsOfDate = job.AsOf.String()
	}
	// Not the transform's: where this process runs, for the record.
	if wd, err := os.Getwd(); err == nil {
		a.WorkingDirectory = wd
	}
	if len(job.Dates) > 0 {
		a.IngestFrom, a.IngestTo = spec.IngestFrom.String(), spec.IngestTo.String()
	}
	return a
}

func entries(job config.Job, st engine.Staged, figures map[dates.Date]gate.StagedFigures) map[dates.Date]pointer.DateEntry {
	out := map[dates.Date]pointer.DateEntry{}
	for _, d := range job.Dates {
		f := figures[d]
		out[d] = pointer.DateEntry{
			JobID:                job.JobID,
			ManifestID:           job.ManifestID,
			EnrollmentSnapshotID: job.EnrollmentSnapshotID,
			FactFiles:            nonNil(st.FactFiles[d]),
			CourseDayFiles:       nonNil(st.CourseDayFiles[d]),
			EventCount:           f.EventCount,
			UnknownLessonCount:   f.UnknownLessonCount,
			UnknownLessonRate:    gate.Rate(f.UnknownLessonCount, f.EventCount),
			GateReport:           warehouse.GatePath(job.JobID),
		}
	}
	return out
}

// nonNil is s, or an empty slice for nil: a JSON list, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WarnSettings logs the job settings a run accepts but a data engineer
// should hear about: a file target far below the band, and a lateness that
// does not fit the restatement horizon. explain, which publishes nothing,
// says them too, before the publish it precedes.
func WarnSettings(log *slog.Logger, job config.Job) {
	if job.TargetFileBytes < 1<<20 {
		log.Warn("engagement.targetFileBytes is far below the 128-256 MB band: files of a few rows each, at most one a fact row and "+
			fmt.Sprint(engine.MaxFilesPerDate)+" a date", "target_file_bytes", job.TargetFileBytes)
	}
	if job.LatenessDays < job.RestatementHorizonDays-1 {
		// Each date counts its events from its own partitions, d to
		// d+latenessDays: the horizon's oldest dates then cannot see the
		// late events in its newest partitions, though they may be restated.
		log.Warn("engagement.latenessDays is below engagement.restatementHorizonDays - 1: a date restated inside the horizon counts events at most latenessDays late, so the newest partitions' late events of its oldest dates are not counted",
			"lateness_days", job.LatenessDays, "restatement_horizon_days", job.RestatementHorizonDays)
	}
	if job.LatenessDays > job.RestatementHorizonDays-1 {
		// The other way round: a date leaves the horizon before its last
		// lateness partition has landed, so the events that land there
		// after its last restatement are never counted.
		log.Warn("engagement.latenessDays is above engagement.restatementHorizonDays - 1: a date leaves the horizon before its last lateness partition has landed, so its events that land later are never counted (unless it is restated with --allow-outside-horizon)",
			"lateness_days", job.LatenessDays, "restatement_horizon_days", job.RestatementHorizonDays)
	}
}
