package job_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestMissedRunWarned plays the fixture's daily cadence (horizon 2,
// lateness 1) at 06:00 UTC, when the run day's partition has begun to
// land. With every run, each date's last publish reads its lateness
// partition and nothing is warned of. With the 2026-03-03 run missed,
// 2026-03-01 leaves the horizon as the 03-02 run read it (its late events,
// in partition 03-02, never counted), and the 03-04 run says so, naming
// what that run read: not the open partition of its run day, which its
// record lists as landed but its window left out.
func TestMissedRunWarned(t *testing.T) {
	const warning = "dates left the restatement horizon before a publish read every partition of their lateness window"
	day := func(d int) time.Time { return time.Date(2026, 3, d, 6, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		runs []int // the run days, each publishing the two days before it (one on 03-02)
		// flush: after the run of this day, a late flush lands a file of
		// 03-01's events in partition 03-02, which that run had read.
		flush int
		want  string
		days  []string // the last run's Unsettled: what its document and metrics carry
	}{
		{"every run", []int{2, 3, 4}, 0, "", nil},
		{"the 03-03 run missed", []int{2, 4}, 0, "2026-03-01 (job run-02 did not read ingest_date 2026-03-02)", []string{"2026-03-01"}},
		// Every run made, but 03-01's last publish (run-03) read 03-02
		// before the late file landed, and 03-01 then left the horizon.
		{"a late flush into a partition read", []int{2, 3, 4}, 3,
			"2026-03-01 (job run-03 read ingest_date 2026-03-02 before it changed: part-late.parquet added)", []string{"2026-03-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, "")
			wh := t.TempDir()
			// The fixture's raw as it had landed by each run: partitions
			// up to the run day's, which is still being written.
			raw := filepath.Join(fx.Dir, "raw")
			held := t.TempDir()
			for _, p := range []string{"ingest_date=2026-03-02", "ingest_date=2026-03-03"} {
				if err := os.Rename(filepath.Join(raw, p), filepath.Join(held, p)); err != nil {
					t.Fatal(err)
				}
			}
			var last string
			var res job.Result
			for _, run := range tc.runs {
				for _, p := range []string{"ingest_date=2026-03-02", "ingest_date=2026-03-03"} {
					if p <= "ingest_date="+day(run).Format(time.DateOnly) {
						_ = os.Rename(filepath.Join(held, p), filepath.Join(raw, p))
					}
				}
				ds := []string{day(run - 2).Format(time.DateOnly), day(run - 1).Format(time.DateOnly)}
				if run == 2 {
					ds = ds[1:]
				}
				e, err := duckdb.Open(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var logs bytes.Buffer
				wb, store := publishtest.Warehouse(wh)
				p := &job.Publisher{Engine: e, Warehouse: wb, Store: store, Inputs: publishtest.Source(),
					Log: slog.New(slog.NewTextHandler(&logs, nil)), Clock: func() time.Time { return day(run) }}
				res, err = p.Publish(t.Context(), fx.Job(t, wh, fmt.Sprintf("run-%02d", run), ds...))
				e.Close()
				if err != nil {
					t.Fatalf("run of %s: %v\n%s", day(run).Format(time.DateOnly), err, logs.String())
				}
				last = logs.String()
				if run == tc.flush {
					b, err := os.ReadFile(filepath.Join(raw, "ingest_date=2026-03-01", "part-0.parquet"))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(raw, "ingest_date=2026-03-02", "part-late.parquet"), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !res.UnsettledChecked || !slices.Equal(dates.Strings(res.Unsettled), tc.days) {
				t.Errorf("Unsettled = %v (checked %v), want %v", res.Unsettled, res.UnsettledChecked, tc.days)
			}
			switch {
			case tc.want == "" && strings.Contains(last, warning):
				t.Errorf("warned with every run made:\n%s", last)
			case tc.want != "" && !strings.Contains(last, tc.want):
				t.Errorf("the last run did not warn of %q:\n%s", tc.want, last)
			}
		})
	}
}
