package duckdb

import (
	"fmt"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
)

// TestCopyBatches: every date once, in order, one batch for each four dates
// begun (a short day one COPY), at most three, the sizes even; more only
// to keep each at 32 files (a split date's parts) at most, a date of more
// alone.
func TestCopyBatches(t *testing.T) {
	for _, tc := range []struct {
		n     int
		parts func(i int) int // of the i-th date; nil: 1 each
		sizes []int
	}{
		{0, nil, nil}, {1, nil, []int{1}}, {2, nil, []int{2}}, {4, nil, []int{4}}, {5, nil, []int{3, 2}},
		{8, nil, []int{4, 4}}, {9, nil, []int{3, 3, 3}}, {10, nil, []int{4, 3, 3}}, {31, nil, []int{11, 10, 10}},
		{96, nil, []int{32, 32, 32}}, {97, nil, []int{25, 24, 24, 24}}, {600, nil, append(slices.Repeat([]int{32}, 11), slices.Repeat([]int{31}, 8)...)},
		// Six parts a date: five dates (30 files) a COPY, where 29 dates
		// (174 files) ran out of memory.
		{200, func(int) int { return 6 }, slices.Repeat([]int{5}, 40)},
		// Four dates, of 1, 2, 3 and 4 parts: one COPY of 10 files.
		{4, func(i int) int { return i + 1 }, []int{4}},
		// A date of 40 parts alone, its neighbours around it.
		{3, func(i int) int { return []int{1, 40, 1}[i] }, []int{1, 1, 1}},
		{10, func(i int) int { return []int{1, 1, 1, 40, 1, 1, 1, 1, 1, 1}[i] }, []int{3, 1, 6}},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			first, _ := dates.Parse("2026-03-01")
			var ds []dates.Date
			for i := range tc.n {
				ds = append(ds, first.AddDays(i))
			}
			parts := func(d dates.Date) int {
				if tc.parts == nil {
					return 1
				}
				return tc.parts(int(d - first))
			}
			got := copyBatches(ds, parts)
			for _, b := range got {
				sum := 0
				for _, d := range b {
					sum += parts(d)
				}
				if sum > 32 && len(b) > 1 {
					t.Errorf("batch %v holds %d files", b, sum)
				}
			}
			var sizes []int
			next := 0
			for _, b := range got {
				sizes = append(sizes, len(b))
				for _, d := range b {
					if d != ds[next] {
						t.Fatalf("batches %v: date %d is %s, want %s", got, next, d, ds[next])
					}
					next++
				}
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tc.sizes) || next != tc.n {
				t.Fatalf("sizes %v (%d dates), want %v", sizes, next, tc.sizes)
			}
		})
	}
}

// TestPartChunks: a batch is one COPY, but a date of more than 32 parts
// alone is written 32 parts a COPY, every part once, in order.
func TestPartChunks(t *testing.T) {
	for _, tc := range []struct {
		dates, open int
		want        string
	}{
		{1, 1, "[[0 1]]"}, {3, 30, "[[0 30]]"}, {1, 32, "[[0 32]]"},
		{1, 33, "[[0 32] [32 33]]"}, {1, 167, "[[0 32] [32 64] [64 96] [96 128] [128 160] [160 167]]"},
	} {
		if got := fmt.Sprint(partChunks(tc.dates, tc.open)); got != tc.want {
			t.Errorf("partChunks(%d, %d) = %s, want %s", tc.dates, tc.open, got, tc.want)
		}
	}
}
