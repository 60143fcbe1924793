// Package report builds a person's view of a warehouse over its retained
// history and renders it as one self-contained HTML page: per date, the
// events and the unknown-lesson rate (against the cap its gate used) in
// every retained generation, the current files against the 128-256 MB
// band, the last runs' gate checks, and each date's lineage. It only reads:
// the pointer through pointer.Store, the history through package history,
// and the gate reports and rejection records through storage.Bucket. The
// page depends on the warehouse alone (no clock, no random ids), so the
// same warehouse always renders the same bytes.
package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// DefaultRuns is how many runs the gate table shows: enough to see a
// rejection and the publishes around it, narrow enough to read.
const DefaultRuns = 8

// The file-size band the engines aim at (engine.DefaultTargetFileBytes,
// 192 MB, sits inside it).
const (
	BandLowBytes  = 128 << 20
	BandHighBytes = 256 << 20
)

// Model is everything the page shows.
type Model struct {
	Warehouse string
	// Generation is the current pointer's; UpdatedBy and WrittenAt its job
	// and time.
	Generation int64
	UpdatedBy  string
	WrittenAt  time.Time
	Dates      []Date
	// Runs are the last runs, newest first: retained publish generations
	// and rejected attempts.
	Runs []Run
	// Checks are the gate table's rows: every (check, date) some shown run
	// reported, in the order the newest such run reported them.
	Checks   []CheckKey
	Expiries []history.Expiry
	// Notes say what the page could not show and why (a gate report gc
	// removed, a record that does not decode).
	Notes []string
}

// Date is one event date: its current entry and every retained change.
type Date struct {
	Date dates.Date
	// Changes are the retained generations that changed this date, newest
	// first; Changes[0] is what readers see now (when Published).
	Changes   []Change
	Published bool
	Files     []File // the current entry's files, both tables
	// Rejected are the unknown-lesson rates of the rejected attempts on
	// record (every rejection record, not only the last runs) on this date,
	// from their gate reports or, when gc removed those, their records.
	Rejected []RejectedRate
}

// PublishedDates counts the dates readers see. Dates holds, besides, those
// only in history or only ever rejected, which the charts show too.
func (m Model) PublishedDates() int {
	n := 0
	for _, d := range m.Dates {
		if d.Published {
			n++
		}
	}
	return n
}

// Change is a retained generation's entry for a date, with the cap the
// entry's gate judged it against (HasCap false when its gate report is
// gone: a cap of 0 is a cap, which the page showed as none, while a
// missing one read as a 0% cap the rate was over).
type Change struct {
	history.Change
	Cap    float64
	HasCap bool
	// FromPointer marks the entry readers follow when no retained
	// generation holds it (pointer.json edited in place, its copy gone):
	// what they see, shown as such, not the history's newest change.
	FromPointer bool
}

// File is one current Parquet file.
type File struct {
	Table string
	Path  string
	Bytes int64
}

// RejectedRate is a rejected attempt's unknown-lesson figures on one date.
type RejectedRate struct {
	JobID string
	Rate  float64
	Cap   float64
}

// Run is one attempt that reached the gate.
type Run struct {
	JobID string
	At    time.Time
	// Generation is the generation the run published; 0 for a rejection.
	Generation int64
	Rejected   bool
	// Checks holds the run's verdicts by CheckKey. A rejection whose gate
	// report gc removed has only its failed checks.
	Checks map[CheckKey]gate.Check
	// Partial: only the failed checks are known.
	Partial bool
	order   []gate.Check // the gate report's order, for the table's rows
}

// CheckKey names a row of the gate table.
type CheckKey struct{ Name, Date string }

// Verdict is a run's cell for one row: pass, warn, fail, or "" when the run
// did not report that check (another date, or a partial record).
func (r Run) Verdict(k CheckKey) string {
	c, ok := r.Checks[k]
	switch {
	case !ok:
		return ""
	case !c.Passed:
		return "fail"
	case c.Warning:
		return "warn"
	}
	return "pass"
}

// Build reads the warehouse: the pointer and its retained history, the
// gate report of every job they name, and the rejection records. runs
// bounds the gate table (DefaultRuns when 0 or less). A missing gate
// report or an unreadable record becomes a Note, not an error: the page
// shows what is there.
func Build(ctx context.Context, s pointer.Store, b storage.Bucket, runs int) (Model, error) {
	if runs <= 0 {
		runs = DefaultRuns
	}
	cur, _, err := s.Load(ctx)
	if err != nil {
		return Model{}, err
	}
	log, err := history.List(ctx, s, b, nil)
	if err != nil {
		return Model{}, err
	}
	m := Model{Warehouse: b.Location().String(), Generation: cur.Generation, UpdatedBy: cur.UpdatedByJobID,
		WrittenAt: cur.WrittenAt, Expiries: log.Expiries}
	// The figures below come from this history: what makes them
	// untrustworthy is said first, as history says it.
	m.Notes = append(m.Notes, log.Warnings()...)
	reports := gateReports{b: b, byJob: map[string]*gate.Report{}}

	byDate := map[dates.Date]*Date{}
	date := func(d dates.Date) *Date {
		if byDate[d] == nil {
			byDate[d] = &Date{Date: d}
		}
		return byDate[d]
	}
	gens := map[int64]Run{}
	for _, c := range log.Changes {
		r, err := reports.get(ctx, c.JobID, notShown)
		if err != nil {
			return Model{}, err
		}
		ch := Change{Change: c}
		if r != nil {
			ch.Cap, ch.HasCap = r.UnknownCap, true
		}
		d := date(c.Date)
		d.Changes = append(d.Changes, ch)
		// A rollback re-publishes old entries without a gate of its own.
		if c.Operation != pointer.OpRollback {
			run := gens[c.Generation]
			run.JobID, run.At, run.Generation = c.UpdatedByJobID, c.WrittenAt, c.Generation
			gens[c.Generation] = run
		}
	}
	for d, e := range cur.Dates {
		dd := date(d)
		dd.Published = true
		if now := history.Current(cur, d); len(dd.Changes) == 0 || !history.SameEntry(now, dd.Changes[0].Change) {
			r, err := reports.get(ctx, e.JobID, notShown)
			if err != nil {
				return Model{}, err
			}
			ch := Change{Change: now, FromPointer: true}
			if r != nil {
				ch.Cap, ch.HasCap = r.UnknownCap, true
			}
			dd.Changes = slices.Insert(dd.Changes, 0, ch)
		}
		for _, f := range e.FactFiles {
			dd.Files = append(dd.Files, File{Table: "fact_lesson_engagement", Path: f.Path, Bytes: f.Bytes})
		}
		for _, f := range e.CourseDayFiles {
			dd.Files = append(dd.Files, File{Table: "course_day", Path: f.Path, Bytes: f.Bytes})
		}
	}

	all := make([]Run, 0, len(gens))
	for _, g := range slices.Sorted(maps.Keys(gens)) {
		run := gens[g]
		r, err := reports.get(ctx, run.JobID, notShown)
		if err != nil {
			return Model{}, err
		}
		all = append(all, withReport(run, r))
	}
	rejected, err := rejections(ctx, b, &m)
	if err != nil {
		return Model{}, err
	}
	for _, rej := range rejected {
		r, err := reports.get(ctx, rej.JobID, "only its failed checks are shown, from its rejection record")
		if err != nil {
			return Model{}, err
		}
		run := withReport(Run{JobID: rej.JobID, At: rej.RejectedAt, Rejected: true}, r)
		if r == nil {
			run.Partial = true
			run.Checks = map[CheckKey]gate.Check{}
			for _, c := range rej.Failed {
				run.Checks[CheckKey{c.Name, c.Date}] = c
			}
		}
		for _, c := range run.Checks {
			if c.Name != gate.CheckUnknownLessonCap {
				continue
			}
			d, err := dates.Parse(c.Date)
			if err != nil {
				continue
			}
			if rate, ok := c.Figures["rate"].(float64); ok {
				capv, _ := c.Figures["cap"].(float64)
				date(d).Rejected = append(date(d).Rejected, RejectedRate{JobID: run.JobID, Rate: rate, Cap: capv})
			}
		}
		all = append(all, run)
	}
	slices.SortFunc(all, func(a, b Run) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(a.JobID, b.JobID)
	})
	m.Runs = all[:min(runs, len(all))]
	m.Checks = checkRows(m.Runs)
	for _, d := range byDate {
		m.Dates = append(m.Dates, *d)
	}
	slices.SortFunc(m.Dates, func(a, b Date) int { return cmp.Compare(a.Date, b.Date) })
	m.Notes = append(m.Notes, reports.notes...)
	return m, nil
}

func withReport(run Run, r *gate.Report) Run {
	if r == nil {
		return run
	}
	run.Checks = map[CheckKey]gate.Check{}
	for _, c := range r.Checks {
		run.Checks[CheckKey{c.Name, c.Date}] = c
	}
	run.order = r.Checks
	return run
}

// checkRows are the rows of the gate table: each shown run's checks in its
// report's order, newest run first, each row once.
func checkRows(runs []Run) []CheckKey {
	var keys []CheckKey
	seen := map[CheckKey]bool{}
	add := func(k CheckKey) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, r := range runs {
		for _, c := range r.order {
			add(CheckKey{c.Name, c.Date})
		}
		partial := make([]CheckKey, 0, len(r.Checks))
		for k := range r.Checks {
			partial = append(partial, k)
		}
		slices.SortFunc(partial, func(a, b CheckKey) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Date, b.Date))
		})
		for _, k := range partial {
			add(k)
		}
	}
	return keys
}

// notShown is what the page lacks without a published run's gate report.
const notShown = "its checks and cap are not shown"

// gateReports reads each job's _gate.json once. gc removes the staging of
// a job no retained generation names, and a rejected attempt's after
// --min-age; a missing report is noted, not fatal.
type gateReports struct {
	b     storage.Bucket
	byJob map[string]*gate.Report
	notes []string
}

// get reads jobID's report; lost names what the page then lacks, for
// the note.
func (g *gateReports) get(ctx context.Context, jobID, lost string) (*gate.Report, error) {
	if r, ok := g.byJob[jobID]; ok {
		return r, nil
	}
	key := warehouse.GatePath(jobID)
	data, _, err := g.b.Get(ctx, key)
	if storage.IsNotExist(err) {
		g.byJob[jobID] = nil
		g.notes = append(g.notes, fmt.Sprintf("no gate report for job %s at %s: %s", jobID, g.b.Location().Join(key), lost))
		return nil, nil
	}
	if err != nil {
		return nil, err // names the location already (storage.Bucket)
	}
	var r gate.Report
	if err := json.Unmarshal(data, &r); err != nil {
		g.byJob[jobID] = nil
		g.notes = append(g.notes, fmt.Sprintf("gate report %s does not decode (%v): %s", g.b.Location().Join(key), err, lost))
		return nil, nil
	}
	g.byJob[jobID] = &r
	return &r, nil
}

// rejections reads every rejection record, in key order.
func rejections(ctx context.Context, b storage.Bucket, m *Model) ([]job.Rejection, error) {
	files, _, err := b.ListDir(ctx, warehouse.RejectionsRoot)
	if storage.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err // names the location already (storage.Bucket)
	}
	var out []job.Rejection
	for _, f := range files {
		if f.Link || !strings.HasSuffix(f.Key, ".json") {
			continue
		}
		data, _, err := b.Get(ctx, f.Key)
		if storage.IsNotExist(err) {
			continue // gc removed it since the listing
		}
		if err != nil {
			return nil, err // names the location already (storage.Bucket)
		}
		var r job.Rejection
		if err := json.Unmarshal(data, &r); err != nil || r.JobID == "" {
			m.Notes = append(m.Notes, fmt.Sprintf("rejection record %s does not decode: not shown", b.Location().Join(f.Key)))
			continue
		}
		if config.CheckJobID(r.JobID) != nil || warehouse.RejectionPath(r.JobID) != f.Key {
			// Its job id names its gate report's key: one that is no job
			// id, or not the record's own, would be read from elsewhere.
			m.Notes = append(m.Notes, fmt.Sprintf("rejection record %s names job id %q, which is not its own: not shown", b.Location().Join(f.Key), r.JobID))
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
