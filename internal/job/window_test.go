package job

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// TestHorizonEndsYesterday: the horizon counts back from the newest ingest
// date that has ended, never today's, which is still being written. A
// daily run at 06:00 restating all H dates before it then restates each
// date once more after its last lateness partition has ended.
func TestHorizonEndsYesterday(t *testing.T) {
	today := dates.MustParse("2026-03-10")
	day := func(n int) dates.Date { return today.AddDays(n) }
	span := func(from, to int) []dates.Date {
		var out []dates.Date
		for n := from; n <= to; n++ {
			out = append(out, day(n))
		}
		return out
	}
	tests := []struct {
		name    string
		landed  []dates.Date
		horizon int
		dates   []dates.Date
		refused string // "" when the dates are inside
	}{
		// Counted from today's open partition, the horizon would be
		// today-1..today and the oldest date refused.
		{"today landed: the H dates before it", span(-5, 0), 2, span(-2, -1), ""},
		{"today landed: production's three", span(-5, 0), 3, span(-3, -1), ""},
		{"today landed: one past", span(-5, 0), 2, span(-3, -1), "[2026-03-07] outside the restatement horizon 2026-03-08..2026-03-09 (newest ended ingest_date 2026-03-09: today's is still being written"},
		{"yesterday newest", span(-5, -1), 2, span(-2, -1), ""},
		{"yesterday newest: one past", span(-5, -1), 2, span(-3, -1), "[2026-03-07] outside the restatement horizon 2026-03-08..2026-03-09 (newest ingest_date 2026-03-09,"},
		{"a date after the newest", span(-5, -2), 2, span(-2, -1), "[2026-03-09] outside the restatement horizon 2026-03-07..2026-03-08 (newest ingest_date 2026-03-08,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := config.Job{Raw: "raw", Dates: tc.dates, RestatementHorizonDays: tc.horizon}
			_, _, err := checkDates(job, tc.landed, today, slog.New(slog.DiscardHandler))
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("accepted; want %q", tc.refused)
			case tc.refused != "" && (!strings.Contains(err.Error(), tc.refused) || exitcode.Code(err) != exitcode.Usage):
				t.Fatalf("refused with %v (exit %d); want exit 2 with %q", err, exitcode.Code(err), tc.refused)
			}
		})
	}
}
