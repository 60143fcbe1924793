package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBackfill(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want backfillSpec
		ok   bool
	}{
		{"10:30000000", backfillSpec{dates: 10, perDate: 30_000_000}, true},
		{"2:5000", backfillSpec{dates: 2, perDate: 5000}, true},
		{"10", backfillSpec{}, false},
		{"1:300000", backfillSpec{}, false}, // one date is no backfill
		{"10:0", backfillSpec{}, false},
		{"ten:300000", backfillSpec{}, false},
	} {
		got, err := parseBackfill(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBackfill(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestTimeLeft: only the stage's progress records that carry an estimate
// are set against the stage's end, taken from its phase record.
func TestTimeLeft(t *testing.T) {
	stderr := strings.Join([]string{
		`{"time":"2026-12-01T10:00:05Z","msg":"progress","phase":"inspect","seconds":5,"dates_done":0,"dates_total":10,"seconds_left":1}`,
		`{"time":"2026-12-01T10:01:00Z","msg":"progress","phase":"stage","seconds":50,"dates_done":0,"dates_total":10}`,
		`{"time":"2026-12-01T10:01:10Z","msg":"progress","phase":"stage","seconds":60,"dates_done":0,"dates_total":10,"seconds_left":52}`,
		`progress: stage 3/22 13% dates 0/10 ~6s left 5.3s (total 7.7s)`,
		`{"time":"2026-12-01T10:01:50Z","msg":"progress","phase":"stage","seconds":100,"dates_done":5,"dates_total":10,"seconds_left":8}`,
		`{"time":"2026-12-01T10:01:57.5Z","msg":"phase","phase":"stage","seconds":107.5}`,
	}, "\n")
	want := []string{
		"at 60s, dates 0/10: estimated 52s left, took 47.5s",
		"at 100s, dates 5/10: estimated 8s left, took 7.5s",
	}
	if got := timeLeft([]byte(stderr)); !slices.Equal(got, want) {
		t.Errorf("timeLeft:\n got %q\nwant %q", got, want)
	}
	if got := timeLeft([]byte(strings.Split(stderr, "\n")[2])); got != nil {
		t.Errorf("without the stage's end: %q, want nothing", got)
	}
}
