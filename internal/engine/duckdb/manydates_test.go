package duckdb_test

import (
	"context"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestInspectManyDates: the per-date figures come from one statement
// grouped by each event's day and partition whatever the number of dates
// (a filter a figure and a date cost rows x dates: a 200-date backfill's
// inspect took 7 to 11 s, against 1 s at 100). Both ways of counting the
// id repeats (in the grouped statement, or by a statement of their own)
// give the hand-counted figures (publishtest.ManyDates) on 18 dates with
// two gaps, so the days before, between and after the requested ones have
// events that must be counted stray or nowhere, and events a year away
// are counted at the edge of the days the statement tells apart.
func TestInspectManyDates(t *testing.T) {
	spec := publishtest.ManyDates(t, publishtest.LoadFixture(t, ""))
	spec.Dates = slices.Delete(slices.Clone(spec.Dates), 12, 13)
	spec.Dates = slices.Delete(spec.Dates, 5, 6)
	e, err := duckdb.Open(context.Background(), map[string]string{"threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, way := range []string{"kept", "hash"} {
		t.Run(way, func(t *testing.T) {
			duckdb.CountRepeatsBy(e, way)
			in, err := e.Inspect(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			publishtest.CheckManyDates(t, spec.Dates, in)
		})
	}
}
