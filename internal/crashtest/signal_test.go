package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// watched is a process's stderr that says once a line containing marker
// has been written.
type watched struct {
	mu     sync.Mutex
	b      bytes.Buffer
	marker string
	seen   chan struct{}
}

func newWatched(marker string) *watched { return &watched{marker: marker, seen: make(chan struct{})} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.b.String(), w.marker)
	n, err := w.b.Write(p)
	if !had && strings.Contains(w.b.String(), w.marker) {
		close(w.seen)
	}
	return n, err
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// signalAt runs the real binary with args and sends it sig once its
// stderr shows marker. It fails the test when the process ends without
// showing it. died is the signal that ended the process, 0 when it exited.
func signalAt(t *testing.T, env, args []string, marker string, sig syscall.Signal) (code int, died syscall.Signal, stderr string) {
	t.Helper()
	cmd := exec.Command(publishtest.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out := newWatched(marker)
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start engagement: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	select {
	case <-out.seen:
		if serr := cmd.Process.Signal(sig); serr != nil {
			t.Fatalf("send %s: %v", signals.Name(sig), serr)
		}
		err = <-exited
	case err = <-exited:
		t.Fatalf("the process ended (%v) without reaching %q: %s", err, marker, out.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run engagement: %v", err)
	}
	if ee != nil {
		if ws, _ := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			died = ws.Signal()
		}
		return ee.ExitCode(), died, out.String()
	}
	return 0, 0, out.String()
}

// TestSignalsAtFailpoints holds real publish processes at each named point
// (failpoint.HoldEnv) and sends SIGINT or SIGTERM there. Before the pointer
// write the run is cancelled: exit 130 / 143, pointer.json byte for byte as
// it was, no history generation naming the job. From the history copy on
// the write is the commit and is finished: exit 0, pointer.json names the
// job, and the log says the signal came after the pointer moved. Either
// way readers see the ground truth and a rerun with a new job id publishes.
func TestSignalsAtFailpoints(t *testing.T) {
	db := publishtest.DB(t)
	fx := publishtest.LoadFixture(t, "")
	cancelled := []string{failpoint.Inspecting, failpoint.AfterAttempt, failpoint.MidStaging, failpoint.AfterStaging, failpoint.BeforePointer}
	landed := []string{failpoint.MidPointer, failpoint.AfterPointer}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signals.Name(sig), func(t *testing.T) {
			// The first hold meets an empty warehouse (a first publish);
			// the reruns make every later one a republish.
			w := newWorld(t, fx, db)
			for i, point := range append(append([]string{}, cancelled...), landed...) {
				ds := [][]string{{mon, tue}, {mon}}[i%2]
				before := w.snapshot()
				id := w.newID("signal-" + point)
				code, died, stderr := signalAt(t, []string{failpoint.HoldEnv + "=" + point}, w.args(id, ds), failpoint.Holding(point), sig)
				what := fmt.Sprintf("%s at %s %v (generation %d)", signals.Name(sig), point, ds, before.ptr.Generation)
				phase, bad := w.checkAfterKill(before, id, ds)
				bad = append(bad, w.checkNoHalfWrites(id)...)
				want, wantPhase, wantSays := exitcode.Signalled(int(sig)), "", "interrupted by "+signals.Name(sig)
				if i >= len(cancelled) {
					want, wantPhase, wantSays = exitcode.OK, phasePointer, "after the pointer write had landed"
				}
				switch {
				case died != 0:
					bad = append(bad, fmt.Sprintf("died by %v instead of handling it", died))
				case code != want:
					bad = append(bad, fmt.Sprintf("exit %d, want %d: %s", code, want, lastLine(stderr)))
				}
				if !strings.Contains(stderr, wantSays) {
					bad = append(bad, fmt.Sprintf("stderr does not say %q: %s", wantSays, lastLine(stderr)))
				}
				switch {
				case wantPhase != "" && phase != wantPhase:
					bad = append(bad, fmt.Sprintf("left the warehouse at %q, want %q", phase, wantPhase))
				case wantPhase == "" && (phase == phaseHistory || phase == phasePointer):
					bad = append(bad, fmt.Sprintf("a cancelled run left the warehouse at %q", phase))
				}
				_, more := w.publish("rerun", ds)
				for _, b := range append(bad, more...) {
					t.Errorf("%s: %s", what, b)
				}
			}
		})
	}
}

// checkNoHalfWrites checks that no history generation names jobID unless
// pointer.json does, and that no temp file of a pointer or history write
// is left beside them.
func (w *world) checkNoHalfWrites(jobID string) []string {
	p, _, err := w.pointer()
	if err != nil {
		return []string{fmt.Sprintf("pointer: %v", err)}
	}
	pointed := p.UpdatedByJobID == jobID
	for _, e := range p.Dates {
		pointed = pointed || e.JobID == jobID
	}
	hist, bad := w.history()
	for g, h := range hist {
		if pointer.Names(h, jobID) && !pointed {
			bad = append(bad, fmt.Sprintf("history generation %d names %s, pointer.json (generation %d) does not", g, jobID, p.Generation))
		}
	}
	for _, dir := range []string{"", "pointer-history"} {
		objs, _, err := w.b.ListDir(context.Background(), dir)
		if err != nil && dir == "" {
			bad = append(bad, fmt.Sprintf("list the warehouse: %v", err))
		}
		for _, o := range objs {
			if base := path.Base(o.Key); strings.HasPrefix(base, ".") {
				bad = append(bad, fmt.Sprintf("a half-done write left %s", o.Key))
			}
		}
	}
	return bad
}

// TestSignalsEndOtherCommands signals a gc that waits for the pointer lock
// this test holds: it exits 130 / 143 having deleted nothing, though the
// same gc deletes a crashed attempt's staging once the lock is free.
func TestSignalsEndOtherCommands(t *testing.T) {
	db := publishtest.DB(t)
	fx := publishtest.LoadFixture(t, "")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signals.Name(sig), func(t *testing.T) {
			w := newWorld(t, fx, db)
			if _, bad := w.publish("publish", []string{mon}); len(bad) > 0 {
				t.Fatal(bad)
			}
			// A crashed attempt leaves staging nothing names: what an
			// unhindered gc deletes.
			if _, killed, stderr, _ := w.run([]string{failpoint.Env + "=" + failpoint.AfterStaging}, w.newID("crashed"), []string{mon}, 0); !killed {
				t.Fatalf("the crashed attempt was not killed at its failpoint: %s", lastLine(stderr))
			}
			before := publishtest.Hash(t, w.wh, "")
			f, err := os.OpenFile(filepath.Join(w.wh, local.LockName), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			code, died, stderr := signalAt(t, nil, []string{"gc", "--warehouse", w.wh, "--min-age", "0s", "--force-min-age"},
				"waiting for the pointer lock", sig)
			if died != 0 || code != exitcode.Signalled(int(sig)) {
				t.Errorf("gc: exit %d (died by %v), want %d: %s", code, died, exitcode.Signalled(int(sig)), lastLine(stderr))
			}
			if after := publishtest.Hash(t, w.wh, ""); after != before {
				t.Errorf("a signalled gc changed the warehouse")
			}
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			// Once the lock is free the same gc deletes the superseded prefix:
			// the refusal above was the signal's, not an empty plan.
			code, _, stderr, _ = runCmd(t, []string{"gc", "--warehouse", w.wh, "--min-age", "0s", "--force-min-age"})
			if code != 0 {
				t.Errorf("gc after the signal test: exit %d: %s", code, lastLine(stderr))
			}
			if after := publishtest.Hash(t, w.wh, ""); after == before {
				t.Errorf("gc deleted nothing once the lock was free: the signalled run proved nothing")
			}
		})
	}
}

func runCmd(t *testing.T, args []string) (code int, stdout, stderr string, ran time.Duration) {
	t.Helper()
	cmd := exec.Command(publishtest.Binary(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run engagement: %v", err)
	}
	if ee != nil {
		return ee.ExitCode(), o.String(), e.String(), time.Since(start)
	}
	return 0, o.String(), e.String(), time.Since(start)
}
