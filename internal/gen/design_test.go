package gen

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const designTestEvents = 60_000

// TestDesignFiguresMatchSQL reads the design tree back and recomputes every
// figure with joins against the written pin and snapshot, so the formulas
// behind expected.json and the files the job reads cannot drift apart: for
// the default three dates and for a ten-date backfill.
func TestDesignFiguresMatchSQL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dates  int // Options.Dates
		events int
	}{
		{"default", 0, designTestEvents},
		{"ten dates", 10, 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) { checkDesignFigures(t, tc.dates, tc.events) })
	}
}

func checkDesignFigures(t *testing.T, n, events int) {
	dir, exp := generate(t, Options{Shape: ShapeDesign, Events: events, Dates: n})
	n = max(n, DefaultDesignDates)
	if want := DesignDatesN(n); !reflect.DeepEqual(exp.Dates, want) || exp.RestatementHorizonDays != n || exp.NewestIngestDate != want[n-1] {
		t.Errorf("expected.json dates %v, horizon %d, newest ingest %s; want %v, %d, %s",
			exp.Dates, exp.RestatementHorizonDays, exp.NewestIngestDate, want, n, want[n-1])
	}
	if len(exp.ByDate) != n+1 {
		t.Errorf("expected.json has figures for %d dates, want %d and the stale date", len(exp.ByDate), n)
	}
	conn := inputs(t, dir)
	if day := sqlDayFigures(t, conn); !reflect.DeepEqual(day, exp.ByDate) {
		t.Errorf("per-date figures:\n sql      %+v\n expected %+v", day, exp.ByDate)
	}
	if course := sqlCourseFigures(t, conn); !reflect.DeepEqual(course, exp.ByDateCourse) {
		t.Errorf("per-course figures differ from the SQL recount")
	}
	if n := scalar(t, conn, `SELECT count(*) FROM ev`); n != int64(events) {
		t.Errorf("raw rows = %d, want %d", n, events)
	}
	if n := scalar(t, conn, `SELECT count(*) - count(DISTINCT event_id) FROM ev`); n != 0 {
		t.Errorf("%d repeated event ids", n)
	}
	if n := scalar(t, conn, `SELECT count(*) FROM pin`); n != 40_000 || int(n) != exp.LessonsInPin {
		t.Errorf("pin has %d lessons, want 40,000 (expected.json says %d)", n, exp.LessonsInPin)
	}
	if n := scalar(t, conn, `SELECT count(*) FROM (SELECT lesson_id FROM pin GROUP BY 1 HAVING count(*) > 1)`); n != 0 {
		t.Errorf("%d duplicate lesson ids in the pin", n)
	}
	pairs := scalar(t, conn, `SELECT count(*) FROM (SELECT DISTINCT learner_key, course_id FROM enr)`)
	if rows := scalar(t, conn, `SELECT count(*) FROM enr`); rows != pairs || int(rows) != exp.EnrollmentRowsInPin {
		t.Errorf("snapshot: %d rows, %d unique pairs, expected.json %d", rows, pairs, exp.EnrollmentRowsInPin)
	}
	learners := int64(events / designLearnerEvents)
	if pairs < learners*10 || pairs > learners*11 {
		t.Errorf("%d pairs for %d learners, want 10 to 11 a learner", pairs, learners)
	}
	if n := scalar(t, conn, `SELECT count(*) FROM ev WHERE event_date = DATE '2026-02-28' AND ingest_date <> DATE '2026-03-01'`); n != 0 {
		t.Errorf("%d events of the stale date outside ingest_date 2026-03-01", n)
	}
	if n := scalar(t, conn, `SELECT count(*) FROM ev WHERE ingest_date - event_date NOT IN (0, 1)`); n != 0 {
		t.Errorf("%d events more than a day late", n)
	}
	if got := scalar(t, conn, `SELECT count(DISTINCT ingest_date) FROM ev`); got != int64(n) {
		t.Errorf("%d ingest dates, want %d", got, n)
	}

	newest := exp.Dates[len(exp.Dates)-1]
	for _, d := range exp.Dates {
		f := exp.ByDate[d]
		share := func(n int64) float64 { return float64(n) / float64(f.Events) }
		if r := share(f.Unknown); r < 0.005 || r > 0.015 {
			t.Errorf("%s: unknown-lesson rate %.4f, want about 0.01", d, r)
		}
		if r := share(exp.ByDateCourse[d][HotCourse].Events); r < 0.18 || r > 0.22 {
			t.Errorf("%s: hot course share %.3f, want about 0.20", d, r)
		}
		late := share(f.Events - f.SameDayIngestEvents)
		switch {
		case d == newest && late != 0:
			t.Errorf("%s: %.4f late, want none: the newest date's late events have not arrived", d, late)
		case d != newest && (late < 0.01 || late > 0.03):
			t.Errorf("%s: %.4f ingested a day late, want about 0.02", d, late)
		}
		if perRow := share(f.FactRows); perRow > 0.5 {
			t.Errorf("%s: %d fact rows for %d events, want several events per fact row", d, f.FactRows, f.Events)
		}
		if r := share(f.Enrolled); r < 0.6 || r > 0.8 {
			t.Errorf("%s: enrolled share %.3f, want about 0.7", d, r)
		}
		for c, cf := range exp.ByDateCourse[d] {
			if c != HotCourse && cf.Events >= exp.ByDateCourse[d][HotCourse].Events {
				t.Errorf("%s: %s has %d events, not below the hot course", d, c, cf.Events)
			}
		}
	}
}

// TestDesignDeterministic: the same seed gives the same bytes although the
// writer runs on two threads; another seed changes the events.
func TestDesignDeterministic(t *testing.T) {
	a, _ := generate(t, Options{Shape: ShapeDesign, Events: 20_000})
	b, _ := generate(t, Options{Shape: ShapeDesign, Events: 20_000})
	if diff := compareTrees(a, b); diff != "" {
		t.Errorf("two runs with the same seed differ: %s", diff)
	}
	c, _ := generate(t, Options{Shape: ShapeDesign, Events: 20_000, Seed: 8})
	if diff := compareTrees(a, c); !strings.Contains(diff, "raw/") {
		t.Errorf("seeds 7 and 8 give the same raw events (diff %q)", diff)
	}
}

// TestDesignScales: a tenth of the events keeps the proportions, with a tenth
// of the learners and enrollments and the same 40,000-lesson pin.
func TestDesignScales(t *testing.T) {
	_, small := generate(t, Options{Shape: ShapeDesign, Events: 30_000})
	_, big := generate(t, Options{Shape: ShapeDesign, Events: 300_000})
	if small.LessonsInPin != big.LessonsInPin {
		t.Errorf("pin sizes %d and %d, want the same", small.LessonsInPin, big.LessonsInPin)
	}
	if r := float64(big.EnrollmentRowsInPin) / float64(small.EnrollmentRowsInPin); r < 9.5 || r > 10.5 {
		t.Errorf("enrollments grow %.2fx for 10x the events, want 10x", r)
	}
	for _, d := range big.Dates {
		b, s := big.ByDate[d], small.ByDate[d]
		if r := float64(b.Events) / float64(s.Events); r < 9.9 || r > 10.1 {
			t.Errorf("%s: events grow %.2fx, want 10x", d, r)
		}
		if r := float64(b.Learners) / float64(s.Learners); r < 9 || r > 11 {
			t.Errorf("%s: learners grow %.2fx, want about 10x", d, r)
		}
	}
}

// TestDesignDefaultUnchanged: the three-date design day's figures are those
// the generator gave before Options.Dates existed (the SHA-256 of its
// expected.json then), so the benchmark's cached days and figures stay valid.
// The hash changed once since, in session 37, for two fields only:
// previous_manifest_id and previous_enrollment_snapshot_id are empty, as the
// design files never held those pins (the figures are as before).
func TestDesignDefaultUnchanged(t *testing.T) {
	const before = "7035dc2b6c1a18887c49fa7603be1d4e2578a3932c3eb409f5f8dc4013601550"
	for _, dates := range []int{0, DefaultDesignDates} {
		dir, _ := generate(t, Options{Shape: ShapeDesign, Events: 20_000, Dates: dates})
		b, err := os.ReadFile(filepath.Join(dir, ExpectedFile))
		if err != nil {
			t.Fatal(err)
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(b)); sum != before {
			t.Errorf("dates %d: expected.json has SHA-256 %s, want %s (the default design day changed)", dates, sum, before)
		}
	}
}

func TestDesignOptionsRefused(t *testing.T) {
	for name, o := range map[string]Options{
		"variant":        {Out: t.TempDir(), Shape: ShapeDesign, Variant: VariantOverCap, Events: MinDesignEvents},
		"too small":      {Out: t.TempDir(), Shape: ShapeDesign, Events: MinDesignEvents - 1},
		"bogus shape":    {Out: t.TempDir(), Shape: "huge"},
		"no dates":       {Out: t.TempDir(), Shape: ShapeDesign, Events: MinDesignEvents, Dates: -1},
		"thin dates":     {Out: t.TempDir(), Shape: ShapeDesign, Events: 10*MinDesignEvents/DefaultDesignDates - 1, Dates: 10},
		"fixture, dates": {Out: t.TempDir(), Dates: 3},
	} {
		if _, err := Generate(context.Background(), o); err == nil {
			t.Errorf("%s: Generate accepted %+v", name, o)
		}
	}
	o := Options{Out: filepath.Join(t.TempDir(), "d"), Shape: ShapeDesign}.WithDefaults()
	if o.Events != DesignEvents {
		t.Errorf("design default events %d, want %d", o.Events, DesignEvents)
	}
}
