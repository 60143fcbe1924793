package duckdb

import (
	"math"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"5.5 GiB", 5905580032, false},
		{"953.6 MiB", 999922073, false},
		{"97.6 KiB", 99942, false},
		{"512 bytes", 512, false},
		{"2GB", 2000000000, false},
		{"1.5 TiB", 1649267441664, false},
		{"16383.9 PiB", math.MaxInt64, false},
		{"-1 GiB", 0, true},
		{"lots", 0, true},
		{"", 0, true},
	} {
		got, ok := parseBytes(tc.in)
		if ok == tc.bad || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, readable %v", tc.in, got, ok, tc.want, !tc.bad)
		}
	}
}

// TestKeptFits: the design day's 60M events' hashes are kept in Go at 6GB
// and 4GB, not at 1.5GB; the ten-date backfill's 300M events take the hash
// table at 4GB, its one date (30M) Go.
func TestKeptFits(t *testing.T) {
	for _, tc := range []struct {
		rows, limit int64
		want        bool
	}{
		{60e6, 6e9, true},
		{60e6, 4e9, true},
		{60e6, 2e9, true},
		{60e6, 1.5e9, false},
		{300e6, 4e9, false},
		{30e6, 4e9, true},
		{0, 0, true},
	} {
		if got := keptFits(tc.rows, tc.limit); got != tc.want {
			t.Errorf("keptFits(%d rows, %d bytes) = %v, want %v", tc.rows, tc.limit, got, tc.want)
		}
	}
}
