package duckdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// eventLevelFact is the reference plan, written here and not shared with the
// engine: both joins on every event, then one aggregation to the fact grain.
// It also yields the two audit figures the gate reads (events that disagree
// with the manifest's course, and whether a row's events disagree).
const eventLevelFact = `
WITH events AS (
  SELECT learner_key, lesson_id, course_id, CAST(event_time AS TIMESTAMPTZ) AS event_time,
         CAST(timezone('UTC', CAST(event_time AS TIMESTAMPTZ)) AS DATE) AS event_date, ingest_date
  FROM read_parquet(%[1]s, hive_partitioning = true)
  WHERE ingest_date BETWEEN DATE %[2]s AND DATE %[3]s
),
joined AS (
  SELECT ev.*, m.manifest_id, m.lesson_title, m.course_id AS manifest_course_id, en.learner_key IS NOT NULL AS enrolled
  FROM events ev
  LEFT JOIN (SELECT * FROM read_parquet(%[4]s) WHERE manifest_id = %[5]s) m ON ev.lesson_id = m.lesson_id
  LEFT JOIN (SELECT * FROM read_parquet(%[6]s) WHERE snapshot_id = %[7]s) en
         ON ev.learner_key = en.learner_key AND ev.course_id = en.course_id
  WHERE ev.event_date IN (%[8]s) AND ev.ingest_date BETWEEN ev.event_date AND ev.event_date + %[9]d
)
SELECT learner_key, lesson_id, event_date,
       CASE WHEN bool_or(course_id IS NULL) THEN NULL ELSE min(course_id) END AS course_id,
       min(manifest_id) AS manifest_id, min(lesson_title) AS lesson_title, count(*) AS event_count,
       min(event_time) AS first_event_time, max(event_time) AS last_event_time, bool_or(enrolled) AS enrolled,
       count(*) FILTER (WHERE manifest_course_id <> course_id) AS manifest_course_conflicts,
       count(DISTINCT course_id) > 1 OR (bool_or(course_id IS NULL) AND count(course_id) > 0) AS course_conflict
FROM joined GROUP BY learner_key, lesson_id, event_date`

// TestPlanEqualsEventLevel stages a generated design day and the two
// fixtures whose rows disagree on course_id (the fact-grain plan's only
// special case) and compares every staged row of both tables, and the
// conflict figures, with the event-level reference plan.
func TestPlanEqualsEventLevel(t *testing.T) {
	design := filepath.Join(t.TempDir(), "design")
	exp, err := gen.Generate(context.Background(), gen.Options{Out: design, Shape: gen.ShapeDesign, Events: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir string
		dates     []dates.Date
	}{{"design", design, exp.Dates}}
	for _, v := range []string{"", gen.VariantCourseConflict, gen.VariantNullCourse} {
		fx := publishtest.LoadFixture(t, v)
		name := v
		if v == "" {
			name = "fixture"
		}
		cases = append(cases, struct {
			name, dir string
			dates     []dates.Date
		}{name, fx.Dir, fx.Expected.Dates})
	}
	shapes, shapeDates := conflictShapes(t)
	cases = append(cases, struct {
		name, dir string
		dates     []dates.Date
	}{"conflict shapes", shapes, shapeDates})
	// Each case twice: the titles written as VARCHAR (the fixtures' small
	// dates) and as an ENUM (what a date of a full row group gets).
	titles := []struct {
		name    string
		minRows int64
	}{{"varchar titles", 0}, {"enum titles", 1}}
	for _, c := range cases {
		for _, tt := range titles {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) { planEqualsEventLevel(t, c.dir, c.name, c.dates, tt.minRows) })
		}
	}
}

// conflictShapes writes a small day of hand-made keys whose events
// disagree on course_id in every way the plan tells apart, beside keys
// that do not, and returns its folder and dates:
//
//	key (learner, lesson, date)   courses of its events   why
//	u1 L1 03-01                   A A B                   one row has the manifest's course (A)
//	u2 L2 03-01                   B C                     the manifest's course is null: no row has it
//	u3 L1 03-01                   A null C                three rows, one of them without a course
//	null L1 03-01                 A B                     a null learner_key is a key value too
//	u4 L9 03-01                   A B                     a lesson the manifest does not know
//	u4 null 03-01                 A B                     a null lesson_id
//	u1 L3 03-01                   A A                     no conflict, the manifest's course
//	u2 L1 03-01                   null null               no conflict, no course
//	u3 L9 03-01                   C                       no conflict, an unknown lesson
//	u1 L1 03-02                   B                       u1 L1's other date: one row, no conflict
//	u2 L3 03-02                   A B                     a conflict on the second date
//
// Enrollments: (u1, A), (u2, B), (u3, C), (u4, A) and (null, A).
func conflictShapes(t *testing.T) (string, []dates.Date) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shapes")
	for _, sub := range []string{"raw/ingest_date=2026-03-01", "raw/ingest_date=2026-03-02", "lessons", "enrollments"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e, err := duckdb.Open(context.Background(), map[string]string{"threads": "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conn := e.DB()
	events := func(day string, rows ...string) string {
		return fmt.Sprintf(`SELECT 'e-%[1]s-' || row_number() OVER () AS event_id, learner_key, lesson_id, course_id,
			TIMESTAMPTZ '%[1]s 00:00:00+00' + to_seconds(row_number() OVER ()) AS event_time
			FROM (VALUES %[2]s) v(learner_key, lesson_id, course_id)`, day, strings.Join(rows, ", "))
	}
	exec(t, conn, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", events("2026-03-01",
		"('u1','L1','A')", "('u1','L1','A')", "('u1','L1','B')",
		"('u2','L2','B')", "('u2','L2','C')",
		"('u3','L1','A')", "('u3','L1',NULL)", "('u3','L1','C')",
		"(NULL,'L1','A')", "(NULL,'L1','B')",
		"('u4','L9','A')", "('u4','L9','B')",
		"('u4',NULL,'A')", "('u4',NULL,'B')",
		"('u1','L3','A')", "('u1','L3','A')",
		"('u2','L1',NULL)", "('u2','L1',NULL)",
		"('u3','L9','C')"), quote(filepath.Join(dir, "raw/ingest_date=2026-03-01/part-0.parquet"))))
	exec(t, conn, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", events("2026-03-02",
		"('u1','L1','B')", "('u2','L3','A')", "('u2','L3','B')"), quote(filepath.Join(dir, "raw/ingest_date=2026-03-02/part-0.parquet"))))
	exec(t, conn, fmt.Sprintf(`COPY (SELECT * FROM (VALUES (%[1]s, 'L1', 'A', 'one'), (%[1]s, 'L2', NULL, 'two'), (%[1]s, 'L3', 'A', 'three'),
		('dim-other', 'L9', 'B', 'not the pin')) v(manifest_id, lesson_id, course_id, lesson_title)) TO %[2]s (FORMAT parquet)`,
		quote(gen.ManifestID), quote(filepath.Join(dir, "lessons/part-0.parquet"))))
	exec(t, conn, fmt.Sprintf(`COPY (SELECT * FROM (VALUES ('u1', 'A', %[1]s), ('u2', 'B', %[1]s), ('u3', 'C', %[1]s), ('u4', 'A', %[1]s),
		(NULL, 'A', %[1]s)) v(learner_key, course_id, snapshot_id)) TO %[2]s (FORMAT parquet)`,
		quote(gen.EnrollmentSnapshotID), quote(filepath.Join(dir, "enrollments/part-0.parquet"))))
	return dir, []dates.Date{dates.MustParse("2026-03-01"), dates.MustParse("2026-03-02")}
}

// planEqualsEventLevel stages the day in dir (the case name) with the
// titles written as an ENUM from enumTitlesFrom fact rows a date (0: the
// engine's default) and compares it with the reference plan.
func planEqualsEventLevel(t *testing.T, dir, name string, ds []dates.Date, enumTitlesFrom int64) {
	ctx := context.Background()
	spec := engine.Spec{
		JobID: "plan-test", Dates: ds,
		IngestFrom: ds[0], IngestTo: ds[len(ds)-1].AddDays(2), LatenessDays: 2,
		Raw: filepath.Join(dir, "raw"), Lessons: filepath.Join(dir, "lessons"), Enrollments: filepath.Join(dir, "enrollments"),
		ManifestID: gen.ManifestID, EnrollmentSnapshotID: gen.EnrollmentSnapshotID,
		TargetFileBytes: engine.DefaultTargetFileBytes,
	}
	spec = publishtest.WithInputs(t, spec)
	e, err := duckdb.Open(ctx, map[string]string{"threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	duckdb.EnumTitlesFrom(e, enumTitlesFrom)
	spec = publishtest.Inspected(t, e, spec)
	wh := t.TempDir()
	bucket, _ := publishtest.Warehouse(wh)
	st, err := e.Stage(ctx, spec, bucket, "staging/job_id=plan-test")
	if err != nil {
		t.Fatal(err)
	}
	conn := e.DB()
	var lits []string
	for _, d := range ds {
		lits = append(lits, "DATE '"+d.String()+"'")
	}
	ref := fmt.Sprintf(eventLevelFact, quote(filepath.Join(dir, "raw", "*", "*.parquet")),
		quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()),
		quote(filepath.Join(dir, "lessons", "*.parquet")), quote(gen.ManifestID),
		quote(filepath.Join(dir, "enrollments", "*.parquet")), quote(gen.EnrollmentSnapshotID), strings.Join(lits, ", "), spec.LatenessDays)
	exec(t, conn, "CREATE TEMP TABLE ref_fact AS "+ref)

	exec(t, conn, "CREATE TEMP TABLE got_fact AS "+staged(wh, st.FactFiles, ds, engine.FactColumns))
	factCols := "learner_key, lesson_id, event_date, course_id, manifest_id, lesson_title, event_count, first_event_time, last_event_time, enrolled"
	// The run's identities are constants of the spec, written on every row.
	sameRows(t, conn, "fact_lesson_engagement",
		"SELECT "+factCols+", "+quote(gen.EnrollmentSnapshotID)+", 'plan-test' FROM ref_fact",
		"SELECT "+factCols+", enrollment_snapshot_id, job_id FROM got_fact")

	exec(t, conn, "CREATE TEMP TABLE got_cd AS "+staged(wh, st.CourseDayFiles, ds, engine.CourseDayColumns))
	sameRows(t, conn, "course_day",
		`SELECT course_id, event_date, sum(event_count), coalesce(sum(event_count) FILTER (WHERE manifest_id IS NOT NULL), 0),
		        coalesce(sum(event_count) FILTER (WHERE manifest_id IS NULL), 0), coalesce(sum(event_count) FILTER (WHERE enrolled), 0),
		        count(DISTINCT learner_key)
		 FROM ref_fact GROUP BY course_id, event_date`,
		`SELECT course_id, event_date, event_count, matched_lesson_count, unknown_lesson_count, enrolled_event_count, learner_count FROM got_cd`)

	for _, d := range ds {
		var mc, rc, events int64
		q := fmt.Sprintf(`SELECT coalesce(sum(manifest_course_conflicts), 0)::BIGINT, count(*) FILTER (WHERE course_conflict),
			coalesce(sum(event_count), 0)::BIGINT
			FROM ref_fact WHERE event_date = DATE '%s'`, d)
		if err := conn.QueryRowContext(ctx, q).Scan(&mc, &rc, &events); err != nil {
			t.Fatal(err)
		}
		f := st.Stage[d]
		// Inspect's per-date counts (one scan with the event-id
		// check) against the event-level plan's own grouping.
		if f.InputEvents != events {
			t.Errorf("%s: input events %d, event-level plan %d", d, f.InputEvents, events)
		}
		if f.ManifestCourseConflicts != mc || f.FactRowCourseConflicts != rc {
			t.Errorf("%s: conflicts staged %d events / %d rows, event-level plan %d / %d",
				d, f.ManifestCourseConflicts, f.FactRowCourseConflicts, mc, rc)
		}
		if name != "design" && name != "fixture" && rc == 0 {
			t.Errorf("%s: the %s fixture has no conflict row: the special case is not exercised", d, name)
		}
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM ref_fact").Scan(&n); err != nil || n == 0 {
		t.Fatalf("reference plan has %d rows (%v): nothing compared", n, err)
	}
}

// staged reads the listed staged files of every date, with event_date from
// the list, as a reader would.
func staged(wh string, files map[dates.Date][]pointer.File, ds []dates.Date, cols []string) string {
	var parts []string
	for _, d := range ds {
		var paths []string
		for _, f := range files[d] {
			paths = append(paths, quote(filepath.Join(wh, f.Path)))
		}
		if len(paths) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("SELECT %s, DATE '%s' AS event_date FROM read_parquet([%s])",
			strings.Join(cols[:len(cols)-1], ", "), d, strings.Join(paths, ", ")))
	}
	return strings.Join(parts, " UNION ALL ")
}

// sameRows compares two queries as multisets of rows.
func sameRows(t *testing.T, conn *sql.Conn, what, want, got string) {
	t.Helper()
	var missing, extra, rows int64
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (%[1]s EXCEPT ALL %[2]s)), (SELECT count(*) FROM (%[2]s EXCEPT ALL %[1]s)), (SELECT count(*) FROM (%[1]s))`, want, got)
	if err := conn.QueryRowContext(context.Background(), q).Scan(&missing, &extra, &rows); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if missing != 0 || extra != 0 || rows == 0 {
		t.Errorf("%s: %d reference rows missing from the staged table, %d staged rows not in the reference (of %d)", what, missing, extra, rows)
	}
}

func exec(t *testing.T, conn *sql.Conn, q string) {
	t.Helper()
	if _, err := conn.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
