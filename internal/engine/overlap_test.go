package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// overlapRunner is a Runner of an engine that overlaps the writes, whose
// Write of each table does what the case says.
type overlapRunner struct {
	write map[string]func(ctx context.Context) error
}

func (overlapRunner) OverlapsWrites() bool { return true }

func (overlapRunner) BuildFacts(context.Context, Spec) (map[dates.Date]DateFigures, func(), error) {
	return map[dates.Date]DateFigures{dates.MustParse("2026-03-02"): {FactRows: 10, FactWidth: 100, Courses: 2}}, func() {}, nil
}

func (r overlapRunner) Write(ctx context.Context, _ Spec, table string, _ map[dates.Date]int, _, _ Dir, _ func(dates.Date)) error {
	return r.write[table](ctx)
}

// TestOverlappedWritesFailTogether: with an Overlapper, course_day's write
// runs while the fact table's does, and whichever fails first stops the
// other and is the error the stage returns (not the other's cancellation).
func TestOverlappedWritesFailTogether(t *testing.T) {
	factFailed, courseDayFailed := errors.New("fact write failed"), errors.New("course_day write failed")
	// blocked waits for its cancellation, which the other write's failure
	// must bring; a minute without one fails the test instead of hanging.
	blocked := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return errors.New("never cancelled")
		}
	}
	for _, tc := range []struct {
		name            string
		fact, courseDay func(ctx context.Context) error
		want            error
	}{
		{"fact fails while course_day runs", func(context.Context) error { return factFailed }, blocked, factFailed},
		{"course_day fails while the fact table is written", blocked, func(context.Context) error { return courseDayFailed }, courseDayFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dates.MustParse("2026-03-02")
			spec := Spec{JobID: "j", Dates: []dates.Date{d}, InputEvents: map[dates.Date]int64{d: 10}}
			r := overlapRunner{write: map[string]func(context.Context) error{FactTable: tc.fact, CourseDayTable: tc.courseDay}}
			_, err := RunStage(context.Background(), r, spec, local.New(t.TempDir(), local.Options{}), "staging/job_id=j", nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("stage error %v, want %v", err, tc.want)
			}
		})
	}
}
