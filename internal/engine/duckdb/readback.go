package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

func asDate(v any) (dates.Date, error) {
	t, ok := v.(time.Time)
	if !ok {
		return 0, fmt.Errorf("unexpected date value %v (%T)", v, v)
	}
	return dates.FromTime(t), nil
}

func paths(wh storage.Bucket, files []pointer.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = wh.Location().Join(f.Path).String()
	}
	return out
}

// ReadBack implements engine.Engine. It reads exactly the listed files, one
// date at a time, so the date comes from the list and not from parsing a
// path, and nothing else under staging can leak into the figures.
func (e *Engine) ReadBack(ctx context.Context, wh storage.Bucket, spec engine.Spec, staged engine.Staged) (map[dates.Date]gate.StagedFigures, error) {
	figs, err := e.readBack(ctx, wh, spec, staged)
	return figs, e.outOfMemory(err)
}

func (e *Engine) readBack(ctx context.Context, wh storage.Bucket, spec engine.Spec, staged engine.Staged) (map[dates.Date]gate.StagedFigures, error) {
	out := map[dates.Date]gate.StagedFigures{}
	for i, d := range spec.Dates {
		// A date at a time: a backfill's read-back is many statements.
		e.reporter().Step(i, len(spec.Dates), 0, "read back "+d.String())
		var f gate.StagedFigures
		if files := staged.FactFiles[d]; len(files) > 0 {
			q := fmt.Sprintf(`SELECT count(*), coalesce(sum(event_count), 0)::BIGINT,
				count(*) FILTER (WHERE learner_key IS NULL OR lesson_id IS NULL OR course_id IS NULL)
				FROM read_parquet(%s, hive_partitioning=false)`, FileList(paths(wh, files)))
			if err := e.conn.QueryRowContext(ctx, q).Scan(&f.FactRows, &f.FactEventSum, &f.FactNullKeyRows); err != nil {
				return nil, fmt.Errorf("read back %s %s: %w", engine.FactTable, d, firstLine(err))
			}
		}
		if files := staged.CourseDayFiles[d]; len(files) > 0 {
			q := fmt.Sprintf(`SELECT count(*), coalesce(sum(event_count), 0)::BIGINT,
				coalesce(sum(matched_lesson_count), 0)::BIGINT, coalesce(sum(unknown_lesson_count), 0)::BIGINT,
				coalesce(sum(enrolled_event_count), 0)::BIGINT,
				count(*) FILTER (WHERE matched_lesson_count + unknown_lesson_count <> event_count)
				FROM read_parquet(%s, hive_partitioning=false)`, FileList(paths(wh, files)))
			if err := e.conn.QueryRowContext(ctx, q).Scan(&f.CourseDayRows, &f.EventCount, &f.MatchedLessonCount,
				&f.UnknownLessonCount, &f.EnrolledEventCount, &f.IdentityViolatedRows); err != nil {
				return nil, fmt.Errorf("read back %s %s: %w", engine.CourseDayTable, d, firstLine(err))
			}
		}
		out[d] = f
	}
	// Every date read: the phase's record counts them all as steps done.
	e.reporter().Step(len(spec.Dates), len(spec.Dates), 0, "")
	return out, nil
}

// UnknownLessons implements engine.Engine: one query per date over exactly
// its listed fact files.
func (e *Engine) UnknownLessons(ctx context.Context, wh storage.Bucket, staged engine.Staged, ds []dates.Date, n int) (map[dates.Date][]gate.LessonCount, error) {
	top, err := e.unknownLessons(ctx, wh, staged, ds, n)
	return top, e.outOfMemory(err)
}

func (e *Engine) unknownLessons(ctx context.Context, wh storage.Bucket, staged engine.Staged, ds []dates.Date, n int) (map[dates.Date][]gate.LessonCount, error) {
	out := map[dates.Date][]gate.LessonCount{}
	for _, d := range ds {
		out[d] = []gate.LessonCount{}
		files := staged.FactFiles[d]
		if len(files) == 0 {
			continue
		}
		// ORDER BY states the collation (bytewise, as Spark compares, whatever
		// duckdb.default_collation says) and the null order (Spark's
		// default is nulls first).
		q := fmt.Sprintf(`SELECT lesson_id, sum(event_count)::BIGINT AS events
			FROM read_parquet(%s, hive_partitioning=false)
			WHERE manifest_id IS NULL
			GROUP BY lesson_id
			ORDER BY events DESC, lesson_id COLLATE "binary" ASC NULLS LAST
			LIMIT %d`, FileList(paths(wh, files)), n)
		rows, err := e.conn.QueryContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("unknown lessons of %s %s: %w", engine.FactTable, d, firstLine(err))
		}
		for rows.Next() {
			var id sql.NullString
			var c gate.LessonCount
			if err := rows.Scan(&id, &c.EventCount); err != nil {
				rows.Close()
				return nil, fmt.Errorf("unknown lessons of %s %s: %w", engine.FactTable, d, firstLine(err))
			}
			if id.Valid {
				c.LessonID = &id.String
			}
			out[d] = append(out[d], c)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("unknown lessons of %s %s: %w", engine.FactTable, d, firstLine(err))
		}
	}
	return out, nil
}
