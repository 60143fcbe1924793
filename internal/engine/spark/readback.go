package spark

import (
	"context"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// listed is a query over exactly the listed files of every date: their
// parquet scans (scans), each tagged with the date its files are listed
// under and joined with UNION ALL. It never scans a directory, so nothing
// else under staging can leak into the figures, and the date comes from
// the list, not from parsing a path.
func listed(wh storage.Bucket, byDate map[dates.Date][]pointer.File, ds []dates.Date, cols string) (string, error) {
	var parts []string
	for _, d := range ds {
		var paths []string
		for _, f := range byDate[d] {
			p, err := serverPath(wh.Location().Join(f.Path).String())
			if err != nil {
				return "", err
			}
			paths = append(paths, p)
		}
		for _, s := range scans(paths) {
			parts = append(parts, fmt.Sprintf("SELECT %s AS listed_date, %s FROM %s", quote(d.String()), cols, s))
		}
	}
	return strings.Join(parts, "\nUNION ALL\n"), nil
}

// ReadBack implements engine.Engine: Spark computes the gate's figures from
// the staged bytes read back, both tables' dates in one query (a statement
// is a Spark job with its fixed cost), each row tagged with its table.
func (e *Engine) ReadBack(ctx context.Context, wh storage.Bucket, spec engine.Spec, staged engine.Staged) (map[dates.Date]gate.StagedFigures, error) {
	out := map[dates.Date]gate.StagedFigures{}
	for _, d := range spec.Dates {
		out[d] = gate.StagedFigures{}
	}
	const fact, courseDay = 0, 1
	var parts []string
	files, err := listed(wh, staged.FactFiles, spec.Dates,
		"learner_key, lesson_id, course_id, CAST(event_count AS BIGINT) AS event_count")
	if err != nil {
		return nil, err
	}
	if files != "" {
		parts = append(parts, fmt.Sprintf(`SELECT listed_date, %d, count(*), coalesce(sum(event_count), 0),
			count_if(learner_key IS NULL OR lesson_id IS NULL OR course_id IS NULL), 0, 0, 0
			FROM (%s) GROUP BY listed_date`, fact, files))
	}
	files, err = listed(wh, staged.CourseDayFiles, spec.Dates, `CAST(event_count AS BIGINT) AS event_count,
		CAST(matched_lesson_count AS BIGINT) AS matched_lesson_count, CAST(unknown_lesson_count AS BIGINT) AS unknown_lesson_count,
		CAST(enrolled_event_count AS BIGINT) AS enrolled_event_count`)
	if err != nil {
		return nil, err
	}
	if files != "" {
		parts = append(parts, fmt.Sprintf(`SELECT listed_date, %d, count(*), coalesce(sum(event_count), 0),
			coalesce(sum(matched_lesson_count), 0), coalesce(sum(unknown_lesson_count), 0),
			coalesce(sum(enrolled_event_count), 0),
			count_if(matched_lesson_count + unknown_lesson_count <> event_count)
			FROM (%s) GROUP BY listed_date`, courseDay, files))
	}
	if len(parts) == 0 {
		return out, nil
	}
	err = e.byDate(ctx, "read back "+engine.FactTable+" and "+engine.CourseDayTable, strings.Join(parts, "\nUNION ALL\n"), func(d dates.Date, n []int64) {
		f := out[d]
		if n[0] == fact {
			f.FactRows, f.FactEventSum, f.FactNullKeyRows = n[1], n[2], n[3]
		} else {
			f.CourseDayRows, f.EventCount, f.MatchedLessonCount = n[1], n[2], n[3]
			f.UnknownLessonCount, f.EnrolledEventCount, f.IdentityViolatedRows = n[4], n[5], n[6]
		}
		out[d] = f
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UnknownLessons implements engine.Engine: one query over the listed fact
// files of the dates, ranked within each date.
func (e *Engine) UnknownLessons(ctx context.Context, wh storage.Bucket, staged engine.Staged, ds []dates.Date, n int) (map[dates.Date][]gate.LessonCount, error) {
	out := map[dates.Date][]gate.LessonCount{}
	for _, d := range ds {
		out[d] = []gate.LessonCount{}
	}
	files, err := listed(wh, staged.FactFiles, ds, "lesson_id, manifest_id, CAST(event_count AS BIGINT) AS event_count")
	if err != nil {
		return nil, err
	}
	if files == "" {
		return out, nil
	}
	// The ORDER BY states the collation (bytewise, as DuckDB's query says,
	// whatever the session's default collation) and the null order (Spark
	// puts nulls first in an ascending sort, DuckDB last).
	q := fmt.Sprintf(`SELECT listed_date, lesson_id, events FROM (
		SELECT listed_date, lesson_id, events,
			row_number() OVER (PARTITION BY listed_date ORDER BY events DESC, lesson_id COLLATE UTF8_BINARY ASC NULLS LAST) AS r
		FROM (SELECT listed_date, lesson_id, sum(event_count) AS events FROM (%s)
			WHERE manifest_id IS NULL GROUP BY listed_date, lesson_id))
		WHERE r <= %d ORDER BY listed_date, r`, files, n)
	what := "unknown lessons of " + engine.FactTable
	rows, err := e.rows(ctx, what, q)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		s, _ := r.At(0).(string)
		d, err := dates.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: date %v: %w", what, r.At(0), err)
		}
		var c gate.LessonCount
		switch id := r.At(1).(type) {
		case string:
			c.LessonID = &id
		case nil:
		default:
			return nil, fmt.Errorf("%s: lesson_id %v (%T)", what, id, id)
		}
		if c.EventCount, err = asInt(r.At(2)); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out[d] = append(out[d], c)
	}
	return out, nil
}
