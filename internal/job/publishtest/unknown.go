package publishtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// UnknownLessonsCase is a hand-written staged fact table for
// Engine.UnknownLessons, with its answer written out by hand.
type UnknownLessonsCase struct {
	Warehouse storage.Bucket
	Staged    engine.Staged
	Dates     []dates.Date
	Want      map[dates.Date][]gate.LessonCount
}

// factRow is one staged fact row; lesson "" is a null lesson_id and
// manifest "" a null manifest_id (an unknown lesson).
type factRow struct {
	lesson, manifest string
	events           int64
}

// NewUnknownLessonsCase writes the case's fact files into a temp warehouse.
//
// 2026-03-02, two files: a matched lesson with the most events (never
// listed); z-high 30+20 across both files; four ties at 12 (A-tie, a-tie,
// b-tie bytewise, then the null lesson_id last); n01..n20 at 5 each, of which
// only n01..n15 fit in the 20. 2026-03-03: one unknown lesson, 3 events in
// two rows. 2026-03-04: matched rows only. 2026-03-05: no files.
func NewUnknownLessonsCase(t *testing.T) UnknownLessonsCase {
	t.Helper()
	dir := t.TempDir()
	mon, tue, wed, thu := dates.MustParse("2026-03-02"), dates.MustParse("2026-03-03"), dates.MustParse("2026-03-04"), dates.MustParse("2026-03-05")
	var monB []factRow
	for i := 20; i >= 1; i-- { // written out of order: the order is the engine's
		monB = append(monB, factRow{fmt.Sprintf("n%02d", i), "", 5})
	}
	files := []struct {
		d    dates.Date
		name string
		rows []factRow
	}{
		{mon, "a.parquet", []factRow{{"m1", "dim", 100}, {"z-high", "", 30}, {"b-tie", "", 12}, {"", "", 7}, {"a-tie", "", 12}}},
		{mon, "b.parquet", append([]factRow{{"z-high", "", 20}, {"", "", 5}, {"A-tie", "", 12}, {"m2", "dim", 40}}, monB...)},
		{tue, "a.parquet", []factRow{{"only", "", 1}, {"only", "", 2}, {"m1", "dim", 9}}},
		{wed, "a.parquet", []factRow{{"m1", "dim", 4}}},
	}
	c := UnknownLessonsCase{Warehouse: Bucket(t, dir), Dates: []dates.Date{mon, tue, wed, thu},
		Staged: engine.Staged{FactFiles: map[dates.Date][]pointer.File{}}}
	db := DB(t)
	for i, f := range files {
		rel := fmt.Sprintf("staging/job_id=unknown/%s/event_date=%s/%s", engine.FactTable, f.d, f.name)
		abs := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		var values []string
		for j, r := range f.rows {
			values = append(values, fmt.Sprintf("('learner-%d-%d', %s, %s, %d::BIGINT)", i, j, sqlString(r.lesson), sqlString(r.manifest), r.events))
		}
		q := fmt.Sprintf("COPY (SELECT * FROM (VALUES %s) AS t(learner_key, lesson_id, manifest_id, event_count)) TO '%s' (FORMAT parquet)",
			strings.Join(values, ", "), abs)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		c.Staged.FactFiles[f.d] = append(c.Staged.FactFiles[f.d], pointer.File{Path: rel, Rows: int64(len(f.rows))})
	}
	lc := func(id string, n int64) gate.LessonCount {
		if id == "" {
			return gate.LessonCount{EventCount: n}
		}
		return gate.LessonCount{LessonID: &id, EventCount: n}
	}
	want := []gate.LessonCount{lc("z-high", 50), lc("A-tie", 12), lc("a-tie", 12), lc("b-tie", 12), lc("", 12)}
	for i := 1; i <= 15; i++ {
		want = append(want, lc(fmt.Sprintf("n%02d", i), 5))
	}
	c.Want = map[dates.Date][]gate.LessonCount{
		mon: want,
		tue: {lc("only", 3)},
		wed: {},
		thu: {},
	}
	return c
}

func sqlString(s string) string {
	if s == "" {
		return "NULL::VARCHAR"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// CheckUnknownLessons fails t unless got is c.Want, date by date, in order.
func (c UnknownLessonsCase) CheckUnknownLessons(t *testing.T, engineName string, got map[dates.Date][]gate.LessonCount) {
	t.Helper()
	if len(got) != len(c.Want) {
		t.Errorf("%s: unknown lessons for %d dates, want %d", engineName, len(got), len(c.Want))
	}
	for _, d := range c.Dates {
		if g, w := lessons(got[d]), lessons(c.Want[d]); g != w {
			t.Errorf("%s %s: unknown lessons\ngot  %s\nwant %s", engineName, d, g, w)
		}
		if got[d] == nil {
			t.Errorf("%s %s: nil list, want an empty one", engineName, d)
		}
	}
}

func testUnknownLessonSurvives(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "unknown-1", mon, tue))
	unknownID := fx.Expected.UnknownLessonID
	var unknownEvents = map[dates.Date]int64{}
	for _, r := range Rows(Visible(t, wh, engine.FactTable)) {
		if r["lesson_id"] != unknownID {
			continue
		}
		if r["manifest_id"] != nil || r["lesson_title"] != nil {
			t.Errorf("unknown lesson row has manifest_id %v, lesson_title %v; want both null", r["manifest_id"], r["lesson_title"])
		}
		unknownEvents[dateOf(t, r["event_date"])] += r["event_count"].(int64)
	}
	cd := VisibleCourseDay(t, wh)
	for _, ds := range []string{mon, tue} {
		want := fx.Expected.ByDate[d(ds)].Unknown
		if want == 0 {
			t.Fatalf("fixture has no unknown lesson on %s; the test would prove nothing", ds)
		}
		if unknownEvents[d(ds)] != want {
			t.Errorf("%s: fact rows for %s carry %d events, want %d", ds, unknownID, unknownEvents[d(ds)], want)
		}
		var got int64
		for _, row := range cd[d(ds)] {
			got += row.Unknown
		}
		if got != want {
			t.Errorf("%s: course_day unknown_lesson_count sum %d, want %d", ds, got, want)
		}
	}
}

func testCapBlocksPointer(t *testing.T, h Harness) {
	good, bad := h.LoadFixture(t, ""), h.LoadFixture(t, "over-cap")
	wh := h.NewWarehouse(t)
	j := good.Job(t, wh, "cap-good", mon, tue)
	// The cap sits between the two fixtures' rates, so each side of it is tested.
	for _, ds := range []string{mon, tue} {
		g, b := good.Expected.ByDate[d(ds)], bad.Expected.ByDate[d(ds)]
		gr, br := gate.Rate(g.Unknown, g.Events), gate.Rate(b.Unknown, b.Events)
		if !(gr <= j.UnknownCap && br > j.UnknownCap) {
			t.Fatalf("%s: fixture rates %.4f (good) and %.4f (over-cap) do not straddle the cap %.4f", ds, gr, br, j.UnknownCap)
		}
	}
	h.MustPublish(t, j)
	before := Get(t, wh, "pointer.json")
	_, err := h.Publish(t, bad.Job(t, wh, "cap-bad", mon, tue))
	if exitcode.Code(err) != exitcode.GateRejected {
		t.Fatalf("over-cap publish: exit %d (%v), want %d", exitcode.Code(err), err, exitcode.GateRejected)
	}
	if !strings.Contains(err.Error(), gate.CheckUnknownLessonCap) {
		t.Errorf("error %q does not name %s", err, gate.CheckUnknownLessonCap)
	}
	if after := Get(t, wh, "pointer.json"); !bytes.Equal(before, after) {
		t.Errorf("pointer.json changed after a rejected publish")
	}
	checkCapRejection(t, Get(t, wh, warehouse.RejectionPath("cap-bad")), bad.Expected)
	if sum := FactSum(t, wh); sum[d(mon)] != good.Expected.ByDate[d(mon)].Events {
		t.Errorf("visible %s sum %d, want the good publish's %d", mon, sum[d(mon)], good.Expected.ByDate[d(mon)].Events)
	}
}

// checkCapRejection checks the over-cap fixture's rejection record against
// the generator's ground truth: every unknown event of the fixture carries
// its one unknown lesson id, so each date's top list is that id with the
// date's unknown count.
func checkCapRejection(t *testing.T, record []byte, exp gen.Expected) {
	t.Helper()
	if record == nil {
		t.Fatalf("no rejection record at %s", warehouse.RejectionPath("cap-bad"))
	}
	var rej job.Rejection
	if err := json.Unmarshal(record, &rej); err != nil {
		t.Fatalf("rejection record: %v", err)
	}
	if !rej.RejectedAt.Equal(Now) {
		t.Errorf("rejected_at %v, want the injected clock %v", rej.RejectedAt, Now)
	}
	if rej.ManifestID != exp.ManifestID || rej.EnrollmentSnapshotID != exp.EnrollmentSnapshotID {
		t.Errorf("pins %q, %q; want %q, %q", rej.ManifestID, rej.EnrollmentSnapshotID, exp.ManifestID, exp.EnrollmentSnapshotID)
	}
	if rej.TopUnknownLessonsError != "" {
		t.Errorf("top_unknown_lessons_error %q", rej.TopUnknownLessonsError)
	}
	if len(rej.TopUnknownLessons) != 2 {
		t.Errorf("top unknown lessons for %d dates, want 2 (%s, %s): %v", len(rej.TopUnknownLessons), mon, tue, rej.TopUnknownLessons)
	}
	for _, ds := range []string{mon, tue} {
		want := exp.ByDate[d(ds)].Unknown
		got := rej.TopUnknownLessons[ds]
		if want == 0 || len(got) != 1 || got[0].LessonID == nil || *got[0].LessonID != exp.UnknownLessonID || got[0].EventCount != want {
			t.Errorf("%s: top unknown lessons %s, want [%s %d]", ds, lessons(got), exp.UnknownLessonID, want)
		}
	}
}

func lessons(l []gate.LessonCount) string {
	var parts []string
	for _, c := range l {
		parts = append(parts, fmt.Sprintf("%s %d", c.Lesson(), c.EventCount))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
