package publishtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
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
