// Package gate decides whether a staged attempt may be published. It sees
// only figures: the engines compute them from the inputs (checks 1 to 3,
// before any join) and from the staged bytes read back (the rest), so the
// same rules judge every engine.
package gate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
)

// Stable check names. They appear in _gate.json, in rejection records and in
// monitor lines, so alerts can key on them; never rename one.
const (
	CheckProhibitedColumns      = "prohibited_columns"        // 1
	CheckManifestUniqueLesson   = "manifest_unique_lesson_id" // 2
	CheckEnrollmentUniquePair   = "enrollment_unique_pair"    // 3
	CheckNullKeys               = "fact_null_keys"            // 4
	CheckUnknownLessonCap       = "unknown_lesson_cap"        // 5
	CheckMatchedPlusUnknown     = "matched_plus_unknown"      // 6
	CheckFactEqualsCourseDay    = "fact_equals_course_day"    // 7
	CheckDatesStaged            = "dates_staged"              // 8
	CheckManifestCourseConflict = "manifest_course_conflict"
	CheckFactRowCourseConflict  = "fact_row_course_conflict"
	CheckInputEqualsFact        = "input_equals_fact"
	CheckEventTimePresent       = "raw_event_time_present"
	CheckEventIDUnique          = "raw_event_id_unique"
	CheckManifestTitleLength    = "manifest_title_length"
	CheckManifestLessonPresent  = "manifest_lesson_id_present"
)

// MaxTitleBytes bounds a lesson_title. The title is copied into every fact
// row of its lesson, so a runaway title multiplies by the lesson's rows in
// memory and output (a 10 MiB title took the fixture's publish from 68 MB to
// 1.1 GB peak RSS); no human-readable title needs more than 64 KiB.
const MaxTitleBytes = 64 << 10

// InputFigures are what the engine saw in the inputs before any join.
type InputFigures struct {
	RawFiles        int      `json:"raw_files"`
	RawColumns      []string `json:"raw_columns"`
	ProhibitedFound []string `json:"prohibited_found"`
	// ProhibitedFirstIn is the first raw file holding each found field.
	ProhibitedFirstIn map[string]string `json:"prohibited_first_in"`
	// Prohibited is the list the raw schema was checked against
	// (engagement.prohibitedColumns); empty when the check is off.
	Prohibited           []string `json:"prohibited"`
	ManifestRows         int64    `json:"manifest_rows"`
	NullLessonIDs        int64    `json:"null_lesson_ids"` // manifest pin rows without a lesson_id
	DuplicateLessonIDs   []string `json:"duplicate_lesson_ids"`
	EnrollmentRows       int64    `json:"enrollment_rows"`
	DuplicateEnrollments []string `json:"duplicate_enrollments"` // learner_key|course_id, a sample
	DuplicateEnrollCount int64    `json:"duplicate_enrollment_count"`
	// Raw events of the read window with no event_time, and events of the
	// requested dates with a null or repeated event_id (extra copies).
	NullEventTimes int64 `json:"null_event_times"`
	// OutOfRangeEventTimes are the raw events of the read window whose
	// event_time lies outside the years 0001 to 9999: no time a producer
	// meant, but a damaged page (DuckDB writes no page checksums) or a
	// writer's unit error (nanoseconds in a microsecond column). Like a
	// null one it has no usable date, so any requested date may be
	// missing it; counted as stray, the rest of the day published short.
	OutOfRangeEventTimes int64 `json:"out_of_range_event_times"`
	// NullEventTimeSample names up to five of them and of the out-of-range
	// ones by partition and id (engine.NullTimeSample): the read window may
	// hold thousands of files.
	NullEventTimeSample    []string `json:"null_event_time_sample"`
	NullEventIDs           int64    `json:"null_event_ids"`
	DuplicateEventIDs      int64    `json:"duplicate_event_ids"`
	DuplicateEventIDSample []string `json:"duplicate_event_id_sample"`
	// StrayEvents are the raw events of the read window of dates not
	// requested that lie outside their partition's own window (ingested
	// before their UTC date, or more than latenessDays after it): no
	// publish of any date counts them. A warning, not a check: a producer's
	// clock set to 1970 or a year ahead loses its events here.
	StrayEvents int64 `json:"stray_events"`
	// The longest lesson_title in the manifest pin, in bytes, and its lesson.
	LongestTitleBytes  int64  `json:"longest_title_bytes"`
	LongestTitleLesson string `json:"longest_title_lesson"`
}

// timesDetail counts the raw events without a usable event_time: null,
// and outside the years 0001 to 9999 when there are any.
func timesDetail(null, outOfRange int64) string {
	const why = "outside the years 0001 to 9999 or at INT64's extremes (a damaged page, a writer's unit error, or a sentinel such as Long.MAX_VALUE or pandas' Timestamp.max)"
	switch {
	case outOfRange == 0:
		return fmt.Sprintf("%d raw events in the read window have a null event_time", null)
	case null == 0:
		return fmt.Sprintf("%d raw events in the read window have an event_time %s", outOfRange, why)
	}
	return fmt.Sprintf("%d raw events in the read window have a null event_time and %d one %s", null, outOfRange, why)
}

// StageFigures are per-date figures only the event-level pass can see.
type StageFigures struct {
	InputEvents             int64 `json:"input_events"`
	ManifestCourseConflicts int64 `json:"manifest_course_conflicts"`
	FactRowCourseConflicts  int64 `json:"fact_row_course_conflicts"`
}

// StagedFigures are per-date figures computed from the staged files read back.
type StagedFigures struct {
	FactRows             int64 `json:"fact_rows"`
	FactEventSum         int64 `json:"fact_event_sum"`
	FactNullKeyRows      int64 `json:"fact_null_key_rows"`
	CourseDayRows        int64 `json:"course_day_rows"`
	EventCount           int64 `json:"event_count"`
	MatchedLessonCount   int64 `json:"matched_lesson_count"`
	UnknownLessonCount   int64 `json:"unknown_lesson_count"`
	EnrolledEventCount   int64 `json:"enrolled_event_count"`
	IdentityViolatedRows int64 `json:"identity_violated_rows"` // course_day rows where matched + unknown != event_count
}

// Check is one verdict in the report.
type Check struct {
	Name    string         `json:"name"`
	Date    string         `json:"date,omitempty"`
	Passed  bool           `json:"passed"`
	Warning bool           `json:"warning,omitempty"`
	Detail  string         `json:"detail"`
	Figures map[string]any `json:"figures,omitempty"`
}

// Report is the content of _gate.json.
type Report struct {
	JobID      string   `json:"job_id"`
	Dates      []string `json:"dates"`
	UnknownCap float64  `json:"unknown_cap"`
	Passed     bool     `json:"passed"`
	Checks     []Check  `json:"checks"`
}

// Failed returns the checks that failed.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// FailedNames returns the names of the failed checks, in report order.
func (r Report) FailedNames() []string {
	names := []string{}
	for _, c := range r.Failed() {
		names = append(names, c.Name)
	}
	return names
}

// Reasons summarizes the failed checks in one line, for errors and logs.
func (r Report) Reasons() string {
	var parts []string
	for _, c := range r.Failed() {
		s := c.Name
		if c.Date != "" {
			s += "[" + c.Date + "]"
		}
		parts = append(parts, s+": "+c.Detail)
	}
	return strings.Join(parts, "; ")
}

// Finish sets Passed from the checks.
func (r *Report) Finish() {
	r.Passed = len(r.Checks) > 0 && len(r.Failed()) == 0
}

// InputChecks are checks 1 to 3 and the raw event identity checks. They run before any join so that a bad input
// fails before the expensive part of the job, and they are still rejections:
// the supplier has to fix the input, a retry will not.
func InputChecks(in InputFigures) []Check {
	prohibited := Check{
		Name:   CheckProhibitedColumns,
		Passed: len(in.ProhibitedFound) == 0,
		// Quoted: a name's stray space ("email ") shows. With the first
		// file holding each: the read window may hold thousands.
		Detail: listDetail("prohibited columns in the raw schema read", foundIn(in.ProhibitedFound, in.ProhibitedFirstIn)),
		Figures: map[string]any{"found": nonNil(in.ProhibitedFound), "raw_columns": nonNil(in.RawColumns), "prohibited": nonNil(in.Prohibited),
			"first_in": in.ProhibitedFirstIn},
	}
	if len(in.Prohibited) == 0 && len(in.ProhibitedFound) == 0 {
		// Turned off by the operator: passed, but the record and the
		// report say nothing was checked rather than "none found".
		prohibited.Warning = true
		prohibited.Detail = "off (engagement.prohibitedColumns none): no raw column was checked"
	}
	return []Check{
		prohibited,
		{
			Name:    CheckManifestUniqueLesson,
			Passed:  len(in.DuplicateLessonIDs) == 0,
			Detail:  listDetail("lesson_id duplicated inside the manifest pin", shownIDs(in.DuplicateLessonIDs)),
			Figures: map[string]any{"manifest_rows": in.ManifestRows, "duplicated": recordedIDs(in.DuplicateLessonIDs)},
		},
		{
			// A manifest row without a lesson_id can match no event: it is
			// a broken catalog row, refused like a duplicate, never skipped.
			Name:    CheckManifestLessonPresent,
			Passed:  in.NullLessonIDs == 0,
			Detail:  fmt.Sprintf("%d rows of the manifest pin have a null lesson_id", in.NullLessonIDs),
			Figures: map[string]any{"manifest_rows": in.ManifestRows, "null_lesson_ids": in.NullLessonIDs},
		},
		{
			Name:   CheckEnrollmentUniquePair,
			Passed: in.DuplicateEnrollCount == 0,
			Detail: fmt.Sprintf("%d (learner_key, course_id) pairs duplicated inside the snapshot%s",
				in.DuplicateEnrollCount, sample(in.DuplicateEnrollments)),
			Figures: map[string]any{"enrollment_rows": in.EnrollmentRows, "duplicated_pairs": in.DuplicateEnrollCount},
		},
		{
			// An event without a time has no event date: any requested date
			// may be missing it, and counting the rest would be a silent drop.
			// Stray events (a clock reset to 1970) are a warning here, not a
			// failure: their dates are not the run's, and a refusal would
			// hold every date up for a producer's old rows.
			Name:    CheckEventTimePresent,
			Passed:  in.NullEventTimes == 0 && in.OutOfRangeEventTimes == 0,
			Warning: in.StrayEvents > 0,
			Detail: fmt.Sprintf("%s%s; %d of dates not requested lie outside their partition's own window (counted by no publish)",
				timesDetail(in.NullEventTimes, in.OutOfRangeEventTimes), forExample(in.NullEventTimeSample), in.StrayEvents),
			Figures: map[string]any{"null_event_times": in.NullEventTimes, "out_of_range_event_times": in.OutOfRangeEventTimes,
				"stray_events": in.StrayEvents, "sample": nonNil(in.NullEventTimeSample)},
		},
		{
			// event_id is the business key of an event; a repeat is an
			// at-least-once redelivery the sum would count twice, or a
			// correction on another date that a publish of that date would
			// count again. Refused, never dropped, like the enrollment grain.
			Name:   CheckEventIDUnique,
			Passed: in.NullEventIDs == 0 && in.DuplicateEventIDs == 0,
			Detail: fmt.Sprintf("%d repeated and %d null event_id among the events of the requested dates (a repeat: another copy in the read window, on any date)%s",
				in.DuplicateEventIDs, in.NullEventIDs, sample(in.DuplicateEventIDSample)),
			Figures: map[string]any{"duplicate_event_ids": in.DuplicateEventIDs, "null_event_ids": in.NullEventIDs},
		},
		{
			Name:   CheckManifestTitleLength,
			Passed: in.LongestTitleBytes <= MaxTitleBytes,
			Detail: fmt.Sprintf("longest lesson_title in the manifest pin: %d bytes (lesson %q), at most %d",
				in.LongestTitleBytes, in.LongestTitleLesson, MaxTitleBytes),
			Figures: map[string]any{"longest_title_bytes": in.LongestTitleBytes, "lesson_id": in.LongestTitleLesson, "max_bytes": MaxTitleBytes},
		},
	}
}

// StagedChecks are checks 4 to 8 and the reconciliation checks, per date.
// requested is the date list; stage holds the event-level figures and
// staged the figures read back from the staged bytes.
func StagedChecks(requested []dates.Date, unknownCap float64, stage map[dates.Date]StageFigures, staged map[dates.Date]StagedFigures) []Check {
	if len(requested) == 0 {
		return []Check{{Name: CheckDatesStaged, Passed: false, Detail: "the date list is empty"}}
	}
	var out []Check
	for _, d := range requested {
		ds := d.String()
		in, sf := stage[d], staged[d]
		add := func(c Check) {
			c.Date = ds
			out = append(out, c)
		}
		add(Check{
			Name:    CheckNullKeys,
			Passed:  sf.FactNullKeyRows == 0,
			Detail:  fmt.Sprintf("%d staged fact rows with a null learner_key, lesson_id or course_id", sf.FactNullKeyRows),
			Figures: map[string]any{"null_key_rows": sf.FactNullKeyRows, "fact_rows": sf.FactRows},
		})
		rate := Rate(sf.UnknownLessonCount, sf.EventCount)
		add(Check{
			Name:    CheckUnknownLessonCap,
			Passed:  rate <= unknownCap,
			Warning: rate > unknownCap/2,
			// The count the cap allows too: at four decimals, a rate just
			// over the cap reads as equal to it on a day of millions.
			Detail: fmt.Sprintf("unknown lesson rate %.4f (%d of %d events), cap %.4f (at most %d)",
				rate, sf.UnknownLessonCount, sf.EventCount, unknownCap, capAllows(unknownCap, sf.EventCount)),
			Figures: map[string]any{"rate": rate, "unknown_lesson_count": sf.UnknownLessonCount, "event_count": sf.EventCount, "cap": unknownCap,
				"allowed_unknown": capAllows(unknownCap, sf.EventCount)},
		})
		add(Check{
			Name:   CheckMatchedPlusUnknown,
			Passed: sf.MatchedLessonCount+sf.UnknownLessonCount == sf.EventCount && sf.IdentityViolatedRows == 0,
			Detail: fmt.Sprintf("matched %d + unknown %d vs event_count %d; %d course_day rows break the identity",
				sf.MatchedLessonCount, sf.UnknownLessonCount, sf.EventCount, sf.IdentityViolatedRows),
			Figures: map[string]any{"matched": sf.MatchedLessonCount, "unknown": sf.UnknownLessonCount, "event_count": sf.EventCount, "violating_rows": sf.IdentityViolatedRows},
		})
		add(Check{
			Name:    CheckFactEqualsCourseDay,
			Passed:  sf.FactEventSum == sf.EventCount,
			Detail:  fmt.Sprintf("fact event_count sum %d vs course_day event_count sum %d", sf.FactEventSum, sf.EventCount),
			Figures: map[string]any{"fact_event_sum": sf.FactEventSum, "course_day_event_sum": sf.EventCount},
		})
		add(Check{
			Name:    CheckDatesStaged,
			Passed:  in.InputEvents == 0 || sf.FactRows > 0,
			Detail:  fmt.Sprintf("%d input events, %d staged fact rows", in.InputEvents, sf.FactRows),
			Figures: map[string]any{"input_events": in.InputEvents, "fact_rows": sf.FactRows, "course_day_rows": sf.CourseDayRows},
		})
		add(Check{
			Name:    CheckManifestCourseConflict,
			Passed:  in.ManifestCourseConflicts == 0,
			Detail:  fmt.Sprintf("%d events whose course_id differs from their manifest course_id", in.ManifestCourseConflicts),
			Figures: map[string]any{"conflicting_events": in.ManifestCourseConflicts},
		})
		add(Check{
			Name:    CheckFactRowCourseConflict,
			Passed:  in.FactRowCourseConflicts == 0,
			Detail:  fmt.Sprintf("%d fact rows whose events disagree on course_id", in.FactRowCourseConflicts),
			Figures: map[string]any{"conflicting_fact_rows": in.FactRowCourseConflicts},
		})
		add(Check{
			Name:    CheckInputEqualsFact,
			Passed:  in.InputEvents == sf.FactEventSum,
			Detail:  fmt.Sprintf("input events %d vs staged fact event_count sum %d", in.InputEvents, sf.FactEventSum),
			Figures: map[string]any{"input_events": in.InputEvents, "fact_event_sum": sf.FactEventSum},
		})
	}
	return out
}

// Rate is unknown/events, 0 for an empty day.
func Rate(unknown, events int64) float64 {
	if events == 0 {
		return 0
	}
	return float64(unknown) / float64(events)
}

func quoteAll(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = strconv.Quote(s)
	}
	return out
}

// shownIDs are ids from an input as a detail shows them (shownID): twenty
// duplicated 1 MiB manifest ids made a 63 MB record (review CW).
func shownIDs(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = shownID(s, 0, "")
	}
	return out
}

// recordedIDs are ids as a check's figures keep them: whole up to
// MaxRecordedIDBytes, a longer one cut there (whole code points) and
// followed by its bytes and SHA-256, as a rejection keeps an unknown
// lesson's.
func recordedIDs(items []string) []string {
	out := make([]string, 0, len(items))
	for _, s := range items {
		if short, cut := cutID(s); cut {
			s = fmt.Sprintf("%s... (%d bytes, sha256 %s)", short, len(s), digest(s))
		}
		out = append(out, s)
	}
	return out
}

// foundIn quotes each found field, with the first file holding it when
// known.
func foundIn(found []string, firstIn map[string]string) []string {
	out := quoteAll(found)
	for i, f := range found {
		if file, ok := firstIn[f]; ok {
			out[i] += " (first in " + file + ")"
		}
	}
	return out
}

func listDetail(what string, items []string) string {
	if len(items) == 0 {
		return "none: " + what
	}
	s := append([]string(nil), items...)
	sort.Strings(s)
	return fmt.Sprintf("%s: %s", what, strings.Join(s, ", "))
}

// sample lists a few of the input's values a check found, escaped and
// cut as the rejection table shows them: an id is a producer's bytes.
func sample(items []string) string {
	shown := make([]string, len(items))
	for i, s := range items {
		shown[i] = shownID(s, 0, "")
	}
	return forExample(shown)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// capAllows is the most unknown events of events the cap passes: the
// largest n with Rate(n, events) <= unknownCap, as the check judges it.
func capAllows(unknownCap float64, events int64) int64 {
	if events <= 0 {
		return 0
	}
	n := min(int64(math.Floor(unknownCap*float64(events))), events)
	for n < events && Rate(n+1, events) <= unknownCap {
		n++
	}
	for n > 0 && Rate(n, events) > unknownCap {
		n--
	}
	return n
}

// forExample is " (e.g. a, b)" for a sample, "" without one.
func forExample(sample []string) string {
	if len(sample) == 0 {
		return ""
	}
	return " (e.g. " + strings.Join(sample, ", ") + ")"
}
