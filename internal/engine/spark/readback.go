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

// listed is a query over exactly the listed files of every date: one
// parquet.`file` relation per file, tagged with the date it is listed
// under and joined with UNION ALL. It never scans a directory, so nothing
// else under staging can leak into the figures, and the date comes from
// the list, not from parsing a path.
func listed(w writer, byDate map[dates.Date][]pointer.File, ds []dates.Date, cols string) string {
	var parts []string
	for _, d := range ds {
		for _, f := range byDate[d] {
			parts = append(parts, fmt.Sprintf("SELECT %s AS listed_date, %s FROM %s",
				quote(d.String()), cols, pathRef(w.uri(f.Path))))
		}
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// ReadBack implements engine.Engine: Spark computes the gate's figures from
// the staged bytes read back, one query per table for all dates.
func (e *Engine) ReadBack(ctx context.Context, wh storage.Bucket, spec engine.Spec, staged engine.Staged) (map[dates.Date]gate.StagedFigures, error) {
	w := writer{e: e, spec: spec, wh: wh}
	out := map[dates.Date]gate.StagedFigures{}
	for _, d := range spec.Dates {
		out[d] = gate.StagedFigures{}
	}
	if files := listed(w, staged.FactFiles, spec.Dates,
		"learner_key, lesson_id, course_id, CAST(event_count AS BIGINT) AS event_count"); files != "" {
		if err := e.byDate(ctx, "read back "+engine.FactTable, fmt.Sprintf(`SELECT listed_date, count(*), coalesce(sum(event_count), 0),
			count_if(learner_key IS NULL OR lesson_id IS NULL OR course_id IS NULL)
			FROM (%s) GROUP BY listed_date`, files), func(d dates.Date, n []int64) {
			f := out[d]
			f.FactRows, f.FactEventSum, f.FactNullKeyRows = n[0], n[1], n[2]
			out[d] = f
		}); err != nil {
			return nil, err
		}
	}
	if files := listed(w, staged.CourseDayFiles, spec.Dates, `CAST(event_count AS BIGINT) AS event_count,
		CAST(matched_lesson_count AS BIGINT) AS matched_lesson_count, CAST(unknown_lesson_count AS BIGINT) AS unknown_lesson_count,
		CAST(enrolled_event_count AS BIGINT) AS enrolled_event_count`); files != "" {
		if err := e.byDate(ctx, "read back "+engine.CourseDayTable, fmt.Sprintf(`SELECT listed_date, count(*), coalesce(sum(event_count), 0),
			coalesce(sum(matched_lesson_count), 0), coalesce(sum(unknown_lesson_count), 0),
			coalesce(sum(enrolled_event_count), 0),
			count_if(matched_lesson_count + unknown_lesson_count <> event_count)
			FROM (%s) GROUP BY listed_date`, files), func(d dates.Date, n []int64) {
			f := out[d]
			f.CourseDayRows, f.EventCount, f.MatchedLessonCount = n[0], n[1], n[2]
			f.UnknownLessonCount, f.EnrolledEventCount, f.IdentityViolatedRows = n[3], n[4], n[5]
			out[d] = f
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
