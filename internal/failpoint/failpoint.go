// Package failpoint lets a test kill the real process at a named point, so
// crash tests exercise the same binary users run instead of a simulation.
// It does nothing unless ENGAGEMENT_FAILPOINT names the point.
package failpoint

import (
	"os"
	"sync"
	"syscall"
)

// Env is the variable that arms a failpoint.
const Env = "ENGAGEMENT_FAILPOINT"

// Named points in the order publish reaches them.
const (
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

// Hit runs the hook set for name, then kills the process with SIGKILL when
// the armed point is name. SIGKILL, not exit, so no deferred cleanup runs:
// that is what a crash looks like.
func Hit(name string) {
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
}
