package job

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// The date checks a publish makes on the landed raw partitions before it
// reads them: each date over by the run date, the restatement horizon, and
// each requested date's own partition.

// checkDates makes the date checks in their order on the landed ingest
// partitions, today being the clock's UTC date: the run date (the earlier
// of the job's as-of date and today, as a run date after today cannot make
// a day be over: a local date east of UTC, a scheduler's clock ahead), each
// requested date over by then, the horizon on the partitions landed so far,
// each date's own partition. It returns the run date and those partitions,
// which freshness is judged on; the partitions also with the error of a
// date whose own partition has not landed, since stale raw is then the
// likelier cause and ingestion's page.
func checkDates(job config.Job, ingest []dates.Date, today dates.Date, log *slog.Logger) (run dates.Date, landed []dates.Date, err error) {
	run = today
	switch {
	case job.AsOfSet && job.AsOf < today:
		run = job.AsOf
	case job.AsOfSet && job.AsOf > today:
		// A typo in a year, or a zone east of UTC: said, not silently
		// replaced (a stale-raw error would otherwise name another date).
		log.Warn("the as-of date is after today (UTC): the run date is today", "as_of", job.AsOf.String(), "today", today.String())
	}
	landed = landedSoFar(ingest, today, log)
	if len(landed) == 0 {
		landed = nil
	}
	// The partitions go back with every refusal: freshness is judged
	// on them whatever the dates' own fault (ingestion's page fired
	// only when the dates were right).
	if err := checkEnded(job, run); err != nil {
		return run, landed, err
	}
	if landed == nil && len(ingest) > 0 {
		return run, nil, fmt.Errorf("read raw %s: every ingest_date partition is dated after today (%s, the oldest %s%s): nothing has landed yet", job.Raw, today, inputs.PartitionPrefix, ingest[0])
	}
	if err := checkHorizon(job, landed, today, log); err != nil {
		return run, landed, err
	}
	return run, landed, checkLanded(job, landed, today)
}

// DatesRefused is why a publish of job would refuse its dates on the
// listed ingest partitions at now (not over, outside the horizon, a date's
// own partition missing, raw stale), or nil. explain, which publishes
// nothing, warns with it rather than show a plan for dates no publish
// would take.
func DatesRefused(job config.Job, ingest []dates.Date, now time.Time) error {
	run, landed, err := checkDates(job, ingest, dates.FromTime(now.UTC()), slog.New(slog.DiscardHandler))
	if landed != nil && exitcode.Code(err) != exitcode.Usage {
		if serr := stale(job, landed, run); serr != nil {
			return serr
		}
	}
	return err
}

// checkHorizon refuses dates outside the restatement horizon: with N the
// newest ingest date and H the horizon, d is inside when N-(H-1) <= d <= N.
// Before it a date has settled, and restating it needs a human's explicit
// override, which is logged. A date after N (and over by the run date) is
// one whose own partition has not landed yet: checkLanded's exit 1, which
// a scheduler retries, not a usage error it gives up on (a late
// ingestion made the day's run fail fast, advising the override).
//
// N is never today (UTC): today's partition is still being written, and
// counting back from it would close the horizon on a date while its last
// lateness partition is open. A daily run at 06:00 would then restate d for
// the last time while d+latenessDays still had 18 hours of late events to
// land, and those would never be counted. Counted back from yesterday, the
// horizon holds H ended days, and a run that restates all H of them
// restates each date once more after its last lateness partition has ended
// (when latenessDays <= H-1).
func checkHorizon(job config.Job, ingest []dates.Date, today dates.Date, log *slog.Logger) error {
	if len(ingest) == 0 {
		return fmt.Errorf("read raw %s: no ingest_date partition with data files", job.Raw)
	}
	oldest, newest, why := horizonOf(job, ingest, today)
	var outside []string
	for _, d := range job.Dates {
		if d < oldest {
			outside = append(outside, d.String())
		}
	}
	if len(outside) == 0 {
		return nil
	}
	if job.AllowOutsideHorizon {
		log.Warn("restating dates outside the restatement horizon by explicit override",
			"dates", outside, "horizon_from", oldest.String(), "horizon_to", newest.String())
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("--dates: %v outside the restatement horizon %s..%s (%s, %s %d); pass --allow-outside-horizon to restate them anyway",
		outside, oldest, newest, why, config.KeyRestatementHorizonDays, job.RestatementHorizonDays))
}

// horizonOf is the restatement horizon on the landed partitions ingest (not
// empty): its oldest and newest dates, and why it ends where it does.
func horizonOf(job config.Job, ingest []dates.Date, today dates.Date) (oldest, newest dates.Date, why string) {
	newest = ingest[len(ingest)-1]
	why = fmt.Sprintf("newest ingest_date %s", newest)
	if yesterday := today.AddDays(-1); newest > yesterday {
		newest = yesterday
		why = fmt.Sprintf("newest ended ingest_date %s: today's is still being written", newest)
	}
	return newest.AddDays(-(job.RestatementHorizonDays - 1)), newest, why
}

// warnUnsettled warns of published dates outside the restatement horizon
// whose last publish did not read every partition of their lateness window
// (d to d+latenessDays) that raw holds now. A daily run restates each date
// once more after that window has ended, but a missed or failed run leaves
// a date as its last publish read it, and no later run restates it without
// an override: its events ingested after that publish's window are never
// counted, with exit 0 and status showing the date published. What each
// entry's publish read is in its _attempt.json; an entry whose record
// cannot be read is passed over (the warning is a hint, not a check).
//
// There is no lookback bound in days: a date stays unsettled until it is
// restated, however long the runs stopped. The bound is raw's: a date none
// of whose lateness partitions (by today's latenessDays) raw still holds is
// passed over without a read, as restating it could count nothing more.
// Each record is judged with the lateness its publish ran with (a raised
// latenessDays does not unsettle every date before it), or today's when it
// predates that field.
//
// A partition the publish read may have changed since (a late flush, or a
// replay into a partition already landed): a file added or rewritten
// since (current: every landed partition's files, as this run's
// listing of raw found them) unsettles the date as a partition not read
// does, until it is restated.
// It returns those dates, which the run's document and metrics carry, so a
// scheduler and an alert see them and not only the log.
func (p *Publisher) warnUnsettled(ctx context.Context, job config.Job, base pointer.Pointer, landed []dates.Date, today dates.Date, current map[dates.Date]inputs.Partition) []dates.Date {
	if len(landed) == 0 {
		return nil
	}
	oldest, _, _ := horizonOf(job, landed, today)
	// The landed partitions, and those holding only what a read refuses (a
	// flush written as hour=23/ into a partition not yet landed).
	partitions := slices.Clone(landed)
	for g, part := range current {
		if len(part.Files) == 0 && len(part.Unreadable) > 0 {
			partitions = append(partitions, g)
		}
	}
	slices.Sort(partitions)
	records := map[string]readRecord{} // by job id
	var unsettled []string
	var days []dates.Date
	for d, e := range base.Dates {
		if d >= oldest || slices.Contains(job.Dates, d) || d.AddDays(job.LatenessDays) < landed[0] {
			continue
		}
		r, ok := records[e.JobID]
		if !ok {
			r = p.attemptRead(ctx, e.JobID)
			records[e.JobID] = r
		}
		if !r.known {
			continue
		}
		lateness := job.LatenessDays
		if r.lateness != nil {
			lateness = *r.lateness
		}
		var missed, changed, unread []string
		for _, g := range partitions {
			// Today's partition is still open: no restatement could read it yet.
			if g < d || g > d.AddDays(lateness) || g >= today {
				continue
			}
			_, read := r.files[g]
			switch {
			case !read && len(current[g].Files) == 0:
				unread = append(unread, fmt.Sprintf("ingest_date %s, which holds only %s: a restatement refuses it until it is moved", g, strings.Join(current[g].Unreadable, ", ")))
			case !read:
				missed = append(missed, g.String())
			default:
				if c := changedSince(current[g], r.files[g]); c != "" {
					changed = append(changed, fmt.Sprintf("ingest_date %s before it changed: %s", g, c))
				}
			}
		}
		var why []string
		if len(missed) > 0 {
			why = append(why, "did not read ingest_date "+strings.Join(missed, ", "))
		}
		if len(unread) > 0 {
			why = append(why, "did not read "+strings.Join(unread, "; did not read "))
		}
		if len(changed) > 0 {
			why = append(why, "read "+strings.Join(changed, "; read "))
		}
		if len(why) > 0 {
			unsettled = append(unsettled, fmt.Sprintf("%s (job %s %s)", d, e.JobID, strings.Join(why, "; ")))
			days = append(days, d)
		}
	}
	if len(unsettled) == 0 {
		return nil
	}
	slices.Sort(unsettled)
	slices.Sort(days)
	p.Log.Warn("dates left the restatement horizon before a publish read every partition of their lateness window (a missed or failed run, or an ingestion gap since filled), or after it read one that changed since (a late flush, a replay): their events in the partitions it did not read are not counted, nor the files changed since reflected (a changed file may hold none of a date's events; restating is safe either way); restate each with a new job id and --allow-outside-horizon",
		"unsettled", unsettled, "horizon_from", oldest.String(), "lateness_days", job.LatenessDays)
	return days
}

// readRecord is what one attempt read, from its _attempt.json: the raw
// files it listed, by ingest partition (the window's; not its
// ingest_dates, every landed partition, today's still open one among them)
// and the lateness it ran with (nil in a record older than that field).
type readRecord struct {
	known    bool
	files    map[dates.Date][]inputs.File
	lateness *int
}

// changedSince words how a partition's files as this run lists them (now)
// differ from those an earlier publish read of it (then): the files added
// or rewritten since, "" when none. A file removed since is not named: its
// events were counted, and raw's retention removes old partitions a file
// at a time, where a restatement would drop events.
// Files are matched by name in the partition (the raw root may be spelt
// another way, through a link) and judged by size and write time: not by
// version, which a copy that keeps both (cp -a: a new inode) changes
// without changing a byte. A rewrite that keeps size and time is not
// seen; a re-upload of the same bytes to S3 (a new write time) is, and a
// restatement is then a no-op.
//
// An entry a read of the partition would refuse (a nested directory, a
// copy still in flight) is named too: outside the read window it is not
// judged, so a late flush written as hour=23/part-1.parquet was dropped
// with no word, and the date's restatement will refuse it until it is
// moved.
func changedSince(now inputs.Partition, then []inputs.File) string {
	was := map[string]inputs.File{}
	for _, f := range then {
		was[path.Base(f.Path)] = f
	}
	var out []string
	for _, name := range now.Unreadable {
		out = append(out, name+" added, which a restatement refuses until it is moved (a directory, a copy still in flight or a broken link)")
	}
	for _, f := range now.Files {
		name := path.Base(f.Path)
		old, ok := was[name]
		switch {
		case !ok:
			out = append(out, name+" added")
		case old.Bytes != f.Bytes || !old.ModTime.IsZero() && !old.ModTime.Equal(f.ModTime):
			out = append(out, name+" rewritten (its size or write time changed)")
		}
	}
	return strings.Join(out, ", ")
}

func (p *Publisher) attemptRead(ctx context.Context, jobID string) readRecord {
	b, _, err := p.Warehouse.Get(ctx, warehouse.AttemptPath(jobID))
	if err != nil {
		return readRecord{}
	}
	var a struct {
		LatenessDays *int           `json:"lateness_days"`
		Inputs       inputs.Listing `json:"inputs"`
	}
	if json.Unmarshal(b, &a) != nil || len(a.Inputs.Raw) == 0 {
		return readRecord{}
	}
	r := readRecord{known: true, files: map[dates.Date][]inputs.File{}, lateness: a.LatenessDays}
	for _, f := range a.Inputs.Raw {
		r.files[f.IngestDate] = append(r.files[f.IngestDate], f.File)
	}
	return r
}

// checkEnded refuses a requested date on or after the run date (as of
// engagement.asOfDate or --as-of when earlier than today, else today's UTC
// date): that day has not
// ended, so its events have not all happened, let alone landed, and it
// would be published as part of a day with exit 0. No override: a day is
// published once it is over.
func checkEnded(job config.Job, run dates.Date) error {
	var open []string
	for _, d := range job.Dates {
		if d >= run {
			open = append(open, d.String())
		}
	}
	if len(open) == 0 {
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("--dates: %v not over on the run date %s (%s or --as-of, at most today's UTC date): a day is published once it has ended",
		open, run, config.KeyAsOfDate))
}

// landedSoFar drops the ingest partitions dated after today (UTC), which
// no ingestion can have landed yet: a producer's mis-dated partition would
// move the horizon days ahead and refuse every correct run. Each is
// logged; the read window, which ends by yesterday, never reaches them.
func landedSoFar(ingest []dates.Date, today dates.Date, log *slog.Logger) []dates.Date {
	i := len(ingest)
	for i > 0 && ingest[i-1] > today {
		i--
	}
	if i < len(ingest) {
		var future []string
		for _, d := range ingest[i:] {
			future = append(future, inputs.PartitionPrefix+d.String())
		}
		log.Warn("raw holds partitions dated after today: they are left out of the horizon and the freshness check; a producer mis-dated them",
			"partitions", future, "today", today.String())
	}
	return ingest[:i]
}

// landedWhy is why a requested date's own ingest partition must hold its
// events: most of a date's events are ingested on it, so without them the
// date would be published as a part of the day with exit 0, the late
// events alone after an ingestion outage, or an empty day over a whole one
// once raw retention removed the partition.
const landedWhy = "a date's own partition holds most of its events, so without them the date would be published as part of a day; " +
	"wait for it to land (or restore it), then rerun with a new job id"

// checkLanded refuses a requested date whose own ingest_date partition has
// not landed (landedWhy). A day without events lands as a partition of no
// rows: see checkOwnRows. It also refuses a date one of whose lateness
// partitions (d+1 to d+latenessDays, up to yesterday, where the read window
// ends) is missing while a later partition has landed: an ingestion gap,
// whose late events of the date would never be counted, with exit 0 (the
// check of unsettled dates judges a publish by what it read, and it read
// past the gap). No override, as for the own partition: land the missing
// one, as a partition of no rows if its day had no events.
func checkLanded(job config.Job, ingest []dates.Date, today dates.Date) error {
	var missing, gaps []string
	for _, d := range job.Dates {
		if !slices.Contains(ingest, d) {
			missing = append(missing, inputs.PartitionPrefix+d.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("read raw %s: %s has not landed (no data file; a day without events lands as a partition of no rows): %s",
			job.Raw, strings.Join(missing, ", "), landedWhy)
	}
	if len(ingest) == 0 {
		return nil
	}
	newest := ingest[len(ingest)-1]
	seen := map[dates.Date]bool{}
	for _, d := range job.Dates {
		last := min(d.AddDays(job.LatenessDays), today.AddDays(-1))
		for g := d.AddDays(1); g <= last && g < newest; g = g.AddDays(1) {
			if !seen[g] && !slices.Contains(ingest, g) {
				seen[g] = true
				gaps = append(gaps, inputs.PartitionPrefix+g.String())
			}
		}
	}
	if len(gaps) == 0 {
		return nil
	}
	slices.Sort(gaps)
	return fmt.Errorf("read raw %s: %s has not landed while later partitions have (an ingestion gap inside the lateness window of the dates requested): "+
		"the late events it should hold would never be counted; land it (as a partition of no rows if its day had no events), then rerun with a new job id",
		job.Raw, strings.Join(gaps, ", "))
}

// checkOwnRows refuses a requested date whose own partition holds no
// event of the date (the engine's exact count, whatever the files'
// statistics say) while the date has events elsewhere in the read window
// or a published entry with events (landedWhy). With neither, the
// footers decide (a partition of no rows, or rows of other dates only).
// A partition of no rows is ingestion's word that the day had no events,
// and publishes zeros. One holding rows of other dates only (the day
// before's late events) does too, warned of: it is also what ingestion
// leaves when it stops at midnight, but refusing it failed every run of a
// real day without events (for ever, or for latenessDays runs while its
// window was open), and the dates run beside it missed their last
// restatement. If its events land later, the next run refuses the date
// (events elsewhere), loudly.
//
// Events of the date ingested before it (a producer's clock) are no sign
// of its own partition's events: they are counted on no date, and
// warnUncounted names them.
func (p *Publisher) checkOwnRows(ctx context.Context, job config.Job, raw []inputs.RawFile, in engine.Inputs, base pointer.Pointer) error {
	if in.Figures.NullEventTimes > 0 || in.Figures.OutOfRangeEventTimes > 0 {
		// Events without a usable time may be of any date, the partition's
		// own included: the gate rejects them (raw_event_time_present),
		// naming them, which is the better answer.
		return nil
	}
	var empty []string
	for _, d := range job.Dates {
		if in.Own[d] > 0 {
			continue
		}
		elsewhere := in.Events[d] + in.Late[d]
		rows, err := p.Inputs.PartitionRows(ctx, raw, d)
		if err != nil {
			return fmt.Errorf("read raw %s: %w", job.Raw, err)
		}
		part := inputs.PartitionPrefix + d.String()
		switch {
		case elsewhere > 0:
			part += fmt.Sprintf(" (%d of its events arrived in other partitions)", elsewhere)
		case base.Dates[d].EventCount > 0:
			part += fmt.Sprintf(" (generation %d holds %d events of it)", base.Generation, base.Dates[d].EventCount)
		case rows:
			p.Log.Warn("a day without events: its own partition holds other dates' events only and no event of it lies in its own window or later; if ingestion stopped at midnight, its events are missing: the next run that finds them refuses the date until they are landed under its own ingest_date",
				"date", d.String(), "partition", part)
			continue
		default:
			continue // a partition of no rows: a day without events, zeros
		}
		if rows {
			part += fmt.Sprintf(" holds no event of %s", d)
		} else {
			part += " holds no rows"
		}
		empty = append(empty, part)
	}
	if len(empty) == 0 {
		return nil
	}
	return fmt.Errorf("read raw %s: %s: %s", job.Raw, strings.Join(empty, "; "), landedWhy)
}

// warnUncounted logs the events of requested dates that the read window
// holds outside their dates' own windows: ingested before their date (a
// producer's clock, or partitions dated in a zone behind UTC) or more than
// latenessDays after it. None is counted on any date; without this they
// would go without a word (the input count leaves them out as the tables
// do, so input_equals_fact cannot see them). The same for the window's
// events of other dates that no date's window holds (StrayEvents).
func warnUncounted(log *slog.Logger, job config.Job, in engine.Inputs) {
	uncounted := map[string]map[string]int64{}
	for _, d := range job.Dates {
		if in.Early[d] > 0 || in.Late[d] > 0 {
			uncounted[d.String()] = map[string]int64{"ingested_before_date": in.Early[d], "ingested_after_lateness": in.Late[d]}
		}
	}
	if len(uncounted) > 0 {
		log.Warn("events of the requested dates lie in partitions outside their date's own window (ingest_date from the date to latenessDays after it) and are not counted: ingested before their UTC date (a producer's clock, or partitions dated in a zone behind UTC) or later than latenessDays",
			"uncounted", uncounted, "lateness_days", job.LatenessDays)
	}
	// Events of other dates that no date's window holds: no publish of
	// any date will count them (a clock reset to 1970, stamped a year
	// ahead), and without this they went without a word.
	if n := in.Figures.StrayEvents; n > 0 {
		log.Warn("raw events of dates not requested lie outside their partition's own window (ingested before their UTC date, or more than latenessDays after it): no publish of any date counts them; check the producer's clock",
			"stray_events", n, "lateness_days", job.LatenessDays)
	}
}
