package publishtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// rollback puts ds back to generation to, as `engagement rollback` does.
func rollback(t *testing.T, wh, jobID string, to int64, ds ...dates.Date) (pointer.Outcome, error) {
	t.Helper()
	b, store := Warehouse(wh)
	return history.Rollback{Bucket: b, Store: store, Dates: ds, To: to, JobID: jobID,
		Now: time.Date(2026, 3, 5, 6, 0, 0, 0, time.UTC), WriterVersion: "test"}.Run(t.Context())
}

// sortedRows is a table's rows as comparable text, in a fixed order.
func sortedRows(t *testing.T, wh, table string) []string {
	t.Helper()
	var out []string
	for _, r := range Visible(t, wh, table).Rows {
		out = append(out, fmt.Sprint(r...))
	}
	slices.Sort(out)
	return out
}

// testRollbackThroughReader: a rollback makes readers see exactly what
// they saw at the generation it names (rows of both tables, the entry byte
// for byte), leaves other dates alone, and can itself be rolled back. The
// two generations differ by the late event (lateness 0, then the
// allowance), so the sums come from the fixture's ground truth.
func testRollbackThroughReader(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	late := fx.Expected.LateEvents[0]
	day, other := late.EventDate, late.EventDate.AddDays(1)
	if late.EventDate.String() == tue {
		other = d(mon)
	}
	wh := h.NewWarehouse(t)
	j := fx.Job(t, wh, "rb-sameday", day.String())
	j.LatenessDays = 0
	h.MustPublish(t, j)
	g1 := LoadPointer(t, wh)
	h.MustPublish(t, fx.Job(t, wh, "rb-other", other.String()))
	atG2 := map[string][]string{}
	for _, table := range []string{engine.FactTable, engine.CourseDayTable} {
		atG2[table] = sortedRows(t, wh, table)
	}
	h.MustPublish(t, fx.Job(t, wh, "rb-restated", day.String()))
	if got, want := FactSum(t, wh)[day], fx.Expected.ByDate[day].Events; got != want {
		t.Fatalf("restated %s: %d events, want %d", day, got, want)
	}
	g3 := LoadPointer(t, wh)

	out, err := rollback(t, wh, "rb-back", 1, day)
	if err != nil {
		t.Fatalf("rollback to generation 1: %v", err)
	}
	now := LoadPointer(t, wh)
	if now.Generation != 4 || out.Pointer.Generation != 4 || now.Operation != pointer.OpRollback || now.SourceGeneration != 1 || now.UpdatedByJobID != "rb-back" {
		t.Errorf("after the rollback: generation %d, operation %q from %d by %s; want 4, rollback from 1 by rb-back",
			now.Generation, now.Operation, now.SourceGeneration, now.UpdatedByJobID)
	}
	if !pointer.SameEntry(now.Dates[day], g1.Dates[day]) {
		t.Errorf("%s after the rollback is not generation 1's entry:\n got %+v\nwant %+v", day, now.Dates[day], g1.Dates[day])
	}
	if !pointer.SameEntry(now.Dates[other], g3.Dates[other]) {
		t.Errorf("the rollback of %s changed %s", day, other)
	}
	// Readers saw generation 1's day and the untouched other date at
	// generation 2.
	for table, want := range atG2 {
		if got := sortedRows(t, wh, table); !slices.Equal(got, want) {
			t.Errorf("%s after the rollback: %d rows differ from what readers saw at generation 2 (%d rows)", table, len(got), len(want))
		}
	}
	if got, want := FactSum(t, wh)[day], fx.Expected.ByDate[day].SameDayIngestEvents; got != want {
		t.Errorf("%s after the rollback: %d events, want %d (generation 1, without the late event)", day, got, want)
	}

	// A rollback is history like any other change: roll it back.
	if _, err := rollback(t, wh, "rb-forward", 3, day); err != nil {
		t.Fatalf("rollback to generation 3: %v", err)
	}
	if got, want := FactSum(t, wh)[day], fx.Expected.ByDate[day].Events; got != want {
		t.Errorf("rolled forward to generation 3: %d events, want %d", got, want)
	}

	// Refusals change nothing and say why.
	before := Get(t, wh, "pointer.json")
	for _, tc := range []struct {
		name string
		job  string
		to   int64
		ds   []dates.Date
		code int
	}{
		{"NotAGenerationYet", "rb-x1", 9, []dates.Date{day}, exitcode.Usage},
		{"CurrentGeneration", "rb-x4", 5, []dates.Date{day}, exitcode.Usage},
		{"DateNotHeld", "rb-x2", 1, []dates.Date{other}, exitcode.Usage},
		{"JobIDTaken", "rb-back", 1, []dates.Date{day}, exitcode.AlreadyPublished},
		{"NothingToRollBack", "rb-x3", 3, []dates.Date{day}, exitcode.Usage},
	} {
		_, err := rollback(t, wh, tc.job, tc.to, tc.ds...)
		if exitcode.Code(err) != tc.code {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, exitcode.Code(err), err, tc.code)
		}
	}
	if !slices.Equal(Get(t, wh, "pointer.json"), before) {
		t.Errorf("a refused rollback changed pointer.json")
	}
}
