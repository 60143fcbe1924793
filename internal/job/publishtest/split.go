package publishtest

import (
	"fmt"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/job"
)

// testFileCountFollowsBytes shrinks the target file size so a fixture date
// must be split: the count follows the bytes, and the split neither loses
// nor repeats a fact row. Then a target between the two dates' estimated
// bytes splits one date and not the other, in the same write.
func testFileCountFollowsBytes(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	j := fx.Job(t, wh, "small-files", mon, tue)
	j.TargetFileBytes = 2 << 10
	res := h.MustPublish(t, j)
	rows := Rows(Visible(t, wh, engine.FactTable))
	checkSplit(t, fx, wh, res, j.TargetFileBytes, map[string]int{mon: 2, tue: 2})

	// The estimate PlannedFiles makes of each date, from the visible rows
	// (the same widths the engines sum: the keys' bytes).
	figs := map[string]engine.DateFigures{}
	for _, r := range rows {
		ds := dateOf(t, r["event_date"]).String()
		f := figs[ds]
		f.FactRows++
		for _, k := range []string{"learner_key", "lesson_id", "course_id"} {
			if v, ok := r[k].(string); ok {
				f.FactWidth += int64(len(v))
			}
		}
		figs[ds] = f
	}
	est := map[string]int64{}
	for ds, f := range figs {
		est[ds] = engine.PlannedBytes(engine.FactTable, f)
	}
	big, small := mon, tue
	if est[tue] > est[mon] {
		big, small = tue, mon
	}
	if est[big] == est[small] {
		t.Fatalf("the fixture's dates estimate alike (%v): no target splits one alone", est)
	}
	wh2 := h.NewWarehouse(t)
	j2 := fx.Job(t, wh2, "mixed-files", mon, tue)
	j2.TargetFileBytes = est[small]
	checkSplit(t, fx, wh2, h.MustPublish(t, j2), j2.TargetFileBytes, map[string]int{big: 2, small: 1})
}

// checkSplit: each date of res has at least minFiles[date] fact files,
// exactly one when that is 1, none empty, their rows the generator's, no
// fact row twice, and each date's events the generator's.
func checkSplit(t *testing.T, fx Fixture, wh string, res job.Result, target int64, minFiles map[string]int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range Rows(Visible(t, wh, engine.FactTable)) {
		k := fmt.Sprint(r["learner_key"], "|", r["lesson_id"], "|", r["event_date"])
		if seen[k] {
			t.Fatalf("fact row %s appears twice after the split", k)
		}
		seen[k] = true
	}
	for ds, want := range minFiles {
		files := res.Entries[d(ds)].FactFiles
		var total, rowSum int64
		for _, f := range files {
			total += f.Bytes
			rowSum += f.Rows
			if f.Rows == 0 {
				t.Errorf("%s: empty file %s", ds, f.Path)
			}
		}
		if len(files) < want || (want == 1 && len(files) != 1) {
			t.Errorf("%s: %d fact files of %d bytes at a %d-byte target, want %d", ds, len(files), total, target, want)
		}
		if rows := fx.Expected.ByDate[d(ds)].FactRows; rowSum != rows {
			t.Errorf("%s: listed rows %d, want %d", ds, rowSum, rows)
		}
	}
	for ds, n := range FactSum(t, wh) {
		if n != fx.Expected.ByDate[ds].Events {
			t.Errorf("%s: %d events after the split, want %d", ds, n, fx.Expected.ByDate[ds].Events)
		}
	}
}
