package duckdb_test

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestUnknownLessons lists the hand-written case's unknown lessons: summed
// across files, matched lessons left out, at most 20, ties by lesson_id
// bytewise with the null lesson_id last, and an empty list for a date with
// no unknown lesson or no file.
func TestUnknownLessons(t *testing.T) {
	c := publishtest.NewUnknownLessonsCase(t)
	e := harness().Open(t)
	defer e.Close()
	got, err := e.UnknownLessons(context.Background(), c.Warehouse, c.Staged, c.Dates, gate.TopUnknownLessons)
	if err != nil {
		t.Fatal(err)
	}
	c.CheckUnknownLessons(t, "duckdb", got)
}
