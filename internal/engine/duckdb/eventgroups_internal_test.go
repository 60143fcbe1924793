package duckdb

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/inputs"
)

// TestEventGroupsEqualEventLevel holds the grouped identity statement,
// folded in Go, to the figures' definitions taken event by event (each
// event's flags, a filter a figure and a date: the statement before it),
// on the times where they could part: either side of midnight at the
// window's edges, 1969, the years 0001 and 9999, instants outside them,
// ±infinity and null, each in every listed partition; with a null id
// among them; on dates with gaps, out of order, before the first partition
// and after the last; lateness 0 and 2.
func TestEventGroupsEqualEventLevel(t *testing.T) {
	e, err := Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ingest := []string{"2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05", "2026-03-06"}
	// Offsets from the partition's date, and fixed instants.
	times := []string{
		"CAST(i AS TIMESTAMPTZ) - INTERVAL 3 DAY + INTERVAL 12 HOUR", "CAST(i AS TIMESTAMPTZ) - INTERVAL 2 DAY",
		"CAST(i AS TIMESTAMPTZ) - INTERVAL 1 MICROSECOND", "CAST(i AS TIMESTAMPTZ)", "CAST(i AS TIMESTAMPTZ) + INTERVAL 12 HOUR",
		"CAST(i AS TIMESTAMPTZ) + INTERVAL 1 DAY", "CAST(i AS TIMESTAMPTZ) + INTERVAL 3 DAY - INTERVAL 1 MICROSECOND",
		"TIMESTAMPTZ '1969-12-31 23:59:59.999999+00'", "TIMESTAMPTZ '0001-01-01 00:00:00+00'",
		"TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'", "to_timestamp(253402300800)", "to_timestamp(-62135596801)",
		"TIMESTAMPTZ 'infinity'", "TIMESTAMPTZ '-infinity'", "NULL::TIMESTAMPTZ",
	}
	var vals []string
	for _, i := range ingest {
		for k := range times {
			vals = append(vals, fmt.Sprintf("(%d, DATE '%s')", k, i))
		}
	}
	var cases strings.Builder
	for k, ts := range times {
		fmt.Fprintf(&cases, " WHEN %d THEN %s", k, ts)
	}
	// Every seventh id null: a null id of a requested date counts.
	if _, err := e.conn.ExecContext(t.Context(), fmt.Sprintf(`CREATE TEMP TABLE hostile AS
		SELECT CASE WHEN n %% 7 = 3 THEN NULL ELSE 'e' || n END AS event_id, CASE k%s END AS event_time, i AS ingest_date
		FROM (SELECT row_number() OVER () AS n, k, i FROM (VALUES %s) v(k, i))`, cases.String(), strings.Join(vals, ", "))); err != nil {
		t.Fatal(err)
	}
	var listing inputs.Listing
	for _, i := range ingest {
		listing.Raw = append(listing.Raw, inputs.RawFile{File: inputs.File{Path: "raw/ingest_date=" + i + "/part-0.parquet"}, IngestDate: dates.MustParse(i)})
	}
	for _, tc := range []struct {
		dates    []string
		lateness int
	}{
		{[]string{"2026-03-04"}, 2},
		{[]string{"2026-03-02", "2026-03-04"}, 2},
		{[]string{"2026-03-06", "2026-03-03"}, 0},
		{[]string{"2026-02-27", "2026-03-02", "2026-03-09"}, 2},
		{[]string{"2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05", "2026-03-06"}, 1},
	} {
		t.Run(fmt.Sprintf("%v lateness %d", tc.dates, tc.lateness), func(t *testing.T) {
			spec := engine.Spec{LatenessDays: tc.lateness, Inputs: listing}
			for _, d := range tc.dates {
				spec.Dates = append(spec.Dates, dates.MustParse(d))
			}
			var got engine.Inputs
			got.PerDate()
			span := dayWindowOf(spec)
			if err := e.foldGroups(t.Context(), spec, span, groupsQuery(span, "SELECT * FROM hostile", ""), &got); err != nil {
				t.Fatal(err)
			}
			want := eventLevelFigures(t, e, spec)
			g, w := got.Figures, want.Figures
			if [4]int64{g.NullEventTimes, g.NullEventIDs, g.StrayEvents, g.OutOfRangeEventTimes} != [4]int64{w.NullEventTimes, w.NullEventIDs, w.StrayEvents, w.OutOfRangeEventTimes} {
				t.Errorf("null times, null ids, stray, out of range: %d %d %d %d, event by event %d %d %d %d",
					g.NullEventTimes, g.NullEventIDs, g.StrayEvents, g.OutOfRangeEventTimes, w.NullEventTimes, w.NullEventIDs, w.StrayEvents, w.OutOfRangeEventTimes)
			}
			for _, m := range []struct {
				name      string
				got, want map[dates.Date]int64
			}{{"events", got.Events, want.Events}, {"late", got.Late, want.Late}, {"early", got.Early, want.Early}, {"own", got.Own, want.Own}} {
				if !maps.Equal(nonZero(m.got), nonZero(m.want)) {
					t.Errorf("%s %v, event by event %v", m.name, m.got, m.want)
				}
			}
			if want.Figures.StrayEvents == 0 || want.Figures.OutOfRangeEventTimes == 0 || want.Figures.NullEventTimes == 0 {
				t.Errorf("the case tests too little: %+v", want.Figures)
			}
		})
	}
}

// eventLevelFigures counts the hostile table's figures row by row, a
// filter a figure and a date.
func eventLevelFigures(t *testing.T, e *Engine, spec engine.Spec) engine.Inputs {
	t.Helper()
	inDays, own := utcDayRanges("epoch_us(ts)", spec.Dates), ownWindow("ts", "ingest_date", spec.LatenessDays)
	oor := outOfRange("ts", "epoch_us(ts)")
	src := fmt.Sprintf(`SELECT event_id, event_time, ts, ingest_date, coalesce(%[1]s AND %[2]s, false) AS requested,
		coalesce(NOT (%[1]s) AND NOT %[2]s AND NOT %[3]s, false) AS stray, coalesce(%[3]s, false) AS oor
		FROM (SELECT event_id, event_time, CAST(event_time AS TIMESTAMPTZ) AS ts, ingest_date FROM hostile)`, inDays, own, oor)
	var in engine.Inputs
	in.PerDate()
	f := &in.Figures
	q := `SELECT count(*) FILTER (WHERE event_time IS NULL), count(*) FILTER (WHERE requested AND event_id IS NULL),
		count(*) FILTER (WHERE stray), count(*) FILTER (WHERE oor)`
	dest := []any{&f.NullEventTimes, &f.NullEventIDs, &f.StrayEvents, &f.OutOfRangeEventTimes}
	n := len(spec.Dates)
	per := make([][4]int64, n)
	for i, d := range spec.Dates {
		day := utcDayRanges("epoch_us(ts)", []dates.Date{d})
		q += fmt.Sprintf(`, count(*) FILTER (WHERE requested AND %[1]s), count(*) FILTER (WHERE %[1]s AND ingest_date > DATE '%[2]s'),
			count(*) FILTER (WHERE %[1]s AND ingest_date < DATE '%[3]s'), count(*) FILTER (WHERE %[1]s AND ingest_date = DATE '%[3]s')`,
			day, d.AddDays(spec.LatenessDays), d)
		dest = append(dest, &per[i][0], &per[i][1], &per[i][2], &per[i][3])
	}
	if err := e.conn.QueryRowContext(t.Context(), q+" FROM ("+src+")").Scan(dest...); err != nil {
		t.Fatal(err)
	}
	for i, d := range spec.Dates {
		in.Events[d], in.Late[d], in.Early[d], in.Own[d] = per[i][0], per[i][1], per[i][2], per[i][3]
	}
	return in
}

func nonZero(m map[dates.Date]int64) map[dates.Date]int64 {
	out := map[dates.Date]int64{}
	for d, n := range m {
		if n != 0 {
			out[d] = n
		}
	}
	return out
}
