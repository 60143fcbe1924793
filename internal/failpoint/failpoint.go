// Package failpoint lets a test kill the real process at a named point, so
// crash tests exercise the same binary users run instead of a simulation.
// It does nothing unless ENGAGEMENT_FAILPOINT (kill) or
// ENGAGEMENT_FAILPOINT_HOLD (hold) names the point.
package failpoint

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is the variable that arms a failpoint.
const Env = "ENGAGEMENT_FAILPOINT"

// HoldEnv arms a point to hold the process there instead of killing it:
// it prints Holding(name) to stderr and waits until the run's context is
// cancelled (a signal), then lets the run go on, so a test can signal a
// real process at a known point and see what the cancelled run does from
// there. A hold nobody ends kills the process after HoldTimeout, so a
// broken test fails instead of hanging.
const HoldEnv = "ENGAGEMENT_FAILPOINT_HOLD"

// DelayEnv arms a point to pause there for a while ("before-pointer:5s")
// and then go on, so a test can give another process a window of known
// length inside a real run (a rollback landing between a publish's gate and
// its pointer move) on a machine of any speed.
const DelayEnv = "ENGAGEMENT_FAILPOINT_DELAY"

// HoldTimeout bounds a hold.
const HoldTimeout = 2 * time.Minute

// Holding is the stderr line a held process prints once it waits at name.
func Holding(name string) string { return "failpoint: holding at " + name }

// Named points in the order publish reaches them.
const (
	Inspecting    = "inspecting"     // inputs listed, their inspection not run
	AfterAttempt  = "after-attempt"  // _attempt.json written, nothing staged
	MidStaging    = "mid-staging"    // some staged files written, not all
	AfterStaging  = "after-staging"  // staging complete, gate not run
	BeforePointer = "before-pointer" // gate passed and _gate.json written, pointer not moved
	MidPointer    = "mid-pointer"    // history generation written, pointer.json not replaced
	AfterPointer  = "after-pointer"  // pointer moved, monitors not printed
)

var (
	mu    sync.Mutex
	hooks = map[string]func(){}
)

// SetHook makes Hit(name) call fn in this process, for in-process tests
// that need something to happen at a point (a directory turning read-only
// between the history copy and the pointer write); the returned func
// removes it.
func SetHook(name string, fn func()) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	hooks[name] = fn
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(hooks, name)
	}
}

// Hit is HitCtx without a context: a hold there ends only by its timeout.
func Hit(name string) { HitCtx(context.Background(), name) }

// HitCtx runs the hook set for name, then kills the process with SIGKILL
// when the armed point is name. SIGKILL, not exit, so no deferred cleanup
// runs: that is what a crash looks like. When name is held (HoldEnv) it
// waits there until ctx is done; when it is delayed (DelayEnv), until the
// delay has passed or ctx is done.
func HitCtx(ctx context.Context, name string) {
	mu.Lock()
	fn := hooks[name]
	mu.Unlock()
	if fn != nil {
		fn()
	}
	if os.Getenv(Env) == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is asynchronous; never run past the point
	}
	if point, d, ok := strings.Cut(os.Getenv(DelayEnv), ":"); ok && point == name {
		if delay, err := time.ParseDuration(d); err == nil {
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
		}
	}
	if os.Getenv(HoldEnv) == name {
		fmt.Fprintf(os.Stderr, "%s (pid %d)\n", Holding(name), os.Getpid())
		select {
		case <-ctx.Done():
		case <-time.After(HoldTimeout):
			fmt.Fprintf(os.Stderr, "failpoint: nothing ended the hold at %s in %s: killing the process\n", name, HoldTimeout)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}
