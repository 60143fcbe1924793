package publishtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

const (
	mon = "2026-03-02"
	tue = "2026-03-03"
)

// Run runs the whole suite against one engine.
func Run(t *testing.T, h Harness) {
	type test struct {
		name string
		fn   func(*testing.T, Harness)
	}
	tests := []test{
		{"UnknownLessonSurvives", testUnknownLessonSurvives},
		{"CapBlocksPointer", testCapBlocksPointer},
		{"TwoJobIDsOneSum", testTwoJobIDsOneSum},
		{"CrashBeforePointer", testCrashBeforePointer},
		{"NeighborDate", testNeighborDate},
		{"LateEvent", testLateEvent},
		{"DuplicateEnrollmentFails", testDuplicateEnrollmentFails},
		{"GateVariants", testGateVariants},
		{"GateReadsStagedBytes", testGateReadsStagedBytes},
		{"NoHelperColumn", testNoHelperColumn},
		{"IdentitiesAndGroundTruth", testIdentitiesAndGroundTruth},
		{"ConcurrentPublishersDifferentDates", testConcurrentDifferentDates},
		{"TimeZoneIndependent", testTimeZoneIndependent},
		{"EmptyDatePublishesZeros", testEmptyDate},
		{"FileCountFollowsBytes", testFileCountFollowsBytes},
		{"InputsChangedDuringAttempt", testInputsChangedDuringAttempt},
		{"TodaysPartitionNotRead", testTodaysPartitionNotRead},
		{"MidnightOutage", testMidnightOutage},
	}
	// These cases judge what the driver does after (or instead of) the
	// engine's work, which is the same whichever engine staged: a rollback
	// copies pointer entries and checks files through the storage seam; a
	// crash between the history copy and pointer.json, an appending
	// publisher's copies and a published job id's refusal never reach the
	// engine differently. They run once per storage backend, with the
	// DuckDB harnesses, not again on Spark, where their nine publishes
	// cost well over a minute of the suite.
	if h.Engine == "duckdb" {
		tests = append(tests,
			test{"CrashMidPointer", testCrashMidPointer},
			test{"AppendingPublisherDoubles", testAppendingPublisherDoubles},
			test{"PublishedJobIDRefused", testPublishedJobIDRefused},
			test{"RollbackThroughReader", testRollbackThroughReader},
			test{"UnfinishedDayRefused", testUnfinishedDay})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

func d(s string) dates.Date { return dates.MustParse(s) }

func testTwoJobIDsOneSum(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "attempt-a", mon, tue))
	h.MustPublish(t, fx.Job(t, wh, "attempt-b", mon, tue))
	p := LoadPointer(t, wh)
	sums := FactSum(t, wh)
	for _, ds := range []string{mon, tue} {
		if got := p.Dates[d(ds)].JobID; got != "attempt-b" {
			t.Errorf("%s: pointer names %s, want attempt-b", ds, got)
		}
		if want := fx.Expected.ByDate[d(ds)].Events; sums[d(ds)] != want {
			t.Errorf("%s: visible fact sum %d, want %d (the fixture once)", ds, sums[d(ds)], want)
		}
	}
	if p.Generation != 2 {
		t.Errorf("generation %d, want 2", p.Generation)
	}
	// The first attempt's staging is still there, abandoned and invisible.
	if Get(t, wh, warehouse.GatePath("attempt-a")) == nil {
		t.Errorf("attempt-a's staging was removed; staging is only ever removed by gc")
	}
}

func testNeighborDate(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "both-days", mon, tue))
	monBefore := VisibleCourseDay(t, wh)[d(mon)]
	entryBefore := LoadPointer(t, wh).Dates[d(mon)]
	h.MustPublish(t, fx.Job(t, wh, "tuesday-only", tue))
	p := LoadPointer(t, wh)
	if got := p.Dates[d(mon)].JobID; got != "both-days" {
		t.Errorf("%s entry now names %s; publishing %s must leave it alone", mon, got, tue)
	}
	if !slices.Equal(p.Dates[d(mon)].FactFiles, entryBefore.FactFiles) {
		t.Errorf("%s file list changed", mon)
	}
	if got := p.Dates[d(tue)].JobID; got != "tuesday-only" {
		t.Errorf("%s entry names %s, want tuesday-only", tue, got)
	}
	after := VisibleCourseDay(t, wh)
	for course, row := range monBefore {
		if after[d(mon)][course] != row {
			t.Errorf("%s %s: %+v became %+v", mon, course, row, after[d(mon)][course])
		}
	}
	if len(after[d(mon)]) != len(monBefore) {
		t.Errorf("%s has %d courses, had %d", mon, len(after[d(mon)]), len(monBefore))
	}
}

func testLateEvent(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	if len(fx.Expected.LateEvents) != 1 {
		t.Fatalf("fixture has %d late events, want exactly 1", len(fx.Expected.LateEvents))
	}
	late := fx.Expected.LateEvents[0]
	if late.IngestDate <= late.EventDate {
		t.Fatalf("late event %s is not late: event %s ingest %s", late.EventID, late.EventDate, late.IngestDate)
	}
	day := fx.Expected.ByDate[late.EventDate]

	// Restated with the lateness allowance: the late event lands on its event date.
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "restate", late.EventDate.String()))
	if got := FactSum(t, wh)[late.EventDate]; got != day.Events {
		t.Errorf("restated %s: %d events, want %d including the late one", late.EventDate, got, day.Events)
	}
	if n := LoadPointer(t, wh).Dates[late.EventDate].EventCount; n != day.Events {
		t.Errorf("pointer event_count %d, want %d", n, day.Events)
	}

	// A read filtered on ingest_date = event_date (no lateness allowance)
	// misses exactly the late event.
	wh2 := h.NewWarehouse(t)
	j := fx.Job(t, wh2, "same-day-only", late.EventDate.String())
	j.LatenessDays = 0
	h.MustPublish(t, j)
	if got := FactSum(t, wh2)[late.EventDate]; got != day.SameDayIngestEvents || got != day.Events-1 {
		t.Errorf("ingest_date = event_date read: %d events, want %d (= %d - the late one)", got, day.SameDayIngestEvents, day.Events)
	}
	// The late event is not on its ingest date.
	if got := FactSum(t, wh)[late.IngestDate]; got != 0 {
		t.Errorf("%s was not requested but shows %d events", late.IngestDate, got)
	}
}

func testDuplicateEnrollmentFails(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "duplicate-enrollment")
	wh := h.NewWarehouse(t)
	_, err := h.Publish(t, fx.Job(t, wh, "dup-enr", mon, tue))
	if exitcode.Code(err) != exitcode.GateRejected || !strings.Contains(err.Error(), gate.CheckEnrollmentUniquePair) {
		t.Fatalf("got exit %d (%v), want %d naming %s", exitcode.Code(err), err, exitcode.GateRejected, gate.CheckEnrollmentUniquePair)
	}
	if Get(t, wh, "pointer.json") != nil {
		t.Errorf("a rejected first publish created pointer.json")
	}
}

func testGateVariants(t *testing.T, h Harness) {
	cases := []struct{ variant, check string }{
		{"over-cap", gate.CheckUnknownLessonCap},
		{"duplicate-enrollment", gate.CheckEnrollmentUniquePair},
		{"duplicate-lesson", gate.CheckManifestUniqueLesson},
		{"course-conflict", gate.CheckManifestCourseConflict},
		{"null-course", gate.CheckNullKeys},
		{"prohibited-column", gate.CheckProhibitedColumns},
	}
	for _, tc := range cases {
		t.Run(tc.variant, func(t *testing.T) {
			fx := h.LoadFixture(t, tc.variant)
			wh := h.NewWarehouse(t)
			raw := Hash(t, fx.In(), "")
			res, err := h.Publish(t, fx.Job(t, wh, "v-"+tc.variant, mon, tue))
			if exitcode.Code(err) != exitcode.GateRejected {
				t.Fatalf("exit %d (%v), want %d", exitcode.Code(err), err, exitcode.GateRejected)
			}
			if !slices.Contains(res.Report.FailedNames(), tc.check) {
				t.Errorf("failed checks %v do not include %s", res.Report.FailedNames(), tc.check)
			}
			if Get(t, wh, "pointer.json") != nil {
				t.Errorf("pointer.json written by a rejected publish")
			}
			if Get(t, wh, warehouse.GatePath("v-"+tc.variant)) == nil {
				t.Errorf("no _gate.json for the rejected attempt")
			}
			// Every rejection, before or after staging, records its time
			// and pins; only the cap's lists unknown lessons.
			var rej job.Rejection
			if err := json.Unmarshal(Get(t, wh, warehouse.RejectionPath("v-"+tc.variant)), &rej); err != nil {
				t.Fatalf("rejection record: %v", err)
			}
			if !rej.RejectedAt.Equal(Now) || rej.ManifestID != fx.Expected.ManifestID || rej.EnrollmentSnapshotID != fx.Expected.EnrollmentSnapshotID {
				t.Errorf("rejection record at %v with pins %q, %q; want %v, %q, %q", rej.RejectedAt, rej.ManifestID, rej.EnrollmentSnapshotID,
					Now, fx.Expected.ManifestID, fx.Expected.EnrollmentSnapshotID)
			}
			if capped := tc.check == gate.CheckUnknownLessonCap; capped != (len(rej.TopUnknownLessons) > 0) {
				t.Errorf("top unknown lessons %v for a rejection by %s", rej.TopUnknownLessons, tc.check)
			}
			if res.Rejection == nil || res.Rejection.JobID != "v-"+tc.variant {
				t.Errorf("result's rejection %+v, want the record of v-%s", res.Rejection, tc.variant)
			}
			if Hash(t, fx.In(), "") != raw {
				t.Errorf("inputs changed")
			}
		})
	}
}

func testNoHelperColumn(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	j := fx.Job(t, wh, "schema-1", mon, tue)
	j.HotCourses = []string{fx.Expected.HotCourse} // salting on, where the engine salts
	res := h.MustPublish(t, j)
	want := map[string][]string{
		engine.FactTable:      engine.FactColumns[:len(engine.FactColumns)-1],
		engine.CourseDayTable: engine.CourseDayColumns[:len(engine.CourseDayColumns)-1],
	}
	// Every string column is a UTF8 string to any reader, however the
	// engine held it while writing (DuckDB writes its titles and constants
	// from ENUM values).
	strs := map[string]map[string]string{
		engine.FactTable: {"learner_key": "UTF8", "lesson_id": "UTF8", "course_id": "UTF8", "manifest_id": "UTF8",
			"lesson_title": "UTF8", "enrollment_snapshot_id": "UTF8", "job_id": "UTF8"},
		engine.CourseDayTable: {"course_id": "UTF8", "job_id": "UTF8"},
	}
	for _, ds := range []string{mon, tue} {
		e := res.Entries[d(ds)]
		for table, list := range map[string][]pointer.File{engine.FactTable: e.FactFiles, engine.CourseDayTable: e.CourseDayFiles} {
			if len(list) == 0 {
				t.Fatalf("%s %s: no files", table, ds)
			}
			for _, f := range list {
				if got := StagedSchema(t, wh, f); !slices.Equal(got, want[table]) {
					t.Errorf("%s: columns %v, want exactly %v (event_date lives in the path)", f.Path, got, want[table])
				}
				if got := StagedStrings(t, wh, f); !maps.Equal(got, strs[table]) {
					t.Errorf("%s: byte-array columns and their annotations %v, want %v", f.Path, got, strs[table])
				}
				if !strings.Contains(f.Path, "/"+table+"/event_date="+ds+"/") {
					t.Errorf("%s is not under %s/event_date=%s/", f.Path, table, ds)
				}
			}
		}
	}
}

func testIdentitiesAndGroundTruth(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "truth-1", mon, tue))
	cd := VisibleCourseDay(t, wh)
	facts := FactSum(t, wh)
	factRows := map[dates.Date]int64{}
	var badIdentity int
	for _, r := range Rows(Visible(t, wh, engine.FactTable)) {
		factRows[dateOf(t, r["event_date"])]++
		// The run's identities, on every row the engine wrote.
		if r["job_id"] != "truth-1" || r["enrollment_snapshot_id"] != fx.Expected.EnrollmentSnapshotID {
			if badIdentity++; badIdentity <= 3 {
				t.Errorf("fact row job_id %v, enrollment_snapshot_id %v; want truth-1, %s", r["job_id"], r["enrollment_snapshot_id"], fx.Expected.EnrollmentSnapshotID)
			}
		}
	}
	for _, ds := range []string{mon, tue} {
		var total int64
		largest, largestN := "", int64(0)
		for course, row := range cd[d(ds)] {
			if row.Matched+row.Unknown != row.Events {
				t.Errorf("%s %s: matched %d + unknown %d != event_count %d", ds, course, row.Matched, row.Unknown, row.Events)
			}
			want := fx.Expected.ByDateCourse[d(ds)][course]
			got := CourseDay{Events: row.Events, Matched: row.Matched, Unknown: row.Unknown, Enrolled: row.Enrolled, Learners: row.Learners, JobID: "truth-1"}
			exp := CourseDay{Events: want.Events, Matched: want.Matched, Unknown: want.Unknown, Enrolled: want.Enrolled, Learners: want.Learners, JobID: "truth-1"}
			if got != exp || row.JobID != "truth-1" {
				t.Errorf("%s %s: got %+v, want %+v", ds, course, row, exp)
			}
			total += row.Events
			if row.Events > largestN {
				largest, largestN = course, row.Events
			}
		}
		if len(cd[d(ds)]) != len(fx.Expected.ByDateCourse[d(ds)]) {
			t.Errorf("%s: %d courses visible, want %d", ds, len(cd[d(ds)]), len(fx.Expected.ByDateCourse[d(ds)]))
		}
		if total != facts[d(ds)] {
			t.Errorf("%s: course_day sum %d != fact sum %d", ds, total, facts[d(ds)])
		}
		if total != fx.Expected.ByDate[d(ds)].Events {
			t.Errorf("%s: visible events %d, want %d", ds, total, fx.Expected.ByDate[d(ds)].Events)
		}
		if factRows[d(ds)] != fx.Expected.ByDate[d(ds)].FactRows {
			t.Errorf("%s: %d fact rows, want %d", ds, factRows[d(ds)], fx.Expected.ByDate[d(ds)].FactRows)
		}
		if largest != fx.Expected.HotCourse {
			t.Errorf("%s: largest course %s, want the hot course %s", ds, largest, fx.Expected.HotCourse)
		}
	}
}

func testConcurrentDifferentDates(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, ds := range []string{mon, tue} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.Publish(t, fx.Job(t, wh, "concurrent-"+ds, ds))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkBoth := func(wh, prefix string, generation int64) {
		t.Helper()
		p := LoadPointer(t, wh)
		if p.Generation != generation {
			t.Errorf("generation %d, want %d", p.Generation, generation)
		}
		for _, ds := range []string{mon, tue} {
			if got := p.Dates[d(ds)].JobID; got != prefix+ds {
				t.Errorf("%s names %q, want %s%s: an update was lost", ds, got, prefix, ds)
			}
		}
	}
	checkBoth(wh, "concurrent-", 2)

	// The same race between two real processes, which share nothing but the
	// warehouse directory.
	codes := make([]int, 2)
	stderrs := make([]string, 2)
	for i, ds := range []string{mon, tue} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, stderrs[i] = h.Run(t, nil, fx.Args(wh, "process-"+ds, ds)...)
		}()
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != 0 {
			t.Fatalf("process %d: exit %d: %s", i, codes[i], stderrs[i])
		}
	}
	checkBoth(wh, "process-", 4)
}

func testPublishedJobIDRefused(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "once", mon, tue))
	staging := Hash(t, wh, warehouse.StagingDir("once")+"/")
	before := Get(t, wh, "pointer.json")
	code, _, stderr := h.Run(t, nil, fx.Args(wh, "once", mon)...)
	if code != exitcode.AlreadyPublished {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitcode.AlreadyPublished, stderr)
	}
	if !strings.Contains(stderr, "once") {
		t.Errorf("stderr does not name the job id: %s", stderr)
	}
	if Hash(t, wh, warehouse.StagingDir("once")+"/") != staging {
		t.Errorf("published staging changed")
	}
	if !bytes.Equal(before, Get(t, wh, "pointer.json")) {
		t.Errorf("pointer changed")
	}
}

func testTimeZoneIndependent(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	for _, tz := range []string{"America/Los_Angeles", "Asia/Tokyo"} {
		wh := h.NewWarehouse(t)
		code, _, stderr := h.Run(t, []string{"TZ=" + tz}, fx.Args(wh, "tz-1", mon, tue)...)
		if code != 0 {
			t.Fatalf("TZ=%s: exit %d: %s", tz, code, stderr)
		}
		for ds, n := range FactSum(t, wh) {
			if want := fx.Expected.ByDate[ds].Events; n != want {
				t.Errorf("TZ=%s %s: %d events, want %d", tz, ds, n, want)
			}
		}
		// The times it records are UTC too: the log's, and the inputs'
		// modification times in the attempt record (local ones carried
		// the zone's offset).
		for _, m := range regexp.MustCompile(`"(time|mtime)":"[^"]*"`).FindAllString(stderr+string(Get(t, wh, "staging/job_id=tz-1/_attempt.json")), -1) {
			if !strings.HasSuffix(m, `Z"`) {
				t.Errorf("TZ=%s: %s, want a UTC time", tz, m)
				break
			}
		}
	}
}

func testEmptyDate(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	// Inside the horizon only by override, and no event has this date: a
	// valid publish of zeros. A day without events lands as a partition
	// of no rows; with none at all the date would be refused as not landed,
	// and so would a missing lateness partition (2026-02-28) while later
	// ones have landed: an ingestion gap.
	EmptyPartition(t, fx, "2026-02-27")
	EmptyPartition(t, fx, "2026-02-28")
	j := fx.Job(t, wh, "empty-1", "2026-02-27")
	j.AllowOutsideHorizon = true
	res := h.MustPublish(t, j)
	e := res.Entries[d("2026-02-27")]
	if e.EventCount != 0 || len(e.FactFiles) != 0 || len(e.CourseDayFiles) != 0 {
		t.Errorf("empty date entry %+v, want zero counts and empty file lists", e)
	}

	// Yesterday without events, beside a partition a producer dated after
	// today inside its lateness window: that partition is never read nor
	// still being written, so the day publishes its zeros (it was refused
	// as "still being written").
	fx = h.LoadFixture(t, "")
	EmptyPartition(t, fx, tue)
	after := dates.FromTime(Now).AddDays(1).String()
	Put(t, fx.In(), "raw/ingest_date="+after+"/part-0.parquet", Get(t, fx.In(), "raw/ingest_date="+mon+"/part-0.parquet"))
	j = fx.Job(t, h.NewWarehouse(t), "empty-2", tue)
	j.LatenessDays = 2
	res = h.MustPublish(t, j)
	if e := res.Entries[d(tue)]; e.EventCount != 0 {
		t.Errorf("%s beside a mis-dated partition: %d events, want 0", tue, e.EventCount)
	}

	// And with one event of it ingested the day before (a producer's
	// clock): counted on no date, warned of, and no sign that its own
	// partition lost events. It was refused as "arrived in other
	// partitions" by every run that also read the day before.
	fx = h.LoadFixture(t, "")
	EmptyPartition(t, fx, tue)
	tmp := filepath.Join(t.TempDir(), "early.parquet")
	if _, err := DBFor(t, fx.In()).Exec(fmt.Sprintf("COPY (SELECT * REPLACE ('ev-early-' || event_id AS event_id, event_time + INTERVAL 1 DAY AS event_time) FROM read_parquet('%s', hive_partitioning=false) WHERE event_time >= TIMESTAMPTZ '%s 12:00:00+00' LIMIT 1) TO '%s' (FORMAT parquet)",
		fx.Input("raw/ingest_date="+mon+"/part-0.parquet"), mon, tmp)); err != nil {
		t.Fatal(err)
	}
	early, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	Put(t, fx.In(), "raw/ingest_date="+mon+"/part-early.parquet", early)
	res = h.MustPublish(t, fx.Job(t, h.NewWarehouse(t), "empty-3", mon, tue))
	if e := res.Entries[d(tue)]; e.EventCount != 0 {
		t.Errorf("%s beside an event of it ingested the day before: %d events, want 0", tue, e.EventCount)
	}
}

// testUnfinishedDay: the run date is the earlier of the job's as-of date
// and the clock's date (Now, 2026-03-04). A date on or after it is refused
// (exit 2) before anything is read or written, however late the as-of date
// is set: 2026-03-04 has not ended at 06:00 UTC that day. Freshness is
// judged on that run date too.
func testUnfinishedDay(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	for _, asOf := range []string{"2026-03-04", "2026-03-05", "2099-01-01"} {
		j := fx.Job(t, wh, "unfinished-"+asOf, "2026-03-03", "2026-03-04")
		j.AsOf, j.AsOfSet, j.AllowOutsideHorizon = d(asOf), true, true
		_, err := h.Publish(t, j)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "[2026-03-04] not over on the run date 2026-03-04") {
			t.Errorf("as of %s: %v, want exit 2: 2026-03-04 not over on the run date 2026-03-04", asOf, err)
		}
	}
	if Get(t, wh, "pointer.json") != nil {
		t.Errorf("a refused publish wrote pointer.json")
	}
	// Freshness is judged on the same run date: the fixture's raw is a
	// day old on 2026-03-04, fresh, however late the as-of date is set.
	j := fx.Job(t, wh, "unfinished-fresh", "2026-03-02", "2026-03-03")
	j.AsOf, j.AsOfSet = d("2099-01-01"), true
	if _, err := h.Publish(t, j); err != nil {
		t.Errorf("as of 2099-01-01, dates before the run date 2026-03-04: %v, want published (fresh on the run date)", err)
	}
}
