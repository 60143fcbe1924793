package publishtest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// CheckUniqueness runs an engine's input checks on three inputs: the
// fixture, the fixture with a redelivered file in raw (repeated event ids)
// and the duplicate-enrollment variant (one repeated pair). open(t, weak)
// opens the engine; weak makes its uniqueness hash take three values, so
// with thousands of keys distinct ones must collide and only the exact pass
// can tell. Either way the figures must be the ground truth: the fixture's
// expected.json and the redelivered file's rows, counted here by DuckDB
// with their own UTC date arithmetic.
func CheckUniqueness(t *testing.T, open func(t *testing.T, weak bool) engine.Engine) {
	cases := []struct {
		name, variant string
		redelivered   bool
	}{
		{"clean", "", false},
		{"repeated-event-ids", "", true},
		{"repeated-enrollment-pair", "duplicate-enrollment", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := LoadFixture(t, c.variant)
			ds := []string{mon, tue}
			wantEvents := map[dates.Date]int64{}
			for _, d := range ds {
				wantEvents[dates.MustParse(d)] = fx.Expected.ByDate[dates.MustParse(d)].Events
			}
			var wantIDs []string
			if c.redelivered {
				db := DB(t)
				path := fx.Input("raw/ingest_date=" + tue + "/part-redelivered.parquet")
				RedeliveryFile(t, db, fx, path)
				rows, err := db.Query(fmt.Sprintf(`SELECT event_id, (DATE '1970-01-01' + CAST(floor(epoch_us(event_time) / 86400000000) AS INTEGER))::VARCHAR
					FROM read_parquet('%s') ORDER BY event_id`, path))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id, d string
					if err := rows.Scan(&id, &d); err != nil {
						t.Fatal(err)
					}
					if slices.Contains(ds, d) {
						wantIDs = append(wantIDs, id)
						wantEvents[dates.MustParse(d)]++
					}
				}
				rows.Close()
				if len(wantIDs) == 0 {
					t.Fatal("the redelivered file holds no event of the requested dates")
				}
			}
			wantPairs := int64(fx.Expected.Defects["duplicate_enrollment_pairs"])
			spec := Listed(t, fx.Job(t, t.TempDir(), "uniqueness", ds...))
			for _, weak := range []bool{false, true} {
				in, err := open(t, weak).Inspect(context.Background(), spec)
				if err != nil {
					t.Fatalf("weak=%v: %v", weak, err)
				}
				f := in.Figures
				if f.DuplicateEventIDs != int64(len(wantIDs)) {
					t.Errorf("weak=%v: %d repeated event ids, want %d", weak, f.DuplicateEventIDs, len(wantIDs))
				}
				if want := wantIDs[:min(5, len(wantIDs))]; !slices.Equal(f.DuplicateEventIDSample, want) {
					t.Errorf("weak=%v: repeated id sample %q, want %q", weak, f.DuplicateEventIDSample, want)
				}
				if f.NullEventIDs != 0 || f.NullEventTimes != 0 {
					t.Errorf("weak=%v: %d null ids, %d null times, want none", weak, f.NullEventIDs, f.NullEventTimes)
				}
				for d, n := range wantEvents {
					if in.Events[d] != n {
						t.Errorf("weak=%v: %s: %d events, want %d", weak, d, in.Events[d], n)
					}
				}
				if f.EnrollmentRows != int64(fx.Expected.EnrollmentRowsInPin) {
					t.Errorf("weak=%v: %d enrollment rows, want %d", weak, f.EnrollmentRows, fx.Expected.EnrollmentRowsInPin)
				}
				if f.DuplicateEnrollCount != wantPairs || int64(len(f.DuplicateEnrollments)) != wantPairs {
					t.Errorf("weak=%v: %d repeated pairs (sample %q), want %d", weak, f.DuplicateEnrollCount, f.DuplicateEnrollments, wantPairs)
				}
			}
		})
	}
}
