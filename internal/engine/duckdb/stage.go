package duckdb

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// sources resolves the file lists of the three inputs for spec.
type sources struct {
	raw, lessons, enrollments []string
}

func resolve(spec engine.Spec) (sources, error) {
	var s sources
	parts, err := inputs.RawPartitions(spec.Raw)
	if err != nil {
		return s, err
	}
	s.raw = windowFiles(parts, spec)
	if s.lessons, err = inputs.ParquetPath("lessons", spec.Lessons); err != nil {
		return s, err
	}
	if s.enrollments, err = inputs.ParquetPath("enrollments", spec.Enrollments); err != nil {
		return s, err
	}
	return s, nil
}

func dateList(ds []dates.Date) string {
	q := make([]string, len(ds))
	for i, d := range ds {
		q[i] = "DATE " + quote(d.String())
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// eventsQuery reads raw with a column list and a predicate on ingest_date,
// derives event_date from event_time in UTC (timezone('UTC', …) does not
// depend on the session zone) and keeps the requested dates. Every other raw
// column is dropped here, before any join.
// eventDateExpr derives event_date from event_time in UTC; timezone('UTC', …)
// does not depend on the session zone.
const eventDateExpr = `CAST(timezone('UTC', CAST(event_time AS TIMESTAMPTZ)) AS DATE)`

func eventsQuery(spec engine.Spec, raw []string) string {
	if len(raw) == 0 {
		return `SELECT NULL::VARCHAR AS event_id, NULL::VARCHAR AS learner_key, NULL::VARCHAR AS lesson_id,
			NULL::VARCHAR AS course_id, NULL::TIMESTAMPTZ AS event_time, NULL::DATE AS event_date WHERE false`
	}
	return fmt.Sprintf(`SELECT event_id, learner_key, lesson_id, course_id, event_time, event_date
FROM (
  SELECT event_id, learner_key, lesson_id, course_id,
         CAST(event_time AS TIMESTAMPTZ) AS event_time,
         %s AS event_date,
         CAST(regexp_extract(filename, 'ingest_date=([0-9]{4}-[0-9]{2}-[0-9]{2})/[^/]*$', 1) AS DATE) AS ingest_date
  FROM read_parquet(%s, union_by_name=true, hive_partitioning=false, filename=true)
)
WHERE ingest_date BETWEEN DATE %s AND DATE %s
  AND event_date IN %s`,
		eventDateExpr, list(raw), quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()), dateList(spec.Dates))
}

// factQuery is the event-level plan: events LEFT JOIN the manifest pin on
// lesson_id (unknown lessons stay, with a null manifest_id), LEFT JOIN the
// enrollment snapshot on (learner_key, course_id), then aggregate to the fact
// grain. It keeps two audit columns the published table does not carry:
// events whose course_id differs from the manifest's, and whether the events
// of one fact row disagree on course_id. A null course_id on any event makes
// the row's course_id null, so the null-key check sees it instead of min()
// quietly picking the other value.
func factQuery(spec engine.Spec, s sources) string {
	return fmt.Sprintf(`WITH events AS (
%s
),
manifest AS (
  SELECT lesson_id, course_id AS manifest_course_id, manifest_id, lesson_title
  FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE manifest_id = %s
),
enrollments AS (
  SELECT learner_key, course_id
  FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE snapshot_id = %s
),
joined AS (
  SELECT ev.learner_key, ev.lesson_id, ev.event_date, ev.course_id, ev.event_time,
         m.manifest_id, m.lesson_title, m.manifest_course_id,
         en.learner_key IS NOT NULL AS enrolled
  FROM events ev
  LEFT JOIN manifest m ON ev.lesson_id = m.lesson_id
  LEFT JOIN enrollments en ON ev.learner_key = en.learner_key AND ev.course_id = en.course_id
)
SELECT learner_key, lesson_id, event_date,
       CASE WHEN bool_or(course_id IS NULL) THEN NULL ELSE min(course_id) END AS course_id,
       min(manifest_id) AS manifest_id,
       min(lesson_title) AS lesson_title,
       count(*) AS event_count,
       min(event_time) AS first_event_time,
       max(event_time) AS last_event_time,
       bool_or(enrolled) AS enrolled,
       count(*) FILTER (WHERE manifest_course_id IS NOT NULL AND course_id IS NOT NULL AND manifest_course_id <> course_id) AS manifest_course_conflicts,
       (count(DISTINCT course_id) > 1 OR (bool_or(course_id IS NULL) AND count(course_id) > 0)) AS course_conflict
FROM joined
GROUP BY learner_key, lesson_id, event_date`,
		indent(eventsQuery(spec, s.raw)), list(s.lessons), quote(spec.ManifestID), list(s.enrollments), quote(spec.EnrollmentSnapshotID))
}

func indent(q string) string { return "  " + strings.ReplaceAll(q, "\n", "\n  ") }

// Stage implements engine.Engine.
func (e *Engine) Stage(ctx context.Context, spec engine.Spec, warehouse, stagingDir string) (engine.Staged, error) {
	st := engine.Staged{
		Stage:          map[dates.Date]gate.StageFigures{},
		FactFiles:      map[dates.Date][]pointer.File{},
		CourseDayFiles: map[dates.Date][]pointer.File{},
	}
	s, err := resolve(spec)
	if err != nil {
		return st, err
	}
	// The input count is a separate scan of raw on purpose: the silent-drop
	// check must not be derived from the output it audits.
	rows, err := e.conn.QueryContext(ctx, "SELECT event_date, count(*) FROM ("+eventsQuery(spec, s.raw)+") GROUP BY event_date")
	if err != nil {
		return st, fmt.Errorf("count input events: %w", firstLine(err))
	}
	for rows.Next() {
		var d dates.Date
		var n int64
		var t any
		if err := rows.Scan(&t, &n); err != nil {
			rows.Close()
			return st, fmt.Errorf("count input events: %w", err)
		}
		if d, err = asDate(t); err != nil {
			rows.Close()
			return st, err
		}
		f := st.Stage[d]
		f.InputEvents = n
		st.Stage[d] = f
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("count input events: %w", firstLine(err))
	}

	if err := e.exec(ctx, "build fact_lesson_engagement", "CREATE OR REPLACE TEMP TABLE fact_stage AS "+factQuery(spec, s)); err != nil {
		return st, err
	}
	defer e.exec(context.WithoutCancel(ctx), "drop fact_stage", "DROP TABLE IF EXISTS fact_stage")

	rows, err = e.conn.QueryContext(ctx, `SELECT event_date, sum(manifest_course_conflicts)::BIGINT, count(*) FILTER (WHERE course_conflict)
		FROM fact_stage GROUP BY event_date`)
	if err != nil {
		return st, fmt.Errorf("count course conflicts: %w", firstLine(err))
	}
	for rows.Next() {
		var t any
		var mc, rc int64
		if err := rows.Scan(&t, &mc, &rc); err != nil {
			rows.Close()
			return st, fmt.Errorf("count course conflicts: %w", err)
		}
		d, err := asDate(t)
		if err != nil {
			rows.Close()
			return st, err
		}
		f := st.Stage[d]
		f.ManifestCourseConflicts, f.FactRowCourseConflicts = mc, rc
		st.Stage[d] = f
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("count course conflicts: %w", firstLine(err))
	}

	for _, d := range spec.Dates {
		if st.Stage[d].InputEvents == 0 {
			continue
		}
		day := "event_date = DATE " + quote(d.String())
		fact := func(pred string) string {
			return fmt.Sprintf(`SELECT learner_key, lesson_id, course_id, manifest_id, lesson_title, event_count,
			first_event_time, last_event_time, enrolled, %s AS enrollment_snapshot_id, %s AS job_id
			FROM fact_stage WHERE %s%s ORDER BY learner_key, lesson_id`,
				quote(spec.EnrollmentSnapshotID), quote(spec.JobID), day, pred)
		}
		files, err := e.writeDate(ctx, warehouse, path.Join(stagingDir, engine.FactTable, "event_date="+d.String()), fact, "learner_key, lesson_id", spec.TargetFileBytes)
		if err != nil {
			return st, err
		}
		st.FactFiles[d] = files
		failpoint.Hit(failpoint.MidStaging)
		courseDay := func(pred string) string {
			return fmt.Sprintf(`SELECT course_id,
			sum(event_count)::BIGINT AS event_count,
			coalesce(sum(event_count) FILTER (WHERE manifest_id IS NOT NULL), 0)::BIGINT AS matched_lesson_count,
			coalesce(sum(event_count) FILTER (WHERE manifest_id IS NULL), 0)::BIGINT AS unknown_lesson_count,
			coalesce(sum(event_count) FILTER (WHERE enrolled), 0)::BIGINT AS enrolled_event_count,
			count(DISTINCT learner_key) AS learner_count,
			%s AS job_id
			FROM fact_stage WHERE %s%s GROUP BY course_id ORDER BY course_id`, quote(spec.JobID), day, pred)
		}
		files, err = e.writeDate(ctx, warehouse, path.Join(stagingDir, engine.CourseDayTable, "event_date="+d.String()), courseDay, "course_id", spec.TargetFileBytes)
		if err != nil {
			return st, err
		}
		st.CourseDayFiles[d] = files
	}
	return st, nil
}

// writeDate writes one date of one table into relDir. The file count comes
// from the bytes written, never from a partition count: the date is first
// written as one hidden file; when TargetFiles says it is too big it is
// rewritten into n files split by a hash of splitKey (the table's grain), so
// a row's file is a function of its key. query builds the SELECT with an
// extra predicate appended to its WHERE clause.
func (e *Engine) writeDate(ctx context.Context, root, relDir string, query func(pred string) string, splitKey string, target int64) ([]pointer.File, error) {
	dir := abs(root, relDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create staging %s: %w", dir, err)
	}
	single := filepath.Join(dir, "_single.parquet")
	if err := e.copy(ctx, query(""), single); err != nil {
		return nil, err
	}
	size, err := fileSize(single)
	if err != nil {
		return nil, fmt.Errorf("stat staged %s: %w", single, err)
	}
	n := engine.TargetFiles(size, target)
	var names []string
	if n == 1 {
		name := "part-00000.parquet"
		if err := os.Rename(single, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("rename staged %s: %w", single, err)
		}
		names = []string{name}
	} else {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("part-%05d.parquet", i)
			pred := fmt.Sprintf(" AND hash(%s) %% %d = %d", splitKey, n, i)
			if err := e.copy(ctx, query(pred), filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		if err := os.Remove(single); err != nil {
			return nil, fmt.Errorf("remove %s: %w", single, err)
		}
	}
	var files []pointer.File
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := warehouse.SyncFile(p); err != nil {
			return nil, err
		}
		size, err := fileSize(p)
		if err != nil {
			return nil, fmt.Errorf("stat staged %s: %w", p, err)
		}
		var rows int64
		if err := e.conn.QueryRowContext(ctx, "SELECT num_rows FROM parquet_file_metadata("+quote(p)+")").Scan(&rows); err != nil {
			return nil, fmt.Errorf("read staged %s: %w", p, firstLine(err))
		}
		files = append(files, pointer.File{Path: path.Join(relDir, name), Bytes: size, Rows: rows})
	}
	if err := syncDirs(dir); err != nil {
		return nil, err
	}
	return files, nil
}

func (e *Engine) copy(ctx context.Context, query, file string) error {
	q := fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, COMPRESSION zstd)", query, quote(file))
	return e.exec(ctx, "write "+file, q)
}

// syncDirs fsyncs dir and its parents up to the staging root, so the new
// directory entries survive a crash as well as the files.
func syncDirs(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		if err := warehouse.SyncFile(d); err != nil {
			return err
		}
		if filepath.Base(d) == "staging" || filepath.Dir(d) == d {
			return nil
		}
	}
}
