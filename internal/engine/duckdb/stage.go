package duckdb

import (
	"context"
	"fmt"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/storage"
)

// sources resolves the file lists of the three inputs for spec.
type sources struct {
	raw, lessons, enrollments []string
	// rr is how rawScan reads the raw files; filled by the engine.
	rr rawRead
}

// resolve takes the attempt's listing: the engine reads exactly those
// files, the raw ones of a zoneless nanosecond event_time apart (rawScan).
func (e *Engine) resolve(ctx context.Context, spec engine.Spec) (sources, error) {
	s := sources{raw: spec.Inputs.RawPaths(), lessons: spec.Inputs.LessonPaths(), enrollments: spec.Inputs.EnrollmentPaths()}
	var err error
	s.rr, err = e.rawLayout(ctx, s.raw)
	return s, err
}

// eventsQuery reads raw with a column list and a predicate on ingest_date,
// derives event_date (eventDateExpr) and keeps the requested dates' events,
// each from its own partitions (ownWindow). Every other raw column is dropped here, before any join. The dates are kept by
// their instant ranges (utcDayRanges), not by event_date: DuckDB derived
// each row's date once for every requested date in the filter and again
// for the column (about 0.6 s of the design day's 11 s grain).
// sourceFileColumn names the column read_parquet adds with each row's
// file. DuckDB's default name, filename, is an ordinary field a producer may
// add to its events (an unread column, which the contract drops), and
// read_parquet refuses a file holding a column of the name it adds: the
// name is reserved, and a raw file holding it refused up front.
const sourceFileColumn = inputs.ReservedColumn

func eventsQuery(spec engine.Spec, raw []string, rr rawRead) string {
	if len(raw) == 0 {
		return `SELECT NULL::VARCHAR AS event_id, NULL::VARCHAR AS learner_key, NULL::VARCHAR AS lesson_id,
			NULL::VARCHAR AS course_id, NULL::TIMESTAMPTZ AS event_time, NULL::DATE AS event_date WHERE false`
	}
	return fmt.Sprintf(`SELECT event_id, learner_key, lesson_id, course_id, event_time, event_date
FROM (
  SELECT event_id, learner_key, lesson_id, course_id,
         CAST(event_time AS TIMESTAMPTZ) AS event_time,
         %s AS event_date,
         %s AS ingest_date
  FROM %s
)
WHERE ingest_date BETWEEN DATE %s AND DATE %s
  AND %s
  AND %s`,
		eventDateExpr, ingestDateOf(sourceFileColumn), rawScan(raw, rr), quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()),
		utcDayRanges("epoch_us(event_time)", spec.Dates), ownWindow("event_time", "ingest_date", spec.LatenessDays))
}

// factQuery is the staging plan. It aggregates the events to the fact grain
// (learner_key, lesson_id, event_date) first, and only then joins the
// manifest pin on lesson_id (LEFT: unknown lessons stay, with a null
// manifest_id) and the enrollment snapshot on (learner_key, course_id), so
// both hash joins probe with fact rows instead of events (about 2.5 times
// fewer on the design day) and the aggregation's input is the narrow raw
// projection, not the joined rows.
//
// The aggregation groups by course_id too, so a key whose events disagree
// on course_id (a contract conflict the gate rejects) comes out as one row
// per course value, each of one course: its manifest conflicts, and its
// enrollment joined on its own course, are then exactly the event-level
// ones, and mergeConflictRows adds such rows up into the key's one row.
// Grouping on course_id is cheaper than seeing a disagreement in the
// aggregates: with min(course_id), max(course_id) and count(course_id)
// (the plan before) the 60M design day's statement took 16.3 to 17.3 s in
// whole publishes, grouped on course_id 13.7 to 14.1 s (a string max()
// alone is about 1.9 s of it).
//
// The temp table keeps a matched flag instead of manifest_id and
// lesson_title: manifest_id is the pin for every matched row, and the title
// is joined from the 40,000-row pin when a date is written, so 23M rows on
// the design day do not carry two strings through memory (and spill).
//
// The plan assumes gate checks 2 and 3 passed (the job runs them before
// Stage): a lesson or enrollment pair listed twice would repeat fact rows.
//
// Three audit columns are kept that the published table does not carry:
// the events whose course_id differs from the manifest's, whether the
// events of the row disagree on course_id (set by mergeConflictRows), and
// whether the row's course_id is its lesson's in the manifest (agrees),
// which tells mergeConflictRows where a key of several rows can be.
func factQuery(spec engine.Spec, s sources) string {
	return fmt.Sprintf(`WITH events AS (
%s
),
grain AS (
  SELECT learner_key, lesson_id, event_date, course_id,
         count(*) AS event_count,
         min(event_time) AS first_event_time, max(event_time) AS last_event_time
  FROM events
  GROUP BY learner_key, lesson_id, event_date, course_id
),
%s
SELECT g.learner_key, g.lesson_id, g.event_date, g.course_id,
       m.lesson_id IS NOT NULL AS matched, g.event_count, g.first_event_time, g.last_event_time,
       en.learner_key IS NOT NULL AS enrolled,
       CASE WHEN m.manifest_course_id <> g.course_id THEN g.event_count ELSE 0 END AS manifest_course_conflicts,
       false AS course_conflict,
       coalesce(m.manifest_course_id = g.course_id, false) AS agrees
FROM grain g
LEFT JOIN manifest m ON g.lesson_id = m.lesson_id
LEFT JOIN enrollments en ON g.learner_key = en.learner_key AND g.course_id = en.course_id`,
		eventsQuery(spec, s.raw, s.rr), dimensions(spec, s))
}

// dimensions are the two pins as CTEs, filtered before any join.
func dimensions(spec engine.Spec, s sources) string {
	return manifestCTE(spec, s) + fmt.Sprintf(`,
enrollments AS (
  SELECT learner_key, course_id
  FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s
)`, FileList(s.enrollments), pinFilter("snapshot_id", spec.EnrollmentSnapshotID))
}

// pinFilter keeps col's rows of the pin value. Written so that DuckDB
// does not prune row groups by their footer statistics, which no CRC
// covers: a footer whose min and max lie about the pin column (damage, or
// a writer's bug) had the pin's rows skipped, and the enrolled figures
// published wrong with exit 0, while Spark reads every row. It still runs
// in the scan; on the design day it costs nothing measurable
// (benchmark.md, run 27).
func pinFilter(col, value string) string { return col + " || '' = " + quote(value) }

func manifestCTE(spec engine.Spec, s sources) string {
	return fmt.Sprintf(`manifest AS (
  SELECT lesson_id, course_id AS manifest_course_id, manifest_id, lesson_title
  FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s
)`, FileList(s.lessons), pinFilter("manifest_id", spec.ManifestID))
}

// sameKey joins two fact tables' aliases on the grain. A null key column
// is a value here, as GROUP BY made it one.
func sameKey(a, b string) string {
	return fmt.Sprintf("%[1]s.learner_key IS NOT DISTINCT FROM %[2]s.learner_key AND %[1]s.lesson_id IS NOT DISTINCT FROM %[2]s.lesson_id AND %[1]s.event_date = %[2]s.event_date", a, b)
}

// conflictKeysQuery finds the keys of fact_stage that have more than one
// row: those whose events disagree on course_id (factQuery). A key's rows
// differ in course_id, so at most one of them has its lesson's manifest
// course (agrees) and every other is a suspect. A key of several rows is
// therefore either two suspects or more, found by grouping the suspects
// alone (about 1% of the design day's rows, mostly unknown lessons), or
// one suspect and one agreeing row; then the lesson has a manifest course
// and the suspect's course is null or another (may_pair), and only such
// suspects are looked up among all the rows. The design day has none, so
// its search never probes the other 99% with the suspects' keys (a lookup
// of every suspect was 0.5 s of its 23M rows). Spilled, reading the
// suspects out of the temp table is the cost: 2 to 8 s of the ten-date
// backfill.
var conflictKeysQuery = `WITH suspects AS MATERIALIZED (
  SELECT learner_key, lesson_id, event_date, course_id IS NULL OR manifest_course_conflicts > 0 AS may_pair
  FROM fact_stage WHERE NOT agrees
),
paired AS (
  SELECT f.learner_key, f.lesson_id, f.event_date
  FROM fact_stage f SEMI JOIN (SELECT * FROM suspects WHERE may_pair) s ON ` + sameKey("f", "s") + `
  WHERE f.agrees
)
SELECT learner_key, lesson_id, event_date
FROM (SELECT learner_key, lesson_id, event_date FROM suspects UNION ALL SELECT * FROM paired)
GROUP BY learner_key, lesson_id, event_date HAVING count(*) > 1`

// mergedRowsQuery adds up the rows of each key in fact_conflicts into the
// key's one row, as the event-level plan computes it: a null course_id on
// any event makes the row's null; any enrolled event makes it enrolled.
var mergedRowsQuery = `SELECT f.learner_key, f.lesson_id, f.event_date,
       CASE WHEN bool_or(f.course_id IS NULL) THEN NULL ELSE min(f.course_id) END AS course_id,
       bool_or(f.matched) AS matched, sum(f.event_count)::BIGINT AS event_count,
       min(f.first_event_time) AS first_event_time, max(f.last_event_time) AS last_event_time,
       bool_or(f.enrolled) AS enrolled, sum(f.manifest_course_conflicts)::BIGINT AS manifest_course_conflicts,
       true AS course_conflict, false AS agrees
FROM fact_stage f SEMI JOIN fact_conflicts k ON ` + sameKey("f", "k") + `
GROUP BY f.learner_key, f.lesson_id, f.event_date`

// Stage implements engine.Engine: the shared driver (engine.RunStage)
// decides the order and the files; runner runs DuckDB's SQL.
func (e *Engine) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, stagingDir string) (engine.Staged, error) {
	s, err := e.resolve(ctx, spec)
	if err != nil {
		return engine.Staged{}, err
	}
	r := &runner{e: e, s: s, steps: stageSteps{total: 2 + 2*len(spec.Dates), p: e.reporter()}}
	st, err := engine.RunStage(ctx, r, spec, wh, stagingDir, e.reporter())
	r.steps.done = r.steps.total // dates without events wrote nothing
	r.steps.next("")
	return st, e.outOfMemory(err)
}

// runner is the DuckDB side of engine.Runner. It writes a table's dates
// with a COPY a date, or in a few partitioned COPYs when the temp table
// spilled (Write), and reports a step per statement.
type runner struct {
	e     *Engine
	s     sources
	steps stageSteps
	// figs are BuildFacts' figures, whose fact rows decide where the
	// titles are written as an ENUM (enumTitles).
	figs map[dates.Date]engine.DateFigures
	// titleEnum reports that BuildFacts made titleType of the pin's titles.
	titleEnum bool
}

// BuildFacts implements engine.Runner: the fact grain as a temp table, a
// key whose events disagree on course_id merged into its one row
// (mergeConflictRows), then each date's figures in one scan.
func (r *runner) BuildFacts(ctx context.Context, spec engine.Spec) (map[dates.Date]engine.DateFigures, func(), error) {
	e := r.e
	release := func() { e.exec(context.WithoutCancel(ctx), "drop fact_stage", "DROP TABLE IF EXISTS fact_stage") }
	r.steps.next("aggregate to the fact grain, join manifest and enrollments")
	err := e.asWritten(ctx, func() error {
		return e.exec(ctx, "build fact_lesson_engagement", "CREATE OR REPLACE TEMP TABLE fact_stage AS "+factQuery(spec, r.s))
	})
	if err != nil {
		return nil, release, e.namedDamage(ctx, spec, err)
	}
	r.steps.next("merge course conflicts, count each date's figures")
	if err := r.mergeConflictRows(ctx); err != nil {
		return nil, release, err
	}
	err = e.withOptimizersOff(ctx, pinSafe, func() (err error) {
		r.titleEnum, err = r.makeTitleType(ctx, spec)
		return err
	})
	if err != nil {
		return nil, release, err
	}
	figs, err := r.countFigures(ctx)
	r.figs = figs
	return figs, release, err
}

// mergeConflictRows replaces the rows of each key that has several
// (conflictKeysQuery) by the key's one row (mergedRowsQuery). A design day
// has none, and pays the search only.
func (r *runner) mergeConflictRows(ctx context.Context) error {
	e := r.e
	defer func() {
		e.exec(context.WithoutCancel(ctx), "drop fact_conflicts", "DROP TABLE IF EXISTS fact_conflicts")
		e.exec(context.WithoutCancel(ctx), "drop fact_merged", "DROP TABLE IF EXISTS fact_merged")
	}()
	if err := e.exec(ctx, "find course conflicts", "CREATE OR REPLACE TEMP TABLE fact_conflicts AS "+conflictKeysQuery); err != nil {
		return err
	}
	var n int64
	if err := e.conn.QueryRowContext(ctx, "SELECT count(*) FROM fact_conflicts").Scan(&n); err != nil {
		return fmt.Errorf("count course conflicts: %w", firstLine(err))
	}
	if n == 0 {
		return nil
	}
	for _, s := range []struct{ what, q string }{
		{"merge course conflicts", "CREATE OR REPLACE TEMP TABLE fact_merged AS " + mergedRowsQuery},
		{"remove the merged rows", "DELETE FROM fact_stage f USING fact_conflicts k WHERE " + sameKey("f", "k")},
		{"add the merged rows", "INSERT INTO fact_stage BY NAME SELECT * FROM fact_merged"},
	} {
		if err := e.exec(ctx, s.what, s.q); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) countFigures(ctx context.Context) (map[dates.Date]engine.DateFigures, error) {
	out := map[dates.Date]engine.DateFigures{}
	err := r.e.eachDate(ctx, "count each date's figures", `SELECT event_date, sum(manifest_course_conflicts)::BIGINT, count(*) FILTER (WHERE course_conflict),
		count(*), sum(strlen(learner_key) + strlen(lesson_id) + coalesce(strlen(course_id), 0))::BIGINT, count(DISTINCT course_id)
		FROM fact_stage GROUP BY event_date`,
		func(d dates.Date, n ...int64) {
			out[d] = engine.DateFigures{ManifestCourseConflicts: n[0], FactRowCourseConflicts: n[1], FactRows: n[2], FactWidth: n[3], Courses: n[4]}
		})
	return out, err
}

// query is table's SELECT for the dates ds, event_date last.
// Fact rows are written in no particular order: the contents are
// deterministic, the row order inside a file is not part of the table, and
// sorting a design day's 8M rows per date cost more than the rest of the
// write (measured: 3.6 s sorted vs 1.5 s unsorted for 0.8M rows).
//
// The constant columns and, where enumTitles says so, the title are ENUM
// values: DuckDB writes an ENUM as a plain UTF8 string column (the same
// schema, the same strings) whose dictionary is the type's values, where a
// VARCHAR column is hashed value by value to build one. On the design day
// that was 2.1 to 2.4 s a 7.7M-row date against 3.0 to 4.2 s.
func (r *runner) query(spec engine.Spec, table string, ds []dates.Date) string {
	if table == engine.FactTable {
		title := "lesson_title"
		if r.enumTitles(ds) {
			title = "CAST(lesson_title AS " + titleType + ")"
		}
		return fmt.Sprintf(`WITH %s,
			titles AS (SELECT lesson_id, %s AS lesson_title FROM manifest)
			SELECT f.learner_key, f.lesson_id, f.course_id, CASE WHEN f.matched THEN %s END AS manifest_id, m.lesson_title, f.event_count,
			f.first_event_time, f.last_event_time, f.enrolled, %s AS enrollment_snapshot_id, %s AS job_id, f.event_date
			FROM fact_stage f LEFT JOIN titles m ON f.lesson_id = m.lesson_id
			WHERE f.event_date IN %s`,
			manifestCTE(spec, r.s), title, constant(spec.ManifestID), constant(spec.EnrollmentSnapshotID), constant(spec.JobID), dateList(ds))
	}
	return fmt.Sprintf(`SELECT course_id,
			sum(event_count)::BIGINT AS event_count,
			coalesce(sum(event_count) FILTER (WHERE matched), 0)::BIGINT AS matched_lesson_count,
			coalesce(sum(event_count) FILTER (WHERE NOT matched), 0)::BIGINT AS unknown_lesson_count,
			coalesce(sum(event_count) FILTER (WHERE enrolled), 0)::BIGINT AS enrolled_event_count,
			count(DISTINCT learner_key) AS learner_count,
			%s AS job_id, event_date
			FROM fact_stage WHERE event_date IN %s GROUP BY event_date, course_id ORDER BY event_date, course_id`, constant(spec.JobID), dateList(ds))
}

// constant is s as a one-value ENUM (see query).
func constant(s string) string { return fmt.Sprintf("CAST(%s AS ENUM(%s))", quote(s), quote(s)) }

// titleType is the ENUM of the manifest pin's titles that makeTitleType
// creates in the engine's in-memory catalog.
const titleType = "engagement_title"

// An ENUM column's dictionary holds every value of its type in every row
// group, so the titles are written as one only where that costs little:
//
//   - the pin has at most maxTitleEnumValues distinct titles, half a row
//     group of DuckDB's default size (titleEnumMinRows), so a row group's
//     dictionary is at most about half the plain titles it replaces, and
//     they take at most maxTitleEnumBytes as a dictionary page (each title
//     and its 4-byte length): a pin of many long titles stays VARCHAR;
//   - the date (every date of a batch) has at least titleEnumMinRows fact
//     rows, one full row group. A smaller date keeps the VARCHAR title and
//     its own small dictionary.
//
// The 40,000-lesson design pin's dictionary is about 1.4 MB.
const (
	titleEnumMinRows   = 122880
	maxTitleEnumValues = titleEnumMinRows / 2
	maxTitleEnumBytes  = 8 << 20
)

// titleEnumFits reports whether n distinct titles of size bytes in all may
// be an ENUM (see maxTitleEnumValues).
func titleEnumFits(n, size int64) bool {
	return n > 0 && n <= maxTitleEnumValues && size+4*n <= maxTitleEnumBytes
}

// makeTitleType creates titleType from the pin's distinct titles when they
// fit (titleEnumFits) and reports whether it did. A title read later that
// is not among them fails the write's cast, loudly.
func (r *runner) makeTitleType(ctx context.Context, spec engine.Spec) (bool, error) {
	titles := fmt.Sprintf("WITH %s SELECT DISTINCT lesson_title FROM manifest WHERE lesson_title IS NOT NULL", manifestCTE(spec, r.s))
	var n, size int64
	if err := r.e.conn.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(strlen(lesson_title)), 0)::BIGINT FROM ("+titles+")").Scan(&n, &size); err != nil {
		return false, fmt.Errorf("measure manifest titles %s: %w", spec.Lessons, firstLine(err))
	}
	if !titleEnumFits(n, size) {
		return false, nil
	}
	if err := r.e.exec(ctx, "make the title type", "CREATE OR REPLACE TYPE "+titleType+" AS ENUM ("+titles+" ORDER BY lesson_title)"); err != nil {
		return false, err
	}
	return true, nil
}

// enumTitles reports whether the titles of the dates ds are written as
// titleType.
func (r *runner) enumTitles(ds []dates.Date) bool {
	if !r.titleEnum {
		return false
	}
	least := int64(titleEnumMinRows)
	if r.e.titleEnumMinRows > 0 {
		least = r.e.titleEnumMinRows
	}
	for _, d := range ds {
		if r.figs[d].FactRows < least {
			return false
		}
	}
	return len(ds) > 0
}

// stageSteps numbers Stage's steps for the progress report.
type stageSteps struct {
	p           progress.Reporter
	done, total int
}

// next reports that the previous step is done and what runs now.
func (s *stageSteps) next(what string) {
	s.p.Step(s.done, s.total, 0, what)
	if s.done < s.total {
		s.done++
	}
}

// eachDate runs a query whose first column is an event date and whose other
// columns are integers, and hands each row to fn.
func (e *Engine) eachDate(ctx context.Context, what, q string, fn func(d dates.Date, n ...int64)) error {
	rows, err := e.conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", what, firstLine(err))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for rows.Next() {
		var t any
		n := make([]int64, len(cols)-1)
		dest := []any{&t}
		for i := range n {
			dest = append(dest, &n[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		d, err := asDate(t)
		if err != nil {
			return err
		}
		fn(d, n...)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, firstLine(err))
	}
	return nil
}
