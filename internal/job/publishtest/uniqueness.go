package publishtest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// CheckUniqueness runs an engine's input checks on four inputs: the
// fixture, the fixture with a redelivered file in raw (repeated event ids),
// the fixture with a file of fresh events some of which lack an event_time
// or an event_id, and the duplicate-enrollment variant (one repeated pair).
// open(t, weak) opens the engine; weak makes its uniqueness hash take three
// values, so with thousands of keys distinct ones must collide and only the
// exact pass can tell. Either way the figures must be the ground truth: the
// fixture's expected.json and the added file's rows, counted here by DuckDB
// with their own UTC date arithmetic.
func CheckUniqueness(t *testing.T, open func(t *testing.T, weak bool) engine.Engine) {
	cases := []struct {
		name, variant string
		// added writes a file into raw; repeats says its ids are the
		// fixture's own (a redelivery) rather than fresh.
		added   func(t *testing.T, db *sql.DB, fx Fixture, path string)
		repeats bool
	}{
		{"clean", "", nil, false},
		{"repeated-event-ids", "", RedeliveryFile, true},
		{"null-event-ids-and-times", "", nullsFile, false},
		{"repeated-enrollment-pair", "duplicate-enrollment", nil, false},
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
			var wantNullIDs, wantNullTimes int64
			if c.added != nil {
				db := DB(t)
				path := fx.Input("raw/ingest_date=" + tue + "/part-added.parquet")
				c.added(t, db, fx, path)
				rows, err := db.Query(fmt.Sprintf(`SELECT event_id, event_time IS NULL, (DATE '1970-01-01' + CAST(floor(epoch_us(event_time) / 86400000000) AS INTEGER))::VARCHAR
					FROM read_parquet('%s') ORDER BY event_id`, path))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id, d sql.NullString
					var noTime bool
					if err := rows.Scan(&id, &noTime, &d); err != nil {
						t.Fatal(err)
					}
					if noTime {
						wantNullTimes++
					}
					if !slices.Contains(ds, d.String) {
						continue
					}
					wantEvents[dates.MustParse(d.String)]++
					switch {
					case !id.Valid:
						wantNullIDs++
					case c.repeats:
						wantIDs = append(wantIDs, id.String)
					}
				}
				rows.Close()
				if wantEvents[dates.MustParse(tue)] == fx.Expected.ByDate[dates.MustParse(tue)].Events {
					t.Fatal("the added file holds no event of the requested dates")
				}
				if !c.repeats && (wantNullIDs == 0 || wantNullTimes == 0) {
					t.Fatalf("the added file holds %d null ids and %d null times of the requested dates, want some of each", wantNullIDs, wantNullTimes)
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
				if f.NullEventIDs != wantNullIDs || f.NullEventTimes != wantNullTimes {
					t.Errorf("weak=%v: %d null ids, %d null times, want %d and %d", weak, f.NullEventIDs, f.NullEventTimes, wantNullIDs, wantNullTimes)
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

// nullsFile writes 100 fresh events into path, copied from a fixture file
// with new ids: the first 30 without an event_time, the next 20 without an
// event_id.
func nullsFile(t *testing.T, db *sql.DB, fx Fixture, path string) {
	t.Helper()
	src := fx.Input("raw/ingest_date=" + tue + "/part-0.parquet")
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT * EXCLUDE (n) REPLACE (
			CASE WHEN n <= 30 THEN NULL ELSE event_time END AS event_time,
			CASE WHEN n BETWEEN 31 AND 50 THEN NULL ELSE event_id || '-fresh' END AS event_id)
		FROM (SELECT *, row_number() OVER (ORDER BY event_id) AS n FROM read_parquet('%s', hive_partitioning=false))
		WHERE n <= 100) TO '%s' (FORMAT parquet)`, src, path)); err != nil {
		t.Fatal(err)
	}
}
