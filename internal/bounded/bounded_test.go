package bounded

import (
	"sync/atomic"
	"testing"
)

// TestEach: every index is called once, never more than workers at once
// (nor fewer than one, for a workers of 0).
func TestEach(t *testing.T) {
	for _, tc := range []struct{ n, workers, limit int }{{0, 4, 4}, {1, 4, 4}, {40, 8, 8}, {40, 1, 1}, {5, 0, 1}} {
		var running, peak atomic.Int32
		calls := make([]atomic.Int32, tc.n)
		Each(tc.n, tc.workers, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			calls[i].Add(1)
			running.Add(-1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n %d workers %d: index %d called %d times, want 1", tc.n, tc.workers, i, c)
			}
		}
		if p := int(peak.Load()); p > tc.limit {
			t.Errorf("n %d workers %d: %d at once, want at most %d", tc.n, tc.workers, p, tc.limit)
		}
	}
}
