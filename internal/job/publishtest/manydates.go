package publishtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gen"
)

// ManyDates writes a raw input of 25 daily ingest partitions from
// 2026-03-01 and returns the spec inspecting it for the 20 dates
// 2026-03-02 to 2026-03-21 (pins from fx), for an engine's figures past
// the dates it counts one by one. Each ingest partition I holds one event
// of I (own), one of I-1 (late, inside latenessDays 2), one of I-3 (past
// it) and one of I+1 (ingested early), so every one of those dates has the
// figures CheckManyDates expects, whichever of them are requested, and the
// first and last partitions hold events of dates before and after them.
// Each partition also holds an event of a year before I and one of a year
// after: far outside every window, stray whatever the request.
func ManyDates(t *testing.T, fx Fixture) engine.Spec {
	t.Helper()
	dir := t.TempDir()
	first := dates.MustParse("2026-03-01")
	var ds []dates.Date
	for i := 1; i <= 20; i++ {
		ds = append(ds, first.AddDays(i))
	}
	db := DB(t)
	for p := 0; p < manyPartitions; p++ {
		ingest := first.AddDays(p)
		part := filepath.Join(dir, "raw", "ingest_date="+ingest.String())
		if err := os.MkdirAll(part, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT 'e-%[1]s-' || k AS event_id, 'u1' AS learner_key, 'L1' AS lesson_id, 'A' AS course_id,
			TIMESTAMPTZ '%[1]s 12:00:00+00' - to_days(k) AS event_time FROM (VALUES (0), (1), (3), (-1), (%[3]d), (-%[3]d)) v(k))
			TO '%[2]s' (FORMAT parquet)`, ingest, filepath.Join(part, "part-0.parquet"), farDays)); err != nil {
			t.Fatal(err)
		}
	}
	spec := engine.Spec{
		JobID: "many-dates", Dates: ds, IngestFrom: first, IngestTo: first.AddDays(manyPartitions - 1), LatenessDays: 2,
		Raw: filepath.Join(dir, "raw"), Lessons: fx.Input("lessons"), Enrollments: fx.Input("enrollments"),
		ManifestID: gen.ManifestID, EnrollmentSnapshotID: gen.EnrollmentSnapshotID, TargetFileBytes: engine.DefaultTargetFileBytes,
	}
	return WithInputs(t, spec)
}

// manyPartitions is how many daily ingest partitions ManyDates writes.
const manyPartitions = 25

// farDays is how far before and after its partition's date ManyDates
// writes the events outside every window.
const farDays = 366

// CheckManyDates compares in's per-date figures with ManyDates' hand counts
// for the requested dates ds: two events each (its own partition's and the
// next one's), one late, one early, one in its own partition, and no
// figure for a date not requested.
func CheckManyDates(t *testing.T, ds []dates.Date, in engine.Inputs) {
	t.Helper()
	once, twice := map[dates.Date]int64{}, map[dates.Date]int64{}
	for _, d := range ds {
		once[d], twice[d] = 1, 2
	}
	for _, f := range []struct {
		name      string
		got, want map[dates.Date]int64
	}{{"events", in.Events, twice}, {"late", in.Late, once}, {"early", in.Early, once}, {"own", in.Own, once}} {
		if !maps.Equal(f.got, f.want) {
			t.Errorf("%s by date %v, want %v", f.name, f.got, f.want)
		}
	}
	// Stray: the events of dates not requested outside their partition's
	// own window, by ManyDates' rule: each partition's event of I-3 (past
	// latenessDays 2) and of I+1 (early), when that date is not in ds, and
	// the two a year away.
	var stray int64
	first := dates.MustParse("2026-03-01")
	for p := 0; p < manyPartitions; p++ {
		for _, k := range []int{3, -1, farDays, -farDays} {
			if !slices.Contains(ds, first.AddDays(p-k)) {
				stray++
			}
		}
	}
	if in.Figures.StrayEvents != stray {
		t.Errorf("stray events %d, want %d", in.Figures.StrayEvents, stray)
	}
}
