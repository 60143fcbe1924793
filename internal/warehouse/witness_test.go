package warehouse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestWitness: an entry agrees with what its job staged only when the
// gate passed it (review CT: a rejected job's entry, its figures and files
// its own, was rolled back to with exit 0), its figures are the gate
// report's, its pins the attempt's, and its files its own, of the sizes
// and rows it lists.
func TestWitness(t *testing.T) {
	day := dates.MustParse("2026-03-02")
	const job = "j-1"
	fact := StagingDir(job) + "/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"
	cd := StagingDir(job) + "/course_day/event_date=2026-03-02/part-00000.parquet"
	for _, tc := range []struct {
		name  string
		edit  func(dir string, r *gate.Report, e *pointer.DateEntry)
		says  string // "" when it agrees
		fails bool   // cannot tell: an error
	}{
		{"as staged", func(string, *gate.Report, *pointer.DateEntry) {}, "", false},
		{"gate rejected it", func(_ string, r *gate.Report, _ *pointer.DateEntry) {
			r.Passed = false
		}, "its gate report staging/job_id=j-1/_gate.json says the gate rejected job j-1", false},
		{"a rejection record", func(dir string, _ *gate.Report, _ *pointer.DateEntry) {
			write(t, dir, RejectionPath(job), []byte("{}"))
		}, "job j-1 was rejected (rejections/job_id=j-1.json)", false},
		{"a figure", func(_ string, _ *gate.Report, e *pointer.DateEntry) { e.EventCount = 11 }, "event_count 11, its gate report 10", false},
		{"a pin", func(_ string, _ *gate.Report, e *pointer.DateEntry) { e.ManifestID = "m-2" }, `manifest_id "m-2", its attempt record "m-1"`, false},
		{"another date's file", func(_ string, _ *gate.Report, e *pointer.DateEntry) {
			e.FactFiles[0].Path = strings.Replace(fact, "2026-03-02", "2026-03-01", 1)
		}, "is not a fact_lesson_engagement file of 2026-03-02 staged by job j-1", false},
		{"a file's rows", func(dir string, _ *gate.Report, _ *pointer.DateEntry) {
			write(t, dir, fact, pointertest.ParquetLike(3, 6))
		}, "part-00000.parquet holds 6 rows, the pointer recorded 5", false},
		{"no attempt record", func(dir string, _ *gate.Report, _ *pointer.DateEntry) {
			if err := os.Remove(filepath.Join(dir, AttemptPath(job))); err != nil {
				t.Fatal(err)
			}
		}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := gate.Report{JobID: job, Passed: true, Checks: []gate.Check{
				{Name: gate.CheckUnknownLessonCap, Date: day.String(), Passed: true, Figures: map[string]any{"event_count": 10, "unknown_lesson_count": 1, "rate": 0.1}},
				{Name: gate.CheckDatesStaged, Date: day.String(), Passed: true, Figures: map[string]any{"fact_rows": 5, "course_day_rows": 2}},
			}}
			e := pointer.DateEntry{JobID: job, ManifestID: "m-1", EnrollmentSnapshotID: "e-1", EventCount: 10, UnknownLessonCount: 1, UnknownLessonRate: 0.1,
				FactFiles: []pointer.File{{Path: fact, Bytes: 18, Rows: 5}}, CourseDayFiles: []pointer.File{{Path: cd, Bytes: 18, Rows: 2}}, GateReport: GatePath(job)}
			write(t, dir, fact, pointertest.ParquetLike(3, 5))
			write(t, dir, cd, pointertest.ParquetLike(3, 2))
			write(t, dir, AttemptPath(job), []byte(`{"manifest_id": "m-1", "enrollment_snapshot_id": "e-1"}`))
			tc.edit(dir, &r, &e)
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, GatePath(job), data)
			why, err := Witness(local.New(dir, local.Options{}))(t.Context(), day, e)
			switch {
			case tc.fails && err == nil:
				t.Fatalf("told %q, want an error", why)
			case !tc.fails && err != nil:
				t.Fatal(err)
			case !tc.fails && (why == "") != (tc.says == "") || !strings.Contains(why, tc.says):
				t.Errorf("told %q, want %q", why, tc.says)
			}
		})
	}
}

func write(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
