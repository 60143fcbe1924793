package spark

import (
	"context"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// Session-scoped names. Temporary views live in this engine's own Spark
// Connect session, so two engines on one server cannot see each other's.
const (
	rawView  = "engagement_raw"
	factView = "engagement_fact"
)

// rawSource registers the raw partitions of the read window as a view and
// returns the events query over it.
func (e *Engine) rawSource(ctx context.Context, spec engine.Spec) (string, error) {
	ok, err := e.registerRaw(ctx, spec)
	if err != nil {
		return "", err
	}
	if !ok {
		return `SELECT CAST(NULL AS STRING) AS event_id, CAST(NULL AS STRING) AS learner_key, CAST(NULL AS STRING) AS lesson_id,
			CAST(NULL AS STRING) AS course_id, CAST(NULL AS TIMESTAMP) AS event_time, CAST(NULL AS DATE) AS event_date WHERE false`, nil
	}
	return eventsQuery(spec), nil
}

// registerRaw registers the listed raw files of the read window as the
// view rawView, and reports false, registering nothing, when the window
// holds none. The view is one scan per directory of listed files (scans),
// projected to the columns the job reads (the strings validated,
// utf8Checked), with the ingest_date the files were listed under: Spark
// never lists a partition or expands a pattern of its own, so it reads
// exactly the files the checks judged.
func (e *Engine) registerRaw(ctx context.Context, spec engine.Spec) (bool, error) {
	if len(spec.Inputs.Raw) == 0 {
		return false, nil
	}
	var ingest []dates.Date
	files := map[dates.Date][]string{}
	for _, f := range spec.Inputs.Raw {
		if _, ok := files[f.IngestDate]; !ok {
			ingest = append(ingest, f.IngestDate)
		}
		files[f.IngestDate] = append(files[f.IngestDate], f.Path)
	}
	var parts []string
	for _, d := range ingest {
		for _, s := range scans(files[d]) {
			parts = append(parts, fmt.Sprintf("SELECT %s, CAST(event_time AS TIMESTAMP) AS event_time, DATE %s AS ingest_date FROM %s",
				utf8Checked(rawStrings), quote(d.String()), s))
		}
	}
	q := fmt.Sprintf("CREATE OR REPLACE TEMPORARY VIEW %s AS %s", rawView, strings.Join(parts, "\nUNION ALL\n"))
	if q == e.rawViewSQL {
		// Inspect registered this very view in this session; Stage
		// would only pay a round trip to register it again.
		return true, nil
	}
	if err := e.exec(ctx, "read raw "+spec.Raw, q); err != nil {
		return false, err
	}
	e.rawViewSQL = q
	return true, nil
}

// eventDateExpr derives event_date from event_time in UTC (the session
// zone is forced to UTC).
const eventDateExpr = "to_date(CAST(event_time AS TIMESTAMP))"

// outOfRangeExpr is true for an event_time outside the years 0001 to 9999
// (engine.EventTimeOutOfRange).
var outOfRangeExpr = engine.EventTimeOutOfRange("unix_micros(CAST(event_time AS TIMESTAMP))")

// eventsQuery reads raw with a column list and a predicate on ingest_date,
// derives event_date (eventDateExpr) and keeps the requested dates' events,
// each from its own partitions (ownWindow). Every other raw column is
// dropped here, before any join.
func eventsQuery(spec engine.Spec) string {
	return fmt.Sprintf(`SELECT event_id, learner_key, lesson_id, course_id, event_time, event_date
FROM (
  SELECT event_id, learner_key, lesson_id, course_id,
         CAST(event_time AS TIMESTAMP) AS event_time,
         %s AS event_date, ingest_date
  FROM %s
  WHERE ingest_date BETWEEN DATE %s AND DATE %s
)
WHERE event_date IN %s AND %s`, eventDateExpr, rawView, quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()),
		dateList(spec.Dates), ownWindow(spec.LatenessDays))
}

// ownWindow is a predicate equal to "ingest_date is event_date or one of
// the lateness days after it": each requested date counts its events from
// its own partitions only, whatever other dates the request holds (the
// read window reaches max(dates)+lateness), as the DuckDB engine does.
func ownWindow(lateness int) string {
	return fmt.Sprintf("ingest_date BETWEEN event_date AND date_add(event_date, %d)", lateness)
}

func dateList(ds []dates.Date) string {
	q := make([]string, len(ds))
	for i, d := range ds {
		q[i] = "DATE " + quote(d.String())
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// saltOf is the salt of an event: pmod(hash(lesson_id, event_date), n)
// for a hot course, 0 for any other. It is a function of the event alone,
// so a retry puts every event in the same bucket, and of the fact row's
// lesson and date, so one bucket holds all of a fact row's events of one
// course and the rows aggregate before the join without a shuffle of
// their own.
func saltOf(spec engine.Spec) string {
	if len(spec.HotCourses) == 0 {
		return "0"
	}
	return fmt.Sprintf("CASE WHEN course_id IN %s THEN pmod(hash(lesson_id, event_date), %d) ELSE 0 END", list(spec.HotCourses), spec.SaltBuckets)
}

// saltsOf is the enrollment side's salt list: every bucket for a hot
// course (the row is replicated once per salt), only 0 otherwise.
func saltsOf(spec engine.Spec) string {
	if len(spec.HotCourses) == 0 {
		return "array(0)"
	}
	return fmt.Sprintf("CASE WHEN course_id IN %s THEN sequence(0, %d) ELSE array(0) END", list(spec.HotCourses), spec.SaltBuckets-1)
}

// factQuery is the same logical job as the DuckDB engine's event-level
// plan: events LEFT JOIN the manifest pin on lesson_id (unknown lessons
// stay, with a null manifest_id), LEFT JOIN the enrollment snapshot on
// (learner_key, course_id), aggregated to the fact grain, keeping two
// audit columns the published table does not carry, and course_pinned
// (the lesson has a manifest course), which says whether a fact row split
// over courses would show in those columns (factFigures).
//
// It aggregates first. The events are distributed by (learner_key, _salt)
// and aggregated there, without a shuffle of their own, to one row per
// (learner_key, lesson_id, event_date, course_id): a fact row's events
// of one course. Those rows (about 2.6 times fewer than the events on the
// design day) meet the enrollments, distributed the same way, in a
// sort-merge join that needs no further shuffle
// (spark.sql.requireAllClusterKeysForCoPartition is off, see defaults),
// then the broadcast manifest. That is the fact grain whenever no fact
// row's events disagree on course_id: the salt is a function of the
// course, the lesson and the date, so a fact row of one course is one
// row. The grain is not aggregated again: a second aggregate, to merge
// the rows of a fact row of several courses, took a shuffle and a sort of
// every row (55 s of the design day's 150 s build) for rows that fail the
// gate. BuildFacts counts what such a row leaves behind and, only when
// there is any, builds the grain again with that merge (mergedFactQuery).
// Each enrollment match and manifest comparison is made per course_id, as
// the event-level plan makes it per event, so every figure is exact on
// conflict rows too, with no second pass over raw.
// TestEnginesPublishTheSameTables holds it to the DuckDB engine's tables,
// and the publish suite's conflict cases count conflict rows whose
// hot-course events were salted apart from the rest.
//
// Physical choices, by hint so they do not depend on size estimates: the
// manifest pin is broadcast (40,000 lessons, a few MB); the enrollment join
// is a sort-merge shuffle join even when a small input would fall under the
// auto-broadcast threshold, because at design volume 20M enrollments must
// never be broadcast. Hot courses are salted (saltOf, saltsOf), so one
// learner's events of a hot course spread over n shuffle partitions.
func factQuery(spec engine.Spec, events string) string {
	return fmt.Sprintf(`SELECT learner_key, lesson_id, event_date, course_id, matched,
       manifest_course_id IS NOT NULL AS course_pinned,
       event_count, first_event_time, last_event_time, enrolled,
       CASE WHEN manifest_course_id IS NOT NULL AND course_id IS NOT NULL AND manifest_course_id <> course_id THEN event_count ELSE 0 END AS manifest_course_conflicts,
       false AS course_conflict, %s
FROM (
%s
) joined`, attemptColumn(spec), joinedGrain(spec, events))
}

// attemptColumn is a column naming the attempt in the cached grain. Spark
// shares its cache across Connect sessions and finds an entry by its
// plan, which a retry over the same files, pins and dates repeats: a
// grain cached by an attempt killed before its UNCACHE (SIGKILL, an
// evicted pod) was read by the next one, whose inputs had been rewritten
// in place since, and its stale rows published with exit 0. A job id is
// never staged twice, so the plan is the attempt's own.
func attemptColumn(spec engine.Spec) string {
	return quote(spec.JobID) + " AS engagement_attempt"
}

// mergedFactQuery is factQuery with the rows of a fact row of several
// courses merged into one, as the DuckDB engine's grain has it: the
// course_id null when any event's is, the conflict flag set. The joined
// rows are distributed by (learner_key, event_date), part of its keys,
// so the merged grain is partitioned that way.
//
// Events disagreeing on course_id is min(course_id) <> max(course_id),
// not count(DISTINCT course_id) > 1: the two agree (both skip nulls), and
// a distinct count makes Spark aggregate twice, with a shuffle of its own
// between.
func mergedFactQuery(spec engine.Spec, events string) string {
	return fmt.Sprintf(`SELECT learner_key, lesson_id, event_date,
       CASE WHEN bool_or(course_id IS NULL) THEN NULL ELSE min(course_id) END AS course_id,
       bool_or(matched) AS matched,
       bool_or(manifest_course_id IS NOT NULL) AS course_pinned,
       sum(event_count) AS event_count,
       min(first_event_time) AS first_event_time,
       max(last_event_time) AS last_event_time,
       bool_or(enrolled) AS enrolled,
       sum(CASE WHEN manifest_course_id IS NOT NULL AND course_id IS NOT NULL AND manifest_course_id <> course_id THEN event_count ELSE 0 END) AS manifest_course_conflicts,
       (coalesce(min(course_id) <> max(course_id), false) OR (bool_or(course_id IS NULL) AND count(course_id) > 0)) AS course_conflict,
       %s
FROM (
%s
  DISTRIBUTE BY learner_key, event_date
) joined
GROUP BY learner_key, lesson_id, event_date`, attemptColumn(spec), joinedGrain(spec, events))
}

// joinedGrain is both fact queries' rows: a fact row's events of one
// course (and salt), with the manifest's course and the enrollment match.
func joinedGrain(spec engine.Spec, events string) string {
	// Subqueries, not WITH: Spark gives a CTE fresh ids each time a view
	// over it is analyzed, so a cached view defined with WITH never matches
	// the queries that read it, and each of them computed the grain again
	// from raw (the profile showed raw read four times per publish).
	return fmt.Sprintf(`SELECT /*+ BROADCAST(m), MERGE(en) */
       g.learner_key, g.lesson_id, g.event_date, g.course_id, g.event_count, g.first_event_time, g.last_event_time,
       m.lesson_id IS NOT NULL AS matched, m.manifest_course_id,
       en.learner_key IS NOT NULL AS enrolled
FROM (
  SELECT learner_key, lesson_id, event_date, course_id, _salt,
         count(*) AS event_count, min(event_time) AS first_event_time, max(event_time) AS last_event_time
  FROM (
    SELECT learner_key, lesson_id, event_date, course_id, event_time, %s AS _salt
    FROM (
%s
    ) events
    DISTRIBUTE BY learner_key, _salt
  ) salted
  GROUP BY learner_key, lesson_id, event_date, course_id, _salt
) g
LEFT JOIN (
  SELECT learner_key, course_id, _salt
  FROM (SELECT learner_key, course_id FROM %s WHERE snapshot_id = %s) enrollments
  LATERAL VIEW explode(%s) salts AS _salt
  DISTRIBUTE BY learner_key, _salt
) en ON g.learner_key = en.learner_key AND g.course_id = en.course_id AND g._salt = en._salt
LEFT JOIN (
  SELECT lesson_id, course_id AS manifest_course_id
  FROM %s WHERE manifest_id = %s
) m ON g.lesson_id = m.lesson_id`,
		saltOf(spec), events,
		filesRel(spec.Inputs.EnrollmentPaths(), enrollmentStrings), quote(spec.EnrollmentSnapshotID), saltsOf(spec),
		filesRel(spec.Inputs.LessonPaths(), manifestStrings), quote(spec.ManifestID))
}

// factRows produces the published columns from rows of the cached fact
// view (src, a subquery over it), event_date last, then tail (PARTITIONED
// BY puts the date and any split part in the path).
//
// The cache keeps a matched flag instead of manifest_id and lesson_title:
// manifest_id is the pin on every matched row, and the title is joined
// here from the broadcast pin, so the 23M rows of the design day carry
// neither string through the second aggregate, its shuffle and the cache.
// Write repartitions src before this join, so the write's shuffle does not
// carry them either.
func factRows(spec engine.Spec, src, tail string) string {
	return fmt.Sprintf(`SELECT /*+ BROADCAST(m) */ f.learner_key, f.lesson_id, f.course_id,
  CASE WHEN f.matched THEN %s END AS manifest_id, m.lesson_title, f.event_count,
  f.first_event_time, f.last_event_time, f.enrolled, %s AS enrollment_snapshot_id, %s AS job_id, f.event_date%s
FROM (%s) f
LEFT JOIN (SELECT lesson_id, lesson_title FROM %s WHERE manifest_id = %s) m ON f.lesson_id = m.lesson_id`,
		quote(spec.ManifestID), quote(spec.EnrollmentSnapshotID), quote(spec.JobID), tail, src,
		filesRel(spec.Inputs.LessonPaths(), manifestStrings), quote(spec.ManifestID))
}

// courseDayQuery counts learners in two aggregates, (course, date,
// learner) and then (course, date), instead of count(DISTINCT learner_key)
// beside the filtered sums: Spark plans that as an Expand, which doubles
// the fact rows, and two aggregates with a shuffle between. count(learner_key)
// outside skips a null learner as the distinct count does. The first
// aggregate runs partly where the cached rows are (a learner's rows of a
// hot course are in as many partitions as salts) and only its partial
// result is shuffled.
func courseDayQuery(spec engine.Spec) string {
	return fmt.Sprintf(`SELECT course_id,
  sum(event_count) AS event_count,
  sum(matched_lesson_count) AS matched_lesson_count,
  sum(unknown_lesson_count) AS unknown_lesson_count,
  sum(enrolled_event_count) AS enrolled_event_count,
  count(learner_key) AS learner_count,
  %s AS job_id,
  event_date
FROM (
  SELECT course_id, event_date, learner_key,
    sum(event_count) AS event_count,
    coalesce(sum(event_count) FILTER (WHERE matched), 0) AS matched_lesson_count,
    coalesce(sum(event_count) FILTER (WHERE NOT matched), 0) AS unknown_lesson_count,
    coalesce(sum(event_count) FILTER (WHERE enrolled), 0) AS enrolled_event_count
  FROM %s
  GROUP BY course_id, event_date, learner_key
) learners
GROUP BY course_id, event_date`, quote(spec.JobID), factView)
}
