package gate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
)

var allChecks = []string{
	CheckProhibitedColumns, CheckManifestUniqueLesson, CheckEnrollmentUniquePair,
	CheckNullKeys, CheckUnknownLessonCap, CheckMatchedPlusUnknown, CheckFactEqualsCourseDay,
	CheckDatesStaged, CheckManifestCourseConflict, CheckFactRowCourseConflict, CheckInputEqualsFact,
	CheckEventTimePresent, CheckEventIDUnique, CheckManifestTitleLength, CheckManifestLessonPresent,
}

var day = dates.MustParse("2026-03-02")

// figures is one date's worth of gate input.
type figures struct {
	in     InputFigures
	stage  StageFigures
	staged StagedFigures
}

// clean is a consistent day: 100 input events, all staged; 99 matched and 1
// unknown (rate 0.01, exactly half the 0.02 cap, so not even a warning).
func clean() figures {
	return figures{
		in: InputFigures{
			RawFiles: 2, RawColumns: []string{"event_id", "learner_key", "lesson_id", "course_id", "event_time"},
			Prohibited:   []string{"email", "phone"},
			ManifestRows: 10, EnrollmentRows: 400,
		},
		stage: StageFigures{InputEvents: 100},
		staged: StagedFigures{
			FactRows: 40, FactEventSum: 100, CourseDayRows: 8,
			EventCount: 100, MatchedLessonCount: 99, UnknownLessonCount: 1, EnrolledEventCount: 90,
		},
	}
}

func (f figures) report(cap float64) Report {
	r := Report{JobID: "job-1", Dates: []string{day.String()}, UnknownCap: cap}
	r.Checks = append(InputChecks(f.in), StagedChecks([]dates.Date{day}, cap,
		map[dates.Date]StageFigures{day: f.stage}, map[dates.Date]StagedFigures{day: f.staged})...)
	r.Finish()
	return r
}

func checkByName(t *testing.T, r Report, name string) Check {
	t.Helper()
	var found []Check
	for _, c := range r.Checks {
		if c.Name == name {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("check %q appears %d times in the report, want once", name, len(found))
	}
	return found[0]
}

func TestCleanDayPasses(t *testing.T) {
	r := clean().report(0.02)
	if !r.Passed {
		t.Fatalf("clean day rejected: %s", r.Reasons())
	}
	if len(r.Checks) != len(allChecks) {
		t.Errorf("report has %d checks, want %d", len(r.Checks), len(allChecks))
	}
	for _, name := range allChecks {
		c := checkByName(t, r, name)
		if !c.Passed {
			t.Errorf("%s failed on a clean day: %s", name, c.Detail)
		}
		if c.Detail == "" {
			t.Errorf("%s has no detail", name)
		}
	}
	if r.Reasons() != "" {
		t.Errorf("Reasons() on a passing report = %q, want empty", r.Reasons())
	}
	if c := checkByName(t, r, CheckUnknownLessonCap); c.Warning {
		t.Errorf("rate exactly half the cap warned: %s", c.Detail)
	}
}

func TestEachCheckTripsAlone(t *testing.T) {
	tests := []struct {
		check  string
		break_ func(*figures)
		detail []string // substrings of the failing check's detail
	}{
		{CheckProhibitedColumns, func(f *figures) {
			f.in.RawColumns = append(f.in.RawColumns, "Email")
			f.in.ProhibitedFound = []string{"Email"}
		}, []string{"Email"}},
		{CheckManifestUniqueLesson, func(f *figures) { f.in.DuplicateLessonIDs = []string{"lesson-03"} }, []string{"lesson-03"}},
		{CheckEnrollmentUniquePair, func(f *figures) {
			f.in.DuplicateEnrollCount = 1
			f.in.DuplicateEnrollments = []string{"learner-7|course-go"}
		}, []string{"learner-7|course-go", "1 "}},
		{CheckNullKeys, func(f *figures) { f.staged.FactNullKeyRows = 2 }, []string{"2 "}},
		{CheckUnknownLessonCap, func(f *figures) {
			f.staged.MatchedLessonCount, f.staged.UnknownLessonCount = 97, 3
		}, []string{"0.0300", "3 of 100"}},
		{CheckMatchedPlusUnknown, func(f *figures) { f.staged.MatchedLessonCount = 98 }, []string{"98", "100"}},
		{CheckMatchedPlusUnknown + " (row identity)", func(f *figures) { f.staged.IdentityViolatedRows = 1 }, nil},
		{CheckFactEqualsCourseDay, func(f *figures) {
			// course_day says 101, the fact 100; input (100) still equals the fact.
			f.staged.EventCount, f.staged.MatchedLessonCount = 101, 100
		}, []string{"100", "101"}},
		{CheckDatesStaged, func(f *figures) { f.staged.FactRows = 0 }, []string{"100 input events"}},
		{CheckManifestCourseConflict, func(f *figures) { f.stage.ManifestCourseConflicts = 5 }, []string{"5 "}},
		{CheckFactRowCourseConflict, func(f *figures) { f.stage.FactRowCourseConflicts = 4 }, []string{"4 "}},
		{CheckInputEqualsFact, func(f *figures) { f.stage.InputEvents = 103 }, []string{"103", "100"}},
		{CheckEventTimePresent, func(f *figures) { f.in.NullEventTimes = 6 }, []string{"6 "}},
		{CheckEventTimePresent + " (out of range)", func(f *figures) { f.in.OutOfRangeEventTimes = 7 }, []string{"7 raw events", "outside the years 0001 to 9999"}},
		{CheckEventTimePresent + " (both)", func(f *figures) { f.in.NullEventTimes, f.in.OutOfRangeEventTimes = 2, 5 }, []string{"2 raw events", "and 5 one outside"}},
		{CheckEventIDUnique, func(f *figures) {
			f.in.DuplicateEventIDs = 2
			f.in.DuplicateEventIDSample = []string{"ev-000007"}
		}, []string{"2 repeated", "ev-000007"}},
		{CheckEventIDUnique + " (null)", func(f *figures) { f.in.NullEventIDs = 3 }, []string{"3 null"}},
		{CheckManifestTitleLength, func(f *figures) {
			f.in.LongestTitleBytes, f.in.LongestTitleLesson = MaxTitleBytes+1, "lesson-go-01"
		}, []string{"65537 bytes", "lesson-go-01"}},
		{CheckManifestLessonPresent, func(f *figures) { f.in.NullLessonIDs = 2 }, []string{"2 rows", "null lesson_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.check, func(t *testing.T) {
			name, _, _ := strings.Cut(tc.check, " ")
			f := clean()
			tc.break_(&f)
			r := f.report(0.02)
			if r.Passed {
				t.Fatalf("report passed with %s broken", name)
			}
			for _, n := range allChecks {
				c := checkByName(t, r, n)
				if n == name && c.Passed {
					t.Errorf("%s passed, want failed: %s", n, c.Detail)
				}
				if n != name && !c.Passed {
					t.Errorf("%s failed too, want only %s: %s", n, name, c.Detail)
				}
			}
			failed := r.Failed()
			if len(failed) != 1 || failed[0].Name != name {
				t.Errorf("Failed() = %v, want only %s", failed, name)
			}
			c := checkByName(t, r, name)
			for _, s := range tc.detail {
				if !strings.Contains(c.Detail, s) {
					t.Errorf("%s detail %q does not contain %q", name, c.Detail, s)
				}
			}
			if !strings.HasPrefix(r.Reasons(), name) {
				t.Errorf("Reasons() = %q, want it to start with %s", r.Reasons(), name)
			}
		})
	}
}

// TestProhibitedColumnsOff: with engagement.prohibitedColumns none the
// check passes, but its record says it was off, with a warning the report
// shows, not "none found" over a schema that may hold Email; the list
// checked is in the figures.
func TestProhibitedColumnsOff(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prohibited []string
		warning    bool
		detail     string
	}{
		{"on", []string{"email", "phone"}, false, "none: prohibited columns"},
		{"off", nil, true, "off (engagement.prohibitedColumns none)"},
	} {
		f := clean()
		f.in.Prohibited = tc.prohibited
		f.in.RawColumns = append(f.in.RawColumns, "Email")
		c := checkByName(t, f.report(0.02), CheckProhibitedColumns)
		if !c.Passed || c.Warning != tc.warning || !strings.HasPrefix(c.Detail, tc.detail) || fmt.Sprint(c.Figures["prohibited"]) != fmt.Sprint(nonNil(tc.prohibited)) {
			t.Errorf("%s: %+v, want passed, warning %v, detail %q…, figures' prohibited %v", tc.name, c, tc.warning, tc.detail, tc.prohibited)
		}
	}
}

// TestStrayEventsWarn: events no publish counts (other dates' events
// outside their partition's window) are a warning on raw_event_time_present
// with their count, never a failure: their dates are not the run's.
func TestStrayEventsWarn(t *testing.T) {
	for _, tc := range []struct {
		stray   int64
		warning bool
	}{{0, false}, {40, true}} {
		f := clean()
		f.in.StrayEvents = tc.stray
		r := f.report(0.02)
		c := checkByName(t, r, CheckEventTimePresent)
		if !c.Passed || !r.Passed || c.Warning != tc.warning || c.Figures["stray_events"] != tc.stray ||
			!strings.Contains(c.Detail, fmt.Sprintf("; %d of dates not requested", tc.stray)) {
			t.Errorf("%d stray: %+v (report passed %v), want passed, warning %v", tc.stray, c, r.Passed, tc.warning)
		}
	}
}

func TestUnknownCapBoundary(t *testing.T) {
	tests := []struct {
		name            string
		unknown, events int64
		cap             float64
		pass, warn      bool
		allowed         int64 // the most unknown events the cap passes, by hand
	}{
		{"zero unknown", 0, 100, 0.02, true, false, 2},
		{"below half the cap", 9, 1000, 0.02, true, false, 20},
		{"exactly half the cap", 1, 100, 0.02, true, false, 2},
		{"just above half the cap", 101, 10000, 0.02, true, true, 200},
		{"between half and cap", 15, 1000, 0.02, true, true, 20},
		{"exactly the cap", 2, 100, 0.02, true, true, 2},
		{"exactly the cap, larger day", 20, 1000, 0.02, true, true, 20},
		{"just above the cap", 201, 10000, 0.02, false, true, 200},
		{"just above the cap, tiny", 20001, 1000000, 0.02, false, true, 20000},
		{"well above the cap", 4, 100, 0.02, false, true, 2},
		{"zero cap, zero unknown", 0, 100, 0, true, false, 0},
		{"zero cap, one unknown", 1, 100000, 0, false, true, 0},
		{"cap 1, all unknown", 100, 100, 1, true, true, 100},
		{"empty day", 0, 0, 0.02, true, false, 0},
		// A design-size day: at four decimals, 1001 of 50000 reads as the cap.
		{"one above the cap, large day", 1001, 50000, 0.02, false, true, 1000},
		{"a cap that is no whole count", 0, 973, 0.02, true, false, 19},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := clean()
			f.stage.InputEvents = tc.events
			f.staged.FactEventSum = tc.events
			f.staged.EventCount = tc.events
			f.staged.UnknownLessonCount = tc.unknown
			f.staged.MatchedLessonCount = tc.events - tc.unknown
			if tc.events == 0 {
				f.staged.FactRows = 0
			}
			r := f.report(tc.cap)
			c := checkByName(t, r, CheckUnknownLessonCap)
			if c.Passed != tc.pass {
				t.Errorf("%d of %d at cap %v: passed=%v, want %v (%s)", tc.unknown, tc.events, tc.cap, c.Passed, tc.pass, c.Detail)
			}
			if c.Warning != tc.warn {
				t.Errorf("%d of %d at cap %v: warning=%v, want %v (%s)", tc.unknown, tc.events, tc.cap, c.Warning, tc.warn, c.Detail)
			}
			if r.Passed != tc.pass {
				t.Errorf("report passed=%v, want %v: %s", r.Passed, tc.pass, r.Reasons())
			}
			if c.Figures["allowed_unknown"] != tc.allowed || !strings.Contains(c.Detail, fmt.Sprintf("(at most %d)", tc.allowed)) {
				t.Errorf("the cap allows %d: figures %v, detail %q", tc.allowed, c.Figures, c.Detail)
			}
			if c.Figures["unknown_lesson_count"] != tc.unknown || c.Figures["event_count"] != tc.events || c.Figures["cap"] != tc.cap {
				t.Errorf("figures %v do not carry the counts and the cap", c.Figures)
			}
		})
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		u, e int64
		want float64
	}{
		{0, 0, 0}, {5, 0, 0}, {1, 100, 0.01}, {2, 100, 0.02}, {1, 4, 0.25}, {10, 10, 1},
	}
	for _, tc := range tests {
		if got := Rate(tc.u, tc.e); got != tc.want {
			t.Errorf("Rate(%d, %d) = %v, want %v", tc.u, tc.e, got, tc.want)
		}
	}
}

func TestDatesStaged(t *testing.T) {
	t.Run("empty date list fails", func(t *testing.T) {
		checks := StagedChecks(nil, 0.02, nil, nil)
		if len(checks) == 0 {
			t.Fatal("no checks for an empty date list")
		}
		var found bool
		for _, c := range checks {
			if c.Name == CheckDatesStaged {
				found = true
				if c.Passed {
					t.Errorf("dates_staged passed for an empty date list")
				}
			}
		}
		if !found {
			t.Errorf("no dates_staged check for an empty date list: %v", checks)
		}
		r := Report{Checks: append(InputChecks(clean().in), checks...)}
		r.Finish()
		if r.Passed {
			t.Errorf("report with an empty date list passed")
		}
		if !strings.Contains(r.Reasons(), CheckDatesStaged) {
			t.Errorf("Reasons() = %q, want dates_staged", r.Reasons())
		}
	})

	t.Run("zero input events and no staged rows passes", func(t *testing.T) {
		quiet := dates.MustParse("2026-03-03")
		checks := StagedChecks([]dates.Date{quiet}, 0.02,
			map[dates.Date]StageFigures{quiet: {InputEvents: 0}},
			map[dates.Date]StagedFigures{quiet: {}})
		r := Report{Checks: checks}
		r.Finish()
		if !r.Passed {
			t.Errorf("an empty date was rejected: %s", r.Reasons())
		}
		for _, c := range checks {
			if c.Date != "2026-03-03" {
				t.Errorf("check %s has date %q", c.Name, c.Date)
			}
		}
	})

	t.Run("zero input events, date missing from both maps passes", func(t *testing.T) {
		quiet := dates.MustParse("2026-03-03")
		r := Report{Checks: StagedChecks([]dates.Date{quiet}, 0.02, nil, nil)}
		r.Finish()
		if !r.Passed {
			t.Errorf("an absent empty date was rejected: %s", r.Reasons())
		}
	})

	t.Run("input events and no staged figures fails", func(t *testing.T) {
		r := Report{Checks: StagedChecks([]dates.Date{day}, 0.02,
			map[dates.Date]StageFigures{day: {InputEvents: 7}}, nil)}
		r.Finish()
		if r.Passed {
			t.Fatal("a date with input events and nothing staged passed")
		}
		var ds Check
		for _, c := range r.Checks {
			if c.Name == CheckDatesStaged {
				ds = c
			}
		}
		if ds.Passed {
			t.Errorf("dates_staged passed: %s", ds.Detail)
		}
	})
}

func TestReasonsNamesChecksAndDates(t *testing.T) {
	d1, d2 := dates.MustParse("2026-03-02"), dates.MustParse("2026-03-03")
	good := clean()
	in := good.in
	in.ProhibitedFound = []string{"email"}
	stage := map[dates.Date]StageFigures{d1: {InputEvents: 100}, d2: {InputEvents: 101}}
	over := good.staged
	over.MatchedLessonCount, over.UnknownLessonCount = 95, 5
	staged := map[dates.Date]StagedFigures{d1: over, d2: good.staged}

	r := Report{JobID: "job-1"}
	r.Checks = append(InputChecks(in), StagedChecks([]dates.Date{d1, d2}, 0.02, stage, staged)...)
	r.Finish()
	if r.Passed {
		t.Fatal("report passed")
	}
	reasons := r.Reasons()
	for _, s := range []string{
		"prohibited_columns: ", "email",
		"unknown_lesson_cap[2026-03-02]", "5 of 100",
		"input_equals_fact[2026-03-03]", "101",
	} {
		if !strings.Contains(reasons, s) {
			t.Errorf("Reasons() = %q, missing %q", reasons, s)
		}
	}
	for _, s := range []string{"unknown_lesson_cap[2026-03-03]", "input_equals_fact[2026-03-02]", "fact_null_keys", "dates_staged", "manifest_unique_lesson_id"} {
		if strings.Contains(reasons, s) {
			t.Errorf("Reasons() = %q names passing check %q", reasons, s)
		}
	}
	var names []string
	for _, c := range r.Failed() {
		names = append(names, c.Name+"@"+c.Date)
	}
	sort.Strings(names)
	want := []string{"input_equals_fact@2026-03-03", "prohibited_columns@", "unknown_lesson_cap@2026-03-02"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("Failed() = %v, want %v", names, want)
	}
	// Checks per date: 8 staged checks for each of the two dates plus 7 input checks.
	if len(r.Checks) != 7+2*8 {
		t.Errorf("report has %d checks, want 23", len(r.Checks))
	}
}

func TestFinishNeedsChecks(t *testing.T) {
	r := Report{}
	r.Finish()
	if r.Passed {
		t.Errorf("a report with no checks passed")
	}
}

func TestReportJSONStableNames(t *testing.T) {
	r := clean().report(0.02)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		JobID  string `json:"job_id"`
		Passed bool   `json:"passed"`
		Checks []struct {
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.JobID != "job-1" || !back.Passed || len(back.Checks) != len(allChecks) {
		t.Errorf("_gate.json round trip = %+v", back)
	}
	seen := map[string]bool{}
	for _, c := range back.Checks {
		seen[c.Name] = true
	}
	for _, n := range allChecks {
		if !seen[n] {
			t.Errorf("_gate.json lacks check %q", n)
		}
	}
}
