package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gen"
)

// checkFigures compares every course_day row and each date's fact row count
// and event sum with the generator's expected.json. courseDay is a query
// over the whole course_day table (event_date a column), fact a query over
// one date's fact rows; both are whatever reads the output as a reader
// would.
func checkFigures(ctx context.Context, db *sql.DB, exp gen.Expected, courseDay string, fact func(dates.Date) (string, error)) error {
	rows, err := db.QueryContext(ctx, `SELECT strftime(event_date, '%Y-%m-%d'), course_id, event_count, unknown_lesson_count,
		matched_lesson_count, enrolled_event_count, learner_count FROM (`+courseDay+`)`)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var d, c string
		var g gen.CourseFigures
		if err := rows.Scan(&d, &c, &g.Events, &g.Unknown, &g.Matched, &g.Enrolled, &g.Learners); err != nil {
			return err
		}
		want := exp.ByDateCourse[dates.MustParse(d)][c]
		if g != want {
			return fmt.Errorf("course_day %s %s: got %+v, want %+v", d, c, g, want)
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	wantRows := 0
	for _, d := range exp.Dates {
		wantRows += len(exp.ByDateCourse[d])
	}
	if seen != wantRows {
		return fmt.Errorf("course_day has %d rows, want %d", seen, wantRows)
	}
	for _, d := range exp.Dates {
		q, err := fact(d)
		if err != nil {
			return err
		}
		var n, events int64
		if err := db.QueryRowContext(ctx, "SELECT count(*), sum(event_count) FROM ("+q+")").Scan(&n, &events); err != nil {
			return fmt.Errorf("fact %s: %w", d, err)
		}
		if w := exp.ByDate[d]; n != w.FactRows || events != w.Events {
			return fmt.Errorf("fact %s: %d rows / %d events, want %d / %d", d, n, events, w.FactRows, w.Events)
		}
	}
	return nil
}
