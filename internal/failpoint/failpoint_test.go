package failpoint

import (
	"context"
	"testing"
	"time"
)

// TestDelay: a delayed point pauses for its delay and no longer, only at
// its own name, and a cancelled context ends the pause early.
func TestDelay(t *testing.T) {
	cases := []struct {
		name, env, point string
		ctxGone          bool
		least, most      time.Duration
	}{
		{"the delayed point", "before-pointer:300ms", BeforePointer, false, 300 * time.Millisecond, 5 * time.Second},
		{"another point", "before-pointer:300ms", AfterStaging, false, 0, 250 * time.Millisecond},
		{"cancelled during the delay", "before-pointer:1m", BeforePointer, true, 0, 5 * time.Second},
		{"no duration", "before-pointer", BeforePointer, false, 0, 250 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(DelayEnv, c.env)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.ctxGone {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			start := time.Now()
			HitCtx(ctx, c.point)
			if took := time.Since(start); took < c.least || took > c.most {
				t.Errorf("HitCtx(%s) with %s=%q took %s, want %s to %s", c.point, DelayEnv, c.env, took, c.least, c.most)
			}
		})
	}
}
