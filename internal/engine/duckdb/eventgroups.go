package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// The event identity scan counts the read window's events grouped by what
// decides each of its figures (eventGroup), and folds the groups in Go:
// one statement of a few groups per partition gives every date's events,
// late, early and own counts and the window's null, out-of-range and stray
// ones, whatever the number of dates. A filter a figure and a date (the way
// before) cost the 60M design day 1.2 s more, and a 200-date backfill
// rows x dates (benchmark.md, runs 30 and 37).

// dayWindow is the span of UTC days the grouped count tells apart: every
// requested date, and every day whose events a listed raw partition holds
// inside their own window (the partition's date and the lateness days
// before it). An event of a day before the span counts as of the day
// before its first, one after it as of the day after its last: neither
// day is requested, and no listed partition holds either's events inside
// their own window, so every figure of such an event is the same as of its
// own day. The span bounds the groups by the partitions, not by what days
// a producer's clock wrote.
type dayWindow struct{ first, last dates.Date }

// dayWindowOf is spec's span; spec lists at least one raw file.
func dayWindowOf(spec engine.Spec) dayWindow {
	raw := spec.Inputs.Raw
	lo, hi := raw[0].IngestDate, raw[0].IngestDate
	for _, f := range raw {
		lo, hi = min(lo, f.IngestDate), max(hi, f.IngestDate)
	}
	w := dayWindow{first: lo.AddDays(-spec.LatenessDays), last: hi}
	for _, d := range spec.Dates {
		w.first, w.last = min(w.first, d), max(w.last, d)
	}
	return w
}

// outOfRange is the predicate of an event time ts (TIMESTAMPTZ, epoch
// microseconds us) that no date can hold. DuckDB reads INT64's extremes as
// ±infinity, whose epoch_us is null: without isfinite they were no null,
// no stray and no date's (a Java producer's Long.MAX_VALUE sentinel,
// dropped with exit 0). Spark reads the same values as instants past the
// range.
func outOfRange(ts, us string) string {
	return "(NOT isfinite(" + ts + ") OR " + engine.EventTimeOutOfRange(us) + ")"
}

const dayMicros = int64(86400_000_000)

// groupsQuery is the grouped identity statement over raw (a relation of
// event_id, event_time and ingest_date), with extra, an aggregate column
// (the kept hashes), last when not empty. Each row: the event's day as an
// offset from the day before w's first (null for a null or infinite time),
// its ingest date as days since the epoch, whether its time is finite
// (null: no time), whether it is outside the years 0001 to 9999, its count
// and how many of them have no event_id.
func groupsQuery(w dayWindow, raw, extra string) string {
	lo, hi := int64(w.first.AddDays(-1))*dayMicros, int64(w.last.AddDays(2))*dayMicros-1
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`SELECT day, ingest, fin, oor, count(*), count(*) FILTER (WHERE event_id IS NULL)%[1]s
		FROM (SELECT event_id, ingest, isfinite(ts) AS fin, coalesce(%[2]s, false) AS oor,
		             (least(greatest(us, %[3]d), %[4]d) - %[3]d) // %[5]d AS day
		      FROM (SELECT event_id, ts, epoch_us(ts) AS us, ingest_date - DATE '1970-01-01' AS ingest
		            FROM (SELECT event_id, CAST(event_time AS TIMESTAMPTZ) AS ts, ingest_date FROM (%[6]s))))
		GROUP BY ALL`,
		extra, outOfRange("ts", "us"), lo, hi, dayMicros, raw)
}

// eventGroup is one row of groupsQuery.
type eventGroup struct {
	day     sql.NullInt64
	ingest  sql.NullInt64
	finite  sql.NullBool
	oor     bool
	n, nuls int64
}

// fold adds g's events to in's figures, by the rules of gate.InputFigures
// and engine.Inputs: a requested date's events come from its own window
// (its date and the lateness days after it); late, early and own count
// the date's events by their partition alone; stray are the finite,
// in-range events of a date not requested outside their own window.
func (w dayWindow) fold(spec engine.Spec, g eventGroup, in *engine.Inputs) error {
	f := &in.Figures
	if !g.finite.Valid {
		f.NullEventTimes += g.n
		return nil
	}
	if g.oor {
		f.OutOfRangeEventTimes += g.n
		return nil
	}
	if !g.day.Valid || !g.ingest.Valid {
		// A finite time has a day, and every listed file an ingest date.
		return fmt.Errorf("an event group of no day or no ingest date (%+v)", g)
	}
	day, ingest := w.first.AddDays(int(g.day.Int64)-1), dates.Date(g.ingest.Int64)
	if ingest < w.first.AddDays(spec.LatenessDays) || ingest > w.last {
		// The span's edges stand for days no partition holds inside
		// their own window only while every partition is a listed one.
		return fmt.Errorf("events of ingest date %s, outside the listed partitions (%s to %s)", ingest, w.first.AddDays(spec.LatenessDays), w.last)
	}
	own := day <= ingest && ingest <= day.AddDays(spec.LatenessDays)
	if !slices.Contains(spec.Dates, day) {
		if !own {
			f.StrayEvents += g.n
		}
		return nil
	}
	if own {
		in.Events[day] += g.n
		f.NullEventIDs += g.nuls
	}
	switch {
	case ingest > day.AddDays(spec.LatenessDays):
		in.Late[day] += g.n
	case ingest < day:
		in.Early[day] += g.n
	}
	if ingest == day {
		in.Own[day] += g.n
	}
	return nil
}

// foldGroups runs q (groupsQuery) and folds its rows into in.
func (e *Engine) foldGroups(ctx context.Context, spec engine.Spec, w dayWindow, q string, in *engine.Inputs) error {
	rows, err := e.conn.QueryContext(ctx, q)
	if err != nil {
		return firstLine(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return firstLine(err)
	}
	for rows.Next() {
		var g eventGroup
		dest := []any{&g.day, &g.ingest, &g.finite, &g.oor, &g.n, &g.nuls}
		for range len(cols) - len(dest) {
			dest = append(dest, new(any)) // the kept hashes' count
		}
		if err := rows.Scan(dest...); err != nil {
			return firstLine(err)
		}
		if err := w.fold(spec, g, in); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return firstLine(err)
	}
	return nil
}
