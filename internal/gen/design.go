package gen

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
)

// The design shape is the capstone's peak volume scaled by Options.Events:
// 60,000,000 events is the design day. It is written by DuckDB SQL from pure
// functions of the row number and the seed (DuckDB's hash(), never random()),
// so a 60M-event tree takes minutes, not the hour the Go fixture path would.
//
// # Layout (the same as the fixture's)
//
// Event dates 2026-03-01..2026-03-03 are the production horizon (3 dates,
// newest ingest date 2026-03-03) and carry all events but a 1/150 share that
// belongs to 2026-02-28 and arrived late in ingest_date=2026-03-01, so the
// job's date filter has rows to drop. About 2% of the sessions of 2026-03-01
// and 2026-03-02 were ingested a day late; those of 2026-03-03 have not
// arrived yet.
//
// Options.Dates spreads the same events over that many consecutive dates
// from 2026-03-01 instead (a backfill to restate): every date but the newest
// has its 2% late sessions, and the horizon in expected.json covers them
// all. Three dates is the layout above, byte for byte.
//
// # Shape
//
// Events come in blocks of ten, split into four sessions of 1, 2, 3 and 4
// events: one learner on one lesson on one day, a couple of minutes apart,
// so several events share a fact row. A session picks
//   - a learner uniformly among Events/30 learners (2,000,000 at the design day);
//   - the hot course course-k8s with 20% probability, one of the learner's
//     own enrolled courses with 60%, any other course with 20%;
//   - a lesson uniformly inside the course: the hot course has 8,000 lessons,
//     each of the 200 others 160, so the pin holds 40,000 lessons at any size;
//   - with 1% probability a draft lesson (its id plus "-draft") the pin lacks.
//
// Learner l is enrolled in 10 of the 200 ordinary courses,
// 1 + (a_l + 13m) mod 200 for m < 10, and in the hot course when a second
// hash says so (half of the learners): about 10.5 pairs a learner, 21M at the
// design day. Enrollment is therefore a closed formula of (learner, course),
// and expected.json is tallied from those formulas over the generated
// sessions, never by joining the files the job will read.
const (
	ShapeFixture = "fixture"
	ShapeDesign  = "design"

	// MinDesignEvents keeps every design date non-empty; with more than
	// DefaultDesignDates dates the minimum grows in proportion.
	MinDesignEvents = 10_000
	// DefaultDesignDates is the design shape's number of restatable dates.
	DefaultDesignDates = 3
	// DesignEvents is the capstone's peak day.
	DesignEvents = 60_000_000

	designCourses        = 200 // ordinary courses, besides the hot one
	designCourseLessons  = 160
	designHotLessons     = 8_000
	designEnrolledCourse = 10 // ordinary courses per learner
	designEnrollStep     = 13 // coprime to designCourses, so the 10 courses differ
	designLearnerEvents  = 30 // events per learner
	designStaleShare     = 150
	designSessionMillis  = 137_000 // between two events of a session
)

var (
	// DesignDates are the restatable event dates of the default design
	// shape (DesignDatesN(DefaultDesignDates)).
	DesignDates = DesignDatesN(DefaultDesignDates)
	// DesignStaleDate's events all arrive late, in the first design ingest date.
	DesignStaleDate = dates.MustParse("2026-02-28")
)

// DesignHorizonDays is the restatement horizon that covers DesignDates.
const DesignHorizonDays = DefaultDesignDates

// DesignDatesN are the n restatable event dates of a design shape with
// Options.Dates n: the n days after DesignStaleDate.
func DesignDatesN(n int) []dates.Date {
	out := make([]dates.Date, n)
	for i := range out {
		out[i] = DesignStaleDate.AddDays(i + 1)
	}
	return out
}

// designMacros define every per-session and per-event attribute in SQL; %[1]d
// is the seed, %[2]d the event count, %[3]d the learner count, %[4]d the
// number of stale blocks, %[5]d the number of blocks and %[6]d the number of
// restatable dates.
const designMacros = `
CREATE MACRO hx(x, salt) AS (hash(x::UBIGINT, %[1]d::UBIGINT, salt::UBIGINT) >> 1)::BIGINT;
-- event i sits in block i//10; a block holds sessions of 1, 2, 3, 4 events.
CREATE MACRO ev_q(i) AS ((i %% 10) >= 1)::INT + ((i %% 10) >= 3)::INT + ((i %% 10) >= 6)::INT;
CREATE MACRO q_off(q) AS [0, 1, 3, 6][q + 1];
CREATE MACRO date_idx(j) AS CASE WHEN j // 4 < %[4]d THEN 0
  ELSE 1 + least(%[6]d - 1, (j // 4 - %[4]d) * %[6]d // (%[5]d - %[4]d)) END;
CREATE MACRO learner(j) AS hx(j, 1) %% %[3]d;
CREATE MACRO home(l) AS hx(l, 4) %% 200;
CREATE MACRO course(j) AS CASE
  WHEN hx(j, 2) %% 100 < 20 THEN 0
  WHEN hx(j, 2) %% 100 < 80 THEN 1 + (home(learner(j)) + 13 * (hx(j, 3) %% 10)) %% 200
  ELSE 1 + hx(j, 3) %% 200 END;
CREATE MACRO slot(j, c) AS hx(j, 6) %% CASE WHEN c = 0 THEN 8000 ELSE 160 END;
CREATE MACRO draft(j) AS hx(j, 7) %% 100 = 0;
CREATE MACRO late(j, d) AS d = 0 OR (d BETWEEN 1 AND %[6]d - 1 AND hx(j, 8) %% 50 = 0);
CREATE MACRO hot_member(l) AS hx(l, 5) %% 100 < 50;
-- 77 is the inverse of 13 modulo 200: course c is the learner's m-th course.
CREATE MACRO enrolled(l, c) AS CASE WHEN c = 0 THEN hot_member(l)
  ELSE ((c - 1 - home(l) + 200) %% 200) * 77 %% 200 < 10 END;
CREATE MACRO course_id(c) AS CASE WHEN c = 0 THEN 'course-k8s' ELSE 'course-' || lpad(c::VARCHAR, 3, '0') END;
CREATE MACRO lesson_id(c, s) AS CASE WHEN c = 0 THEN 'lesson-k8s-' || lpad(s::VARCHAR, 4, '0')
  ELSE 'lesson-' || lpad(c::VARCHAR, 3, '0') || '-' || lpad(s::VARCHAR, 3, '0') END;
CREATE MACRO learner_key(l) AS 'learner-' || lpad(l::VARCHAR, 7, '0');
CREATE MACRO day_ms(d) AS (1772236800000 + d * 86400000)::BIGINT; -- 2026-02-28T00:00Z
-- sessions: one row per session with its event count k (the last block may be short).
CREATE VIEW sessions AS
SELECT j, d, learner(j) AS l, c, slot(j, c) AS s, draft(j) AS draft, late(j, d) AS late,
       least(q + 1, %[2]d - (10 * b + q_off(q))) AS k
FROM (SELECT b, q, 4 * b + q AS j, date_idx(4 * b + q) AS d, course(4 * b + q) AS c
      FROM range(%[5]d) r(b), range(4) t(q)
      WHERE 10 * b + q_off(q) < %[2]d);
`

// designEvents renders every raw row: %[1]d is the event count, %[2]d the
// event_id width.
const designEvents = `
SELECT 'ev-' || lpad(i::VARCHAR, %[2]d, '0') AS event_id,
       learner_key(l) AS learner_key,
       lesson_id(c, s) || CASE WHEN draft(j) THEN '-draft' ELSE '' END AS lesson_id,
       course_id(c) AS course_id,
       epoch_ms(day_ms(d) + hx(j, 9) %% 85800000 + (i - 10 * (j // 4) - q_off(j %% 4)) * 137000)::TIMESTAMPTZ AS event_time,
       '{"client":"' || ['web', 'ios', 'android'][1 + i %% 3] || '","progress":' || (i %% 101)::VARCHAR || '}' AS client_payload,
       CAST(epoch_ms(day_ms(d + late(j, d)::INT)) AS DATE) AS ingest_date
FROM (SELECT i, j, d, learner(j) AS l, c, slot(j, c) AS s
      FROM (SELECT i, j, date_idx(j) AS d, course(j) AS c
            FROM (SELECT i, 4 * (i // 10) + ev_q(i) AS j FROM range(%[1]d) r(i))))
`

func (o Options) design() bool { return o.Shape == ShapeDesign }

// generateDesign writes the design shape and tallies its figures.
func generateDesign(ctx context.Context, o Options) (Expected, error) {
	conn, closeDB, err := openDuckDBThreads(ctx, 2)
	if err != nil {
		return Expected{}, err
	}
	defer closeDB()
	learners := max(100, o.Events/designLearnerEvents)
	blocks := (o.Events + 9) / 10
	stale := max(1, blocks/designStaleShare)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(designMacros, o.Seed, o.Events, learners, stale, blocks, o.Dates)); err != nil {
		return Expected{}, fmt.Errorf("define design shape: %w", err)
	}
	width := max(9, len(strconv.Itoa(o.Events)))
	raw := filepath.Join(o.Out, "raw")
	steps := []struct{ what, q string }{
		{"raw events", fmt.Sprintf(`COPY (%s) TO %s (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (ingest_date), FILENAME_PATTERN 'part-{i}')`,
			fmt.Sprintf(designEvents, o.Events, width), sqlString(raw))},
		{"lessons", fmt.Sprintf(`COPY (
			SELECT %[1]s AS manifest_id, lesson_id(c, s) AS lesson_id, course_id(c) AS course_id,
			       'Lesson ' || (s + 1)::VARCHAR || ' of ' || course_id(c) AS lesson_title
			FROM range(%[2]d) r(c), range(%[3]d) t(s)
			WHERE s < CASE WHEN c = 0 THEN %[3]d ELSE %[4]d END
			ORDER BY c, s) TO %[5]s %[6]s`,
			sqlString(ManifestID), designCourses+1, designHotLessons, designCourseLessons,
			sqlString(filepath.Join(o.Out, "lessons", "part-0.parquet")), parquetOpts)},
		{"enrollments", fmt.Sprintf(`COPY (
			SELECT learner_key(l) AS learner_key,
			       course_id(CASE WHEN m < 10 THEN 1 + (home(l) + 13 * m) %% 200 ELSE 0 END) AS course_id,
			       %[1]s AS snapshot_id
			FROM range(%[2]d) r(l), range(11) t(m)
			WHERE m < 10 OR hot_member(l)
			ORDER BY l, m) TO %[3]s %[4]s`,
			sqlString(EnrollmentSnapshotID), learners, sqlString(filepath.Join(o.Out, "enrollments", "part-0.parquet")), parquetOpts)},
	}
	for _, dir := range []string{"lessons", "enrollments"} {
		if err := os.MkdirAll(filepath.Join(o.Out, dir), 0o755); err != nil {
			return Expected{}, fmt.Errorf("create %s directory: %w", dir, err)
		}
	}
	for _, s := range steps {
		start := time.Now()
		if _, err := conn.ExecContext(ctx, s.q); err != nil {
			return Expected{}, fmt.Errorf("write design %s: %w", s.what, err)
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "gen: wrote %s in %s\n", s.what, time.Since(start).Round(time.Millisecond))
		}
	}
	start := time.Now()
	exp, err := tallyDesign(ctx, conn, o, learners)
	if err != nil {
		return Expected{}, err
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "gen: tallied expected figures in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return exp, nil
}

// tallyDesign computes expected.json from the session formulas: events,
// draft (unknown) lessons, enrollment and lateness are functions of the
// session, so nothing here reads a generated file.
func tallyDesign(ctx context.Context, conn *sql.Conn, o Options, learners int) (Expected, error) {
	restatable := DesignDatesN(o.Dates)
	all := append([]dates.Date{DesignStaleDate}, restatable...)
	e := Expected{
		Seed: o.Seed, Events: o.Events, Shape: ShapeDesign,
		ManifestID: ManifestID, EnrollmentSnapshotID: EnrollmentSnapshotID,
		// No previous pins, no late events listed: the design files hold one
		// pin of each, and their late events (a session's, at d+1) are in
		// the figures, not listed one by one as the fixture's one is.
		UnknownLessonID: "*-draft", HotCourse: HotCourse,
		LessonsInPin:           designHotLessons + designCourses*designCourseLessons,
		RestatementHorizonDays: o.Dates,
		NewestIngestDate:       restatable[len(restatable)-1],
		Dates:                  restatable,
		ByDate:                 map[dates.Date]DayFigures{},
		ByDateCourse:           map[dates.Date]map[string]CourseFigures{},
	}
	for c := 0; c <= designCourses; c++ {
		e.Courses = append(e.Courses, designCourseID(c))
	}
	if err := conn.QueryRowContext(ctx, fmt.Sprintf(
		`SELECT count(*) FROM range(%d) r(l), range(11) t(m) WHERE m < 10 OR hot_member(l)`, learners)).Scan(&e.EnrollmentRowsInPin); err != nil {
		return e, fmt.Errorf("tally design enrollments: %w", err)
	}
	q := `SELECT d, c, sum(k)::BIGINT, (sum(k) FILTER (WHERE draft))::BIGINT, (sum(k) FILTER (WHERE enrolled(l, c)))::BIGINT,
	             count(DISTINCT l), (sum(k) FILTER (WHERE NOT late))::BIGINT
	      FROM sessions GROUP BY d, c`
	rs, err := conn.QueryContext(ctx, q)
	if err != nil {
		return e, fmt.Errorf("tally design courses: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var d, c int
		var f CourseFigures
		var unknown, enrolled, sameDay sql.NullInt64
		if err := rs.Scan(&d, &c, &f.Events, &unknown, &enrolled, &f.Learners, &sameDay); err != nil {
			return e, fmt.Errorf("tally design courses: %w", err)
		}
		f.Unknown, f.Enrolled = unknown.Int64, enrolled.Int64
		f.Matched = f.Events - f.Unknown
		day := all[d]
		if e.ByDateCourse[day] == nil {
			e.ByDateCourse[day] = map[string]CourseFigures{}
		}
		e.ByDateCourse[day][designCourseID(c)] = f
		t := e.ByDate[day]
		t.Events += f.Events
		t.Unknown += f.Unknown
		t.Matched += f.Matched
		t.Enrolled += f.Enrolled
		t.SameDayIngestEvents += sameDay.Int64
		e.ByDate[day] = t
	}
	if err := rs.Err(); err != nil {
		return e, fmt.Errorf("tally design courses: %w", err)
	}
	rs.Close()
	// A fact row is a distinct (learner, lesson) of a date; a draft lesson is
	// a different lesson id from its published twin.
	rs, err = conn.QueryContext(ctx, `SELECT d, count(DISTINCT l), count(DISTINCT (l, c, s, draft)) FROM sessions GROUP BY d`)
	if err != nil {
		return e, fmt.Errorf("tally design fact rows: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var d int
		var learners, facts int64
		if err := rs.Scan(&d, &learners, &facts); err != nil {
			return e, fmt.Errorf("tally design fact rows: %w", err)
		}
		t := e.ByDate[all[d]]
		t.Learners, t.FactRows = learners, facts
		e.ByDate[all[d]] = t
	}
	return e, rs.Err()
}

func designCourseID(c int) string {
	if c == 0 {
		return HotCourse
	}
	return "course-" + strings.Repeat("0", 3-len(strconv.Itoa(c))) + strconv.Itoa(c)
}
