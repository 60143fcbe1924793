package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// command runs one real engagement process with args and returns its exit
// code and stderr.
func (w *world) command(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.Command(publishtest.Binary(w.t), args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("run engagement %s: %v", args[0], err)
	}
	if ee != nil {
		return ee.ExitCode(), errb.String()
	}
	return 0, errb.String()
}

// checkRetained checks that every file the current pointer or a retained
// history generation names is there with its recorded size: gc never
// deletes what a reader may be sent to.
func (w *world) checkRetained() []string {
	cur, _, err := w.pointer()
	if err != nil {
		return []string{fmt.Sprintf("pointer: %v", err)}
	}
	hist, bad := w.history()
	gens := []pointer.Pointer{cur}
	for _, h := range hist {
		gens = append(gens, h)
	}
	for _, p := range gens {
		for d, e := range p.Dates {
			for _, f := range append(append([]pointer.File{}, e.FactFiles...), e.CourseDayFiles...) {
				a, err := w.b.Stat(context.Background(), f.Path)
				switch {
				case err != nil:
					bad = append(bad, fmt.Sprintf("generation %d, %s: %s: %v", p.Generation, d, f.Path, err))
				case a.Size != f.Bytes:
					bad = append(bad, fmt.Sprintf("generation %d, %s: %s has %d bytes, recorded %d", p.Generation, d, f.Path, a.Size, f.Bytes))
				}
			}
			if _, err := w.b.Stat(context.Background(), e.GateReport); err != nil {
				bad = append(bad, fmt.Sprintf("generation %d, %s: gate report: %v", p.Generation, d, err))
			}
		}
	}
	return bad
}

// TestGCRacesPublishAndRollback runs real processes at once on one
// warehouse: gc expiring all but the current generation (min-age 1s, so it
// really deletes), a publish of Monday, and a rollback of Monday to an old
// generation started while the publish runs. Whatever the order, every
// file the current pointer or a retained generation names is still there,
// readers see the truth, and of the publish and the rollback of the same
// date exactly one wins: the other exits 1 (raced) or 2 (its generation
// expired first) and writes nothing.
func TestGCRacesPublishAndRollback(t *testing.T) {
	db := publishtest.DB(t)
	trials := int(envUint(t, "ENGAGEMENT_RACE_TRIALS", 3))
	for trial := range trials {
		w := newWorld(t, publishtest.LoadFixture(t, ""), db)
		for _, ds := range [][]string{{mon, tue}, {mon}, {tue}, {mon}} {
			if _, bad := w.publish("base", ds); len(bad) > 0 {
				t.Fatalf("setup: %v", bad)
			}
		}
		time.Sleep(1100 * time.Millisecond) // older than gc's min-age
		gcArgs := []string{"gc", "--warehouse", w.wh, "--retain-generations", "1", "--min-age", "1s", "--force-min-age"}
		pubID, rbID := w.newID("pub"), w.newID("rollback")
		var wg sync.WaitGroup
		var pubCode, rbCode int
		var pubErr, rbErr string
		gcFailed := make(chan string, 8)
		wg.Go(func() { pubCode, _, pubErr, _ = w.run(nil, pubID, []string{mon}, 0) })
		wg.Go(func() {
			for range 4 {
				if code, stderr := w.command(gcArgs...); code != 0 {
					gcFailed <- fmt.Sprintf("exit %d: %s", code, lastLine(stderr))
				}
			}
		})
		wg.Go(func() {
			time.Sleep(time.Duration(200+300*trial) * time.Millisecond)
			rbCode, rbErr = w.command("rollback", "--warehouse", w.wh, "--date", mon, "--to-generation", "2", "--job-id", rbID)
		})
		wg.Wait()
		close(gcFailed)
		for f := range gcFailed {
			t.Errorf("trial %d: gc: %s", trial, f)
		}
		t.Logf("trial %d: publish exit %d, rollback exit %d (%s)", trial, pubCode, rbCode, lastLine(rbErr))
		if (pubCode == 0) == (rbCode == 0) {
			t.Errorf("trial %d: publish exit %d (%s), rollback exit %d (%s): want exactly one to win", trial, pubCode, lastLine(pubErr), rbCode, lastLine(rbErr))
		}
		for _, c := range []struct {
			what string
			code int
		}{{"publish", pubCode}, {"rollback", rbCode}} {
			if c.code != 0 && c.code != 1 && c.code != 2 {
				t.Errorf("trial %d: %s exit %d, want 0, 1 or 2", trial, c.what, c.code)
			}
		}
		p, _, err := w.pointer()
		if err != nil {
			t.Fatal(err)
		}
		winner := pubID
		if rbCode == 0 {
			winner = "base-002" // generation 2's job, which the rollback brings back
		}
		if got := p.Dates[dates.MustParse(mon)].JobID; got != winner {
			t.Errorf("trial %d: Monday names %s, want %s", trial, got, winner)
		}
		// One more gc after everything settled, then everything must hold.
		if code, stderr := w.command(gcArgs...); code != 0 {
			t.Errorf("trial %d: final gc exit %d: %s", trial, code, lastLine(stderr))
		}
		if bad := append(w.checkRetained(), w.checkReaders(p)...); len(bad) > 0 {
			t.Errorf("trial %d: %s", trial, strings.Join(bad, "\n"))
		}
		if hist, _ := w.history(); len(hist) != 1 {
			t.Errorf("trial %d: %d history generations after gc --retain-generations 1, want 1 (%v)", trial, len(hist), keysOf(hist))
		}
	}
}

func keysOf(m map[int64]pointer.Pointer) []string {
	var out []string
	for g := range m {
		out = append(out, strconv.FormatInt(g, 10))
	}
	return out
}
