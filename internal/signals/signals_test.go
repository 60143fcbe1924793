package signals

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

// lockedBuffer is stderr shared with the handler's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNotify sends real signals to this process: the first cancels the
// context with the signal as its cause, the second exits at once with
// 128+signo.
func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 143}} {
		t.Run(Name(tc.sig), func(t *testing.T) {
			exited := make(chan int, 1)
			exit = func(code int) { exited <- code }
			defer func() { exit = os.Exit }()
			var stderr lockedBuffer
			ctx, stop := Notify(context.Background(), &stderr)
			defer stop()
			if _, ok := Received(ctx); ok {
				t.Fatal("Received before any signal")
			}
			if err := syscall.Kill(syscall.Getpid(), tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not cancel the context", Name(tc.sig))
			}
			if sig, ok := Received(ctx); !ok || sig != tc.sig {
				t.Errorf("Received = %v, %v; want %v", sig, ok, tc.sig)
			}
			if ctx.Err() != context.Canceled {
				t.Errorf("ctx.Err() = %v, want context.Canceled", ctx.Err())
			}
			select {
			case code := <-exited:
				t.Fatalf("exited with %d after one signal", code)
			default:
			}
			second := tc.sig
			if tc.sig == syscall.SIGHUP {
				// A hangup comes twice: the second is not one asking for
				// the process gone at once; a SIGTERM after it is.
				if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
				select {
				case code := <-exited:
					t.Fatalf("a second SIGHUP exited %d", code)
				case <-time.After(300 * time.Millisecond):
				}
				second = syscall.SIGTERM
			}
			if err := syscall.Kill(syscall.Getpid(), second); err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-exited:
				if code != tc.code {
					t.Errorf("second %s exited %d, want %d", Name(tc.sig), code, tc.code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("a second %s did not exit", Name(tc.sig))
			}
			if !strings.Contains(stderr.String(), "second signal") {
				t.Errorf("stderr does not say why it exited: %q", stderr.String())
			}
		})
	}
}

// TestDecidedOutcome: once a run's outcome is decided (a gate rejection,
// a publish that moved the pointer), a signal during its reports leaves the
// exit code as decided, and a second signal exits with it, not 128+signo.
func TestDecidedOutcome(t *testing.T) {
	for _, code := range []int{exitcode.GateRejected, exitcode.OK} {
		exited := make(chan int, 1)
		exit = func(code int) { exited <- code }
		var stderr lockedBuffer
		ctx, stop := Notify(context.Background(), &stderr)
		Decide(ctx, code)
		for i := 0; i < 2; i++ {
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				<-ctx.Done()
				if got := ExitCode(ctx, exitcode.Error, io.Discard); got != code {
					t.Errorf("decided %d, then SIGTERM: ExitCode = %d, want %d", code, got, code)
				}
			}
		}
		select {
		case got := <-exited:
			if got != code {
				t.Errorf("decided %d, a second SIGTERM exited %d", code, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a second SIGTERM did not exit")
		}
		stop()
		exit = os.Exit
	}
}

func TestExitCode(t *testing.T) {
	cancelledBy := func(sig syscall.Signal) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(Caught{Signal: sig})
		return ctx
	}
	plain, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		code     int
		want     int
		wantNote string
	}{
		{"no signal, success", context.Background(), 0, 0, ""},
		{"no signal, error", context.Background(), 1, 1, ""},
		{"no signal, gate", context.Background(), 3, 3, ""},
		{"cancelled without a signal", plain, 1, 1, ""},
		{"SIGINT, cancelled", cancelledBy(syscall.SIGINT), 1, 130, "interrupted by SIGINT"},
		{"SIGTERM, cancelled", cancelledBy(syscall.SIGTERM), 1, 143, "interrupted by SIGTERM"},
		{"SIGHUP, cancelled", cancelledBy(syscall.SIGHUP), 1, 129, "interrupted by SIGHUP"},
		// Whatever a step made of its cancellation, the signal is the reason.
		{"SIGTERM, usage", cancelledBy(syscall.SIGTERM), 2, 143, "interrupted by SIGTERM"},
		// The work was done before the signal mattered: a publish whose
		// pointer write landed has published.
		{"SIGTERM after the work", cancelledBy(syscall.SIGTERM), 0, 0, "after the pointer moved"},
		{"SIGINT after the work", cancelledBy(syscall.SIGINT), 0, 0, "after the pointer moved"},
	} {
		var stderr bytes.Buffer
		if got := ExitCode(tc.ctx, tc.code, &stderr); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
		if note := stderr.String(); (tc.wantNote == "") != (note == "") || !strings.Contains(note, tc.wantNote) {
			t.Errorf("%s: stderr %q, want it to say %q", tc.name, note, tc.wantNote)
		}
	}
}
