package crashtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// TestInvariantsCatchDamage keeps the crash matrix honest: each kind of
// damage a crash could do must be reported as a violation by the same
// checks the matrix runs after every kill.
func TestInvariantsCatchDamage(t *testing.T) {
	db := publishtest.DB(t)
	writePointer := func(t *testing.T, w *world, p pointer.Pointer) {
		b, err := pointer.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.wh, "pointer.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, w *world, p pointer.Pointer)
		want   string
	}{
		{"torn pointer", func(t *testing.T, w *world, p pointer.Pointer) {
			b := publishtest.FileBytes(t, filepath.Join(w.wh, "pointer.json"))
			os.WriteFile(filepath.Join(w.wh, "pointer.json"), b[:len(b)/2], 0o644)
		}, "does not parse"},
		{"generation skipped", func(t *testing.T, w *world, p pointer.Pointer) {
			p.Generation += 2
			p.Parent.Generation += 2
			writePointer(t, w, p)
		}, "want the old"},
		{"truncated file", func(t *testing.T, w *world, p pointer.Pointer) {
			f := p.Dates[dates.MustParse(mon)].FactFiles[0]
			os.Truncate(warehouse.Abs(w.wh, f.Path), f.Bytes/2)
		}, "bytes, listed"},
		{"missing file", func(t *testing.T, w *world, p pointer.Pointer) {
			os.Remove(warehouse.Abs(w.wh, p.Dates[dates.MustParse(tue)].CourseDayFiles[0].Path))
		}, "listed file"},
		{"two jobs in one date", func(t *testing.T, w *world, p pointer.Pointer) {
			// The newer job's entry with the older job's course_day file.
			e := p.Dates[dates.MustParse(mon)]
			e.CourseDayFiles = []pointer.File{{Path: strings.Replace(e.CourseDayFiles[0].Path, e.JobID, "publish-001", 1),
				Bytes: e.CourseDayFiles[0].Bytes, Rows: e.CourseDayFiles[0].Rows}}
			p.Dates[dates.MustParse(mon)] = e
			writePointer(t, w, p)
		}, "outside its staging prefix"},
		{"failed gate", func(t *testing.T, w *world, p pointer.Pointer) {
			rel := p.Dates[dates.MustParse(mon)].GateReport
			b := publishtest.FileBytes(t, warehouse.Abs(w.wh, rel))
			os.WriteFile(warehouse.Abs(w.wh, rel), []byte(strings.Replace(string(b), `"passed": true`, `"passed": false`, 1)), 0o644)
		}, "gate report"},
		{"wrong sum", func(t *testing.T, w *world, p pointer.Pointer) {
			// A file of the right size and rows whose figures are another
			// date's: only the visible sums can tell.
			m, u := p.Dates[dates.MustParse(mon)], p.Dates[dates.MustParse(tue)]
			m.CourseDayFiles, u.CourseDayFiles = u.CourseDayFiles, m.CourseDayFiles
			p.Dates[dates.MustParse(mon)], p.Dates[dates.MustParse(tue)] = m, u
			writePointer(t, w, p)
		}, "visible"},
		{"raw touched", func(t *testing.T, w *world, p pointer.Pointer) {
			os.WriteFile(filepath.Join(w.fx.Dir, "raw", "ingest_date="+mon, "extra.txt"), []byte("x"), 0o644)
		}, "input tree changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, publishtest.LoadFixture(t, ""), db)
			for range 2 {
				if _, bad := w.publish("publish", []string{mon, tue}); len(bad) > 0 {
					t.Fatal(bad)
				}
			}
			before := w.snapshot()
			_, clean := w.checkAfterKill(before, "nobody", nil)
			if len(clean) > 0 {
				t.Fatalf("violations before any damage: %v", clean)
			}
			tc.damage(t, w, before.ptr)
			_, bad := w.checkAfterKill(before, "nobody", nil)
			if !strings.Contains(strings.Join(bad, "\n"), tc.want) {
				t.Errorf("violations %q do not report %q", bad, tc.want)
			}
		})
	}
}
