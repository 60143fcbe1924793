package spark

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
)

// eventPass is the first pass of the raw events' check, as a part of
// Inspect's one statement: query is a scalar subquery and its alias on
// lines of their own, ending in a comma (empty when the read window holds
// no raw file), fields the outer columns that read its struct (ending in
// a comma too), dest where they go (the null counts straight into the
// input figures). Only hashRepeats says whether eventExact has more to do.
type eventPass struct {
	query, fields string
	dest          []any
	hashRepeats   int64
	// Per requested date: its events, and those the window holds past
	// its own window, before it, and in its own partition.
	counts, late, early, own []int64
	keyed                    func(key string) string
	// Past perDateAggregates dates the per-date figures come grouped, in
	// byDate: "i:d:l:e:o" a date with events, comma separated, i the
	// date's 1-based distance from first, the earliest requested date.
	grouped bool
	first   dates.Date
	byDate  string
}

// eventCheck prepares the check of the raw events that cannot be placed
// or counted once, with the DuckDB engine's meaning: a null event_time
// anywhere in the read window, a null event_id among the events of the
// requested dates, and an event_id of one of them that the read window
// holds twice, with a sorted sample of five repeated ids (eventExact).
// Every event of the window with an id or without a time reaches the
// shuffle: a copy on another date is a repeat too.
//
// The first pass keys each event by a 64-bit hash of event_id, not by the
// string: equal ids hash alike, so no repeated hash means no repeated id,
// and on the design day the shuffle carries a long a row instead of the id.
// Its other counts do not depend on the key and are exact. A repeated hash
// may be a collision, so only then does an exact pass group by the id
// itself, and only when that finds repeats does a third name five of them.
func (e *Engine) eventCheck(ctx context.Context, spec engine.Spec, f *gate.InputFigures) (*eventPass, error) {
	n := len(spec.Dates)
	p := &eventPass{counts: make([]int64, n), late: make([]int64, n), early: make([]int64, n), own: make([]int64, n)}
	if len(spec.Inputs.Raw) == 0 {
		return p, nil
	}
	if _, err := e.registerRaw(ctx, spec); err != nil {
		return nil, err
	}
	// Each requested date's events are counted in the same scan: the
	// silent-drop figures Stage audits against, so a publish reads raw
	// twice in all, here and for the fact grain.
	//
	// Each event reaches the shuffle as its key and one packed integer f:
	// bit 0 a null event_time, bit 1 a requested date's event in its own
	// window, bit 2 one past it (late: counted nowhere, but a sign of an
	// outage), bit 3 one in a partition before the date (early: counted
	// nowhere, warned of), bit 4 one in the date's own partition, bit 5 an
	// event of a date not requested outside its partition's own window
	// (stray: no publish counts it), bit 6 an event_time outside the years
	// 0001 to 9999 (refused with the null ones, not stray), f >> 7 the
	// 1-based index of the requested date: its place in spec.Dates, or
	// past perDateAggregates dates its distance from the first (grouped).
	var dateIdx, perDate, fields []string
	index := ""
	if p.grouped = n > e.perDateAggregates(); p.grouped {
		p.first = slices.Min(spec.Dates)
		index = fmt.Sprintf("128 * (datediff(event_date, DATE %s) + 1)", quote(p.first.String()))
	} else {
		for i, d := range spec.Dates {
			dateIdx = append(dateIdx, fmt.Sprintf("WHEN DATE %s THEN %d", quote(d.String()), 128*(i+1)))
			perDate = append(perDate, fmt.Sprintf(", 'd%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 2) = 2), 'l%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 4) = 4)"+
				", 'e%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 8) = 8), 'o%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 16) = 16)", i, i+1))
			fields = append(fields, fmt.Sprintf("ev.d%[1]d, ev.l%[1]d, ev.e%[1]d, ev.o%[1]d, ", i))
		}
		index = "CASE event_date " + strings.Join(dateIdx, " ") + " END"
	}
	// keyed is every event as (k, f); key is an expression of event_id
	// that is null exactly when event_id is.
	p.keyed = func(key string) string {
		return fmt.Sprintf(`SELECT %s AS k,
		       CASE WHEN event_time IS NULL THEN 1 ELSE 0 END + CASE WHEN requested THEN 2 ELSE 0 END + CASE WHEN late THEN 4 ELSE 0 END
		       + CASE WHEN early THEN 8 ELSE 0 END + CASE WHEN requested AND ingest_date = event_date THEN 16 ELSE 0 END
		       + CASE WHEN stray THEN 32 ELSE 0 END + CASE WHEN oor THEN 64 ELSE 0 END
		       + CASE WHEN requested OR late OR early THEN %[2]s ELSE 0 END AS f
		FROM (SELECT event_id, event_time, event_date, ingest_date, oor, coalesce(event_date IN %[3]s AND %[4]s, false) AS requested,
		             coalesce(event_date IN %[3]s AND ingest_date > date_add(event_date, %[9]d), false) AS late,
		             coalesce(event_date IN %[3]s AND ingest_date < event_date, false) AS early,
		             coalesce(NOT (event_date IN %[3]s) AND NOT (%[4]s) AND NOT oor, false) AS stray
		      FROM (SELECT event_id, event_time, %[5]s AS event_date, ingest_date, coalesce(%[10]s, false) AS oor FROM %[6]s
		            WHERE ingest_date BETWEEN DATE %[7]s AND DATE %[8]s))
		WHERE event_time IS NULL OR requested OR late OR early OR stray OR oor OR event_id IS NOT NULL`,
			key, index, dateList(spec.Dates), ownWindow(spec.LatenessDays), eventDateExpr, rawView,
			quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()), spec.LatenessDays, outOfRangeExpr)
	}
	// The first pass counts, beside each requested event, the events that
	// share its hash: a window over the hash, which Spark runs as a sort of
	// one long column and a streaming count. A GROUP BY of the same hashes
	// ran a partial and then a final hash aggregate over nearly distinct
	// keys, one after the other in the same tasks; on the design day the
	// window spent 15% less executor time. Only whether some hash repeats
	// matters here (the exact pass counts the repeats).
	windowed := fmt.Sprintf("SELECT k, f, count(1) OVER (PARTITION BY k) AS n FROM (%s)",
		p.keyed("CASE WHEN event_id IS NOT NULL THEN "+e.hashOf("event_id")+" END"))
	if p.grouped {
		// Four aggregates and a WHEN a date cost rows x dates (a 200-date
		// publish of 800,000 events spent 70 s in inspect, 32 s so): on
		// many dates the windowed rows are grouped by their date's index,
		// a hash aggregate of at most dates + 1 groups in the window's own
		// tasks, and the groups' figures are summed and listed in the one
		// row. Raw is still read once here.
		p.query = fmt.Sprintf(`
		  (SELECT named_struct('null_times', CAST(coalesce(sum(nt), 0) AS BIGINT),
		     'null_ids', CAST(coalesce(sum(ni), 0) AS BIGINT),
		     'repeats', CAST(coalesce(sum(rep), 0) AS BIGINT),
		     'stray', CAST(coalesce(sum(st), 0) AS BIGINT),
		     'oor', CAST(coalesce(sum(oo), 0) AS BIGINT),
		     'by_date', concat_ws(',', collect_list(CASE WHEN i > 0 THEN format_string('%%d:%%d:%%d:%%d:%%d', i, d, l, e, o) END)))
		   FROM (SELECT shiftright(f, 7) AS i, count_if((f & 1) = 1) AS nt, count_if(k IS NULL AND (f & 2) = 2) AS ni,
		           count_if(k IS NOT NULL AND (f & 2) = 2 AND n > 1) AS rep, count_if((f & 2) = 2) AS d,
		           count_if((f & 4) = 4) AS l, count_if((f & 8) = 8) AS e, count_if((f & 16) = 16) AS o,
		           count_if((f & 32) = 32) AS st, count_if((f & 64) = 64) AS oo
		         FROM (%s) GROUP BY shiftright(f, 7))) AS ev,`, windowed)
		p.fields = "ev.null_times, ev.null_ids, ev.repeats, ev.stray, ev.oor, ev.by_date, "
		p.dest = []any{&f.NullEventTimes, &f.NullEventIDs, &p.hashRepeats, &f.StrayEvents, &f.OutOfRangeEventTimes, &p.byDate}
		return p, nil
	}
	p.query = fmt.Sprintf(`
		  (SELECT named_struct('null_times', CAST(count_if((f & 1) = 1) AS BIGINT),
		     'null_ids', CAST(count_if(k IS NULL AND (f & 2) = 2) AS BIGINT),
		     'repeats', CAST(count_if(k IS NOT NULL AND (f & 2) = 2 AND n > 1) AS BIGINT),
		     'stray', CAST(count_if((f & 32) = 32) AS BIGINT),
		     'oor', CAST(count_if((f & 64) = 64) AS BIGINT)%s)
		   FROM (%s)) AS ev,`,
		strings.Join(perDate, ""), windowed)
	p.fields = "ev.null_times, ev.null_ids, ev.repeats, ev.stray, ev.oor, " + strings.Join(fields, "")
	p.dest = []any{&f.NullEventTimes, &f.NullEventIDs, &p.hashRepeats, &f.StrayEvents, &f.OutOfRangeEventTimes}
	for i := range p.counts {
		p.dest = append(p.dest, &p.counts[i], &p.late[i], &p.early[i], &p.own[i])
	}
	return p, nil
}

// eventExact files the first pass's figures and, when a hash repeated,
// counts the repeated ids exactly and names five of them.
func (e *Engine) eventExact(ctx context.Context, spec engine.Spec, p *eventPass, in *engine.Inputs) error {
	if p.query == "" {
		return nil
	}
	f := &in.Figures
	if p.grouped {
		if err := p.fromByDate(spec.Dates); err != nil {
			return fmt.Errorf("spark %s: check raw event ids %s: %w", e.remote, spec.Raw, err)
		}
	}
	for i, d := range spec.Dates {
		in.Events[d], in.Late[d], in.Early[d], in.Own[d] = p.counts[i], p.late[i], p.early[i], p.own[i]
	}
	if f.NullEventTimes > 0 || f.OutOfRangeEventTimes > 0 {
		// Which: the read window may hold thousands of files. The rows as
		// DuckDB's sample names them (engine.NullTimeSampleSQL).
		concat := func(parts ...string) string { return "concat(" + strings.Join(parts, ", ") + ")" }
		rows, err := e.strings(ctx, "check raw event times "+spec.Raw, fmt.Sprintf(
			"SELECT %s AS s FROM %s WHERE (event_time IS NULL OR %s) AND ingest_date BETWEEN DATE %s AND DATE %s ORDER BY s LIMIT 5",
			engine.NullTimeSampleSQL(concat, "CAST(ingest_date AS STRING)"), rawView, outOfRangeExpr, quote(spec.IngestFrom.String()), quote(spec.IngestTo.String())))
		if err != nil {
			return err
		}
		f.NullEventTimeSample = engine.NullTimeSample(rows)
	}
	f.DuplicateEventIDs = 0
	if p.hashRepeats == 0 {
		return nil
	}
	what := "check raw event ids " + spec.Raw
	// The rows are distributed by the id before they are grouped: nearly
	// every id is distinct, so a partial aggregate before the shuffle would
	// only widen the rows.
	// The extra copies of each id repeated in the window with a copy of a
	// requested date.
	exact := fmt.Sprintf(`SELECT k, count(1) AS n, count_if((f & 2) = 2) AS n_requested FROM (%s DISTRIBUTE BY k) GROUP BY k`, p.keyed("event_id"))
	if err := e.scan(ctx, what, fmt.Sprintf(
		"SELECT CAST(coalesce(sum(CASE WHEN k IS NOT NULL AND n > 1 AND n_requested > 0 THEN n - 1 ELSE 0 END), 0) AS BIGINT) FROM (%s)", exact),
		&f.DuplicateEventIDs); err != nil {
		return err
	}
	if f.DuplicateEventIDs == 0 {
		return nil
	}
	sample, err := e.strings(ctx, what, fmt.Sprintf(
		"SELECT k FROM (%s) WHERE k IS NOT NULL AND n > 1 AND n_requested > 0 ORDER BY k LIMIT 5", exact))
	if err != nil {
		return err
	}
	f.DuplicateEventIDSample = sample
	return nil
}

// perDateAggregates is the most dates eventCheck counts with aggregates of
// their own; past it, grouped by the date's index. The design day (2
// dates) and the ten-date backfill of the benchmark keep the statement
// they were measured with. A test may set its own (aggregatesUpTo).
func (e *Engine) perDateAggregates() int {
	if e.aggregatesUpTo != 0 {
		return e.aggregatesUpTo
	}
	return 16
}

// fromByDate files the grouped pass's per-date figures (byDate) by the
// requested dates' places.
func (p *eventPass) fromByDate(ds []dates.Date) error {
	if p.byDate == "" {
		return nil // no requested date has an event
	}
	at := make(map[dates.Date]int, len(ds))
	for i, d := range ds {
		at[d] = i
	}
	for _, g := range strings.Split(p.byDate, ",") {
		var idx, d, l, e, o int64
		if _, err := fmt.Sscanf(g, "%d:%d:%d:%d:%d", &idx, &d, &l, &e, &o); err != nil {
			return fmt.Errorf("per-date figures %q: %w", g, err)
		}
		i, ok := at[p.first.AddDays(int(idx-1))]
		if !ok {
			// Only a requested date's events have an index.
			return fmt.Errorf("per-date figures %q: index %d is no requested date", g, idx)
		}
		p.counts[i], p.late[i], p.early[i], p.own[i] = d, l, e, o
	}
	return nil
}
