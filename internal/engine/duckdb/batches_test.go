package duckdb

import (
	"fmt"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
)

// TestCopyBatches: every date once, in order, one batch for each four dates
// begun (a short day one COPY), at most three, the sizes even; more only
// to keep each at 32 dates at most.
func TestCopyBatches(t *testing.T) {
	for _, tc := range []struct {
		n     int
		sizes []int
	}{
		{0, nil}, {1, []int{1}}, {2, []int{2}}, {4, []int{4}}, {5, []int{3, 2}},
		{8, []int{4, 4}}, {9, []int{3, 3, 3}}, {10, []int{4, 3, 3}}, {31, []int{11, 10, 10}},
		{96, []int{32, 32, 32}}, {97, []int{25, 24, 24, 24}}, {600, append(slices.Repeat([]int{32}, 11), slices.Repeat([]int{31}, 8)...)},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			first, _ := dates.Parse("2026-03-01")
			var ds []dates.Date
			for i := range tc.n {
				ds = append(ds, first.AddDays(i))
			}
			got := copyBatches(ds)
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
