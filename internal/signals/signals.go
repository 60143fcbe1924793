// Package signals turns SIGINT, SIGTERM and SIGHUP into a cancelled context that
// remembers which signal cancelled it, and that signal into the exit code
// (README, exit codes): 128+signo when the command did not finish, 0 when
// it had (a publish whose pointer write landed has published, whatever
// arrives afterwards).
package signals

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

// Caught is the cause of a context cancelled by a signal
// (context.Cause(ctx)); ctx.Err() is still context.Canceled, so every
// step that checks its context stops as it does today.
type Caught struct{ Signal syscall.Signal }

func (c Caught) Error() string { return "interrupted by " + Name(c.Signal) }

// Name is the conventional name of the signals this package handles.
func Name(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// exit ends the process on a second signal; a test replaces it.
var exit = os.Exit

// Notify returns a context cancelled with a Caught cause by the first
// SIGINT, SIGTERM or SIGHUP. A second one ends the process at once with its
// 128+signo code: whoever sends it wants the process gone, and an exit at
// any moment is no worse for the warehouse than the crash the crash
// harness already proves safe (the pointer is the old or the new
// generation). stop unregisters the handler.
func Notify(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	// SIGHUP too: a terminal that closes (an operator's SSH session
	// dropping during a backfill) killed the run with no report, past
	// its commit point. Not under nohup: a handler would undo the ignore
	// the run was started with, and the hangup it was to survive would
	// cancel it.
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(ch, syscall.SIGHUP)
	}
	d := &decision{}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, decisionKey{}, d))
	done := make(chan struct{})
	go func() {
		first := true
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				sig := s.(syscall.Signal)
				if !first && sig == syscall.SIGHUP {
					// A hangup comes twice (the kernel's to the foreground
					// job, then the shell's to its jobs): it is no one
					// asking for the process gone at once.
					continue
				}
				if first {
					first = false
					fmt.Fprintf(stderr, "engagement: %s received: cancelling; a second signal exits at once\n", Name(sig))
					cancel(Caught{Signal: sig})
					continue
				}
				if code, ok := d.get(); ok {
					fmt.Fprintf(stderr, "engagement: second signal (%s) after the outcome was decided: exiting at once with its %d\n", Name(sig), code)
					exit(code)
					continue // only a test's exit returns
				}
				fmt.Fprintf(stderr, "engagement: second signal (%s) while shutting down: exiting at once with %d\n", Name(sig), exitcode.Signalled(int(sig)))
				exit(exitcode.Signalled(int(sig)))
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// decision is the outcome of a run once it is decided (a publish that
// moved the pointer, a gate rejection): what the process exits with,
// whatever signal comes after, while the reports (the document, metrics,
// lineage) are still being sent.
type decision struct {
	mu   sync.Mutex
	code int
	set  bool
}

type decisionKey struct{}

func (d *decision) get() (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.code, d.set
}

// Decide records, for a ctx from Notify, that the run's outcome is code:
// a later signal no longer changes the exit code (ExitCode), and a second
// signal exits with it. Without Notify's ctx it does nothing.
func Decide(ctx context.Context, code int) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		d.mu.Lock()
		d.code, d.set = code, true
		d.mu.Unlock()
	}
}

func decided(ctx context.Context) (int, bool) {
	if d, ok := ctx.Value(decisionKey{}).(*decision); ok {
		return d.get()
	}
	return 0, false
}

// Received reports the signal that cancelled ctx, if one did.
func Received(ctx context.Context) (syscall.Signal, bool) {
	var c Caught
	if errors.As(context.Cause(ctx), &c) {
		return c.Signal, true
	}
	return 0, false
}

// ExitCode is the command's code once a signal is taken into account: a
// command that finished (code 0) keeps 0, and says the signal came after
// its work was done; any other outcome after a signal is the signal's
// 128+signo, since the command did not get to finish what it was asked.
func ExitCode(ctx context.Context, code int, stderr io.Writer) int {
	sig, ok := Received(ctx)
	if !ok {
		return code
	}
	if c, ok := decided(ctx); ok && c != exitcode.OK {
		fmt.Fprintf(stderr, "engagement: %s came after the outcome was decided: exit %d\n", Name(sig), c)
		return c
	} else if ok {
		code = exitcode.OK // published: what came after cannot undo it
	}
	if code == exitcode.OK {
		fmt.Fprintf(stderr, "engagement: %s came after the command had finished its work (a publish: after the pointer moved): exit 0\n", Name(sig))
		return code
	}
	n := exitcode.Signalled(int(sig))
	fmt.Fprintf(stderr, "engagement: interrupted by %s: exit %d; a publish or a rollback left the pointer as it was (rerun it with a new job id), a gc deleted only what it printed as deleted (run it again)\n", Name(sig), n)
	return n
}
