package bounded

import (
	"errors"
	"fmt"
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

// TestFirst: the error of the smallest failing index, even when a larger
// one fails first; nil when none fails; calls past a failure are skipped.
func TestFirst(t *testing.T) {
	t.Run("smallest index wins", func(t *testing.T) {
		later := make(chan struct{})
		err := First(40, 8, func(i int) error {
			switch i {
			case 3:
				<-later // fails only after index 7 has
				return fmt.Errorf("call %d", i)
			case 7:
				defer close(later)
				return fmt.Errorf("call %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "call 3" {
			t.Errorf("First = %v, want call 3", err)
		}
	})
	t.Run("none fails", func(t *testing.T) {
		var calls atomic.Int32
		if err := First(40, 8, func(int) error { calls.Add(1); return nil }); err != nil || calls.Load() != 40 {
			t.Errorf("First = %v after %d calls, want nil after 40", err, calls.Load())
		}
	})
	t.Run("calls past a failure skipped", func(t *testing.T) {
		var calls atomic.Int32
		bad := errors.New("bad")
		err := First(40, 1, func(i int) error {
			calls.Add(1)
			if i == 2 {
				return bad
			}
			return nil
		})
		if err != bad || calls.Load() != 3 {
			t.Errorf("First = %v after %d calls, want bad after 3", err, calls.Load())
		}
	})
}
