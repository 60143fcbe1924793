package duckdb

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
)

// TestUTCDayRangesEqualsDateMembership holds the event-id check's instant
// ranges to the stage's own definition of an event date, on the instants
// where they could part: midnight on either side, the microsecond before it,
// gaps between requested dates, 1969 and a far future, in a session zone
// that is not UTC.
func TestUTCDayRangesEqualsDateMembership(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SET TimeZone = 'America/Los_Angeles'"); err != nil {
		t.Fatal(err)
	}
	instants := `SELECT CAST(t AS TIMESTAMPTZ) AS event_time FROM (VALUES
		('2026-03-01 23:59:59.999999+00'), ('2026-03-02 00:00:00+00'), ('2026-03-02 12:00:00+00'),
		('2026-03-02 23:59:59.999999+00'), ('2026-03-03 00:00:00+00'), ('2026-03-03 08:00:00+00'),
		('2026-03-04 00:00:00+00'), ('2026-03-05 23:59:59+00'), ('2026-03-06 00:00:00+00'),
		('2026-03-02 16:30:00-08'), ('2026-03-02 07:30:00+09'), ('1969-12-31 23:59:59+00'),
		('1970-01-01 00:00:00+00'), ('2999-01-01 00:00:00+00'), (NULL)) v(t)`
	cases := [][]string{
		{"2026-03-02"},
		{"2026-03-02", "2026-03-03"},
		{"2026-03-05", "2026-03-02"}, // out of order, with a gap
		{"1969-12-31", "2999-01-01"},
		{},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			var ds []dates.Date
			for _, s := range c {
				ds = append(ds, dates.MustParse(s))
			}
			want := "false"
			if len(ds) > 0 {
				want = eventDateExpr + " IN " + dateList(ds)
			}
			q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE coalesce(%s, false) <> coalesce(%s, false)),
				count(*) FILTER (WHERE coalesce(%s, false)) FROM (%s)`, want, utcDayRanges("epoch_us(event_time)", ds), want, instants)
			var n, differ, in int
			if err := db.QueryRow(q).Scan(&n, &differ, &in); err != nil {
				t.Fatal(err)
			}
			if n != 15 || differ != 0 {
				t.Errorf("%d of %d instants classified differently (predicate %s)", differ, n, utcDayRanges("epoch_us(event_time)", ds))
			}
			if len(ds) > 0 && in == 0 {
				t.Errorf("no instant falls in %v: the case tests nothing", c)
			}
		})
	}
}

// TestOwnWindowEqualsDateArithmetic holds each date's own window (ingest_date
// d to d+lateness) to plain date arithmetic on the stage's event date, at
// the window's edges, in a session zone that is not UTC and a calendar that
// is not Gregorian: a cast of a date to TIMESTAMPTZ follows the calendar
// (japanese put the bounds 2,018 years off, and every date published 0).
func TestOwnWindowEqualsDateArithmetic(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, set := range []string{"SET TimeZone = 'Asia/Tokyo'", "SET Calendar = 'japanese'"} {
		if _, err := db.Exec(set); err != nil {
			t.Fatal(err)
		}
	}
	rows := `SELECT CAST(t AS TIMESTAMPTZ) AS event_time, CAST(i AS DATE) AS ingest_date FROM (VALUES
		('2026-03-02 00:00:00+00', '2026-03-02'), ('2026-03-01 23:59:59.999999+00', '2026-03-02'),
		('2026-03-02 23:59:59.999999+00', '2026-03-04'), ('2026-03-01 23:59:59.999999+00', '2026-03-04'),
		('2026-03-02 00:00:00+00', '2026-03-01'), ('1969-12-31 12:00:00+00', '1970-01-01'),
		('2026-03-02 12:00:00+00', '2026-03-05'), ('2026-03-05 12:00:00+00', '2026-03-05')) v(t, i)`
	for _, lateness := range []int{0, 1, 2} {
		want := fmt.Sprintf("%s BETWEEN ingest_date - %d AND ingest_date", eventDateExpr, lateness)
		q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE (%s) <> (%s)), count(*) FILTER (WHERE %s) FROM (%s)`,
			want, ownWindow("event_time", "ingest_date", lateness), want, rows)
		var n, differ, in int
		if err := db.QueryRow(q).Scan(&n, &differ, &in); err != nil {
			t.Fatal(err)
		}
		if n != 8 || differ != 0 || in == 0 || in == n {
			t.Errorf("lateness %d: %d of %d rows classified differently, %d inside (predicate %s)", lateness, differ, n, in, ownWindow("event_time", "ingest_date", lateness))
		}
	}
}
