package job

import (
	"bytes"
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

// TestAsOfAfterToday: an as-of date after today (UTC) cannot make a day be
// over; the run date is today, and the run says so rather than replace the
// date without a word. One before today is the run date, unwarned.
func TestAsOfAfterToday(t *testing.T) {
	today := dates.MustParse("2026-03-10")
	for _, tc := range []struct {
		asOf   string
		run    string
		warned bool
	}{
		{"2030-01-01", "2026-03-10", true},
		{"2026-03-08", "2026-03-08", false},
		{"2026-03-10", "2026-03-10", false},
	} {
		t.Run(tc.asOf, func(t *testing.T) {
			var logs bytes.Buffer
			job := config.Job{Raw: "raw", Dates: []dates.Date{today.AddDays(-3)}, RestatementHorizonDays: 3,
				AsOf: dates.MustParse(tc.asOf), AsOfSet: true}
			run, _, err := checkDates(job, []dates.Date{today.AddDays(-4), today.AddDays(-3), today.AddDays(-2)}, today, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if run.String() != tc.run {
				t.Errorf("run date %s, want %s", run, tc.run)
			}
			if warned := strings.Contains(logs.String(), "the as-of date is after today"); warned != tc.warned {
				t.Errorf("warned %v, want %v: %s", warned, tc.warned, logs.String())
			}
		})
	}
}
