package job

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Rejection is the content of rejections/job_id=<id>.json: what a person
// needs to act on a failed gate without opening the staging prefix, which
// gc deletes after --min-age while this record stays.
type Rejection struct {
	JobID string `json:"job_id"`
	// RejectedAt is the Publisher's clock when the record was written.
	RejectedAt           time.Time    `json:"rejected_at"`
	ManifestID           string       `json:"manifest_id"`
	EnrollmentSnapshotID string       `json:"enrollment_snapshot_id"`
	Reasons              string       `json:"reasons"`
	Failed               []gate.Check `json:"failed_checks"`
	// TopUnknownLessons holds, for each date whose unknown_lesson_cap
	// check failed (the cap is per date), the unknown lesson_ids with the
	// most events on that date, at most gate.TopUnknownLessons, ordered by
	// events descending then lesson_id, each cut to gate.MaxRecordedIDBytes.
	// Absent when the cap passed.
	TopUnknownLessons map[string][]gate.LessonCount `json:"top_unknown_lessons,omitempty"`
	// TopUnknownLessonsError says why the lessons could not be listed; the
	// rejection stands either way.
	TopUnknownLessonsError string `json:"top_unknown_lessons_error,omitempty"`
	Report                 string `json:"gate_report"`
}

// WriteTable prints the failed checks and the top unknown lessons for a
// person (gate.WriteFailed).
func (r Rejection) WriteTable(w io.Writer) error {
	return gate.WriteFailed(w, r.JobID, r.Failed, r.TopUnknownLessons)
}

// reject records a failed gate: the report in the staging prefix (kept for a
// human to look at) and a rejection record the orchestrator can show. With
// the staged files at hand and the unknown-lesson cap failed, it asks the
// engine for the top unknown lessons of those dates: one small query, on
// the rejected path only.
func (p *Publisher) reject(ctx context.Context, job config.Job, r gate.Report, staged *engine.Staged) (*Rejection, error) {
	rejected := fmt.Errorf("gate rejected job %s: %s", job.JobID, r.Reasons())
	rej := &Rejection{
		JobID: job.JobID, ManifestID: job.ManifestID, EnrollmentSnapshotID: job.EnrollmentSnapshotID,
		Reasons: r.Reasons(), Failed: r.Failed(), Report: warehouse.GatePath(job.JobID),
	}
	if err := warehouse.WriteJSON(ctx, p.Warehouse, warehouse.GatePath(job.JobID), r, storage.Cond{}); err != nil {
		return rej, unrecorded(ctx, rejected, warehouse.GatePath(job.JobID), err)
	}
	if capped := r.CapFailedDates(); staged != nil && len(capped) > 0 {
		if err := p.topUnknown(ctx, rej, *staged, capped); err != nil {
			return nil, err
		}
	}
	rej.RejectedAt = p.Clock().UTC()
	if err := warehouse.WriteJSON(ctx, p.Warehouse, warehouse.RejectionPath(job.JobID), rej, storage.Cond{}); err != nil {
		return rej, unrecorded(ctx, rejected, warehouse.RejectionPath(job.JobID), err)
	}
	return rej, exitcode.GateError(rejected)
}

// rejectNoDates is the gate's check 8 on an empty date list: a list given
// but empty (a scheduler's computation that found no dates) would publish
// nothing and exit 0, which a caller reads as "published". It is recorded
// as any rejection is (the attempt record claims the job id first), before
// an input is listed: there is no read window to list.
func (p *Publisher) rejectNoDates(ctx context.Context, job config.Job, base int64, stagingURI string) (Result, error) {
	res := Result{JobID: job.JobID}
	now := p.Clock().UTC()
	if err := p.claim(ctx, job, Spec(job, dates.FromTime(now)), base, now, stagingURI); err != nil {
		return res, err
	}
	res.Report = gate.Report{JobID: job.JobID, Dates: []string{}, UnknownCap: job.UnknownCap}
	res.Report.Checks = gate.StagedChecks(nil, job.UnknownCap, nil, nil)
	res.Report.Finish()
	var err error
	res.Rejection, err = p.reject(ctx, job, res.Report, nil)
	return res, err
}

// unrecorded is a rejection whose record could not be written. It is
// still exit 3: the gate's verdict stands, and a retry meets the same
// data (the write's own error was exit 1 on disk and exit 2 on S3 for one
// stray object in the record's place). A signal's cancellation stays what
// it is.
func unrecorded(ctx context.Context, rejected error, path string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return exitcode.GateError(fmt.Errorf("%w; its record %s could not be written: %v", rejected, path, err))
}

// topUnknown fills rej's top unknown lessons of the dates capped. An engine
// that cannot list them costs the record that list, not the rejection: the
// reason is recorded and logged. A cancelled run stops here.
func (p *Publisher) topUnknown(ctx context.Context, rej *Rejection, staged engine.Staged, capped []string) error {
	ds := make([]dates.Date, 0, len(capped))
	for _, s := range capped {
		d, err := dates.Parse(s)
		if err != nil {
			return fmt.Errorf("gate report date %q: %w", s, err)
		}
		ds = append(ds, d)
	}
	top, err := p.Engine.UnknownLessons(ctx, p.Warehouse, staged, ds, gate.TopUnknownLessons)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("list unknown lessons of job %s: %w", rej.JobID, ctx.Err())
		}
		rej.TopUnknownLessonsError = err.Error()
		p.Log.Warn("rejected; the top unknown lessons could not be listed", "error", err.Error())
		return nil
	}
	// The engines order in SQL; sorting again is free and keeps the record
	// in one order whatever an engine returns.
	rej.TopUnknownLessons = map[string][]gate.LessonCount{}
	for _, d := range ds {
		l := nonNil(top[d])
		gate.SortLessons(l)
		gate.Bound(l)
		rej.TopUnknownLessons[d.String()] = l
	}
	return nil
}
