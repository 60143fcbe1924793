package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// command runs one real engagement process with args and returns its exit
// code and stderr.
func (w *world) command(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.Command(publishtest.Binary(w.t), args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	return w.exitCode(args[0], cmd.Run()), errb.String()
}

// exitCode is the exit code of a process that ran (err from Run or Wait);
// one that could not run fails the test.
func (w *world) exitCode(what string, err error) int {
	w.t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("run engagement %s: %v", what, err)
	}
	if ee != nil {
		return ee.ExitCode()
	}
	return 0
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

// baseGeneration is the pointer generation job id's attempt started from.
func (w *world) baseGeneration(id string) int64 {
	w.t.Helper()
	b, _, err := w.b.Get(context.Background(), warehouse.AttemptPath(id))
	if err != nil {
		w.t.Fatalf("read the attempt record of %s: %v", id, err)
	}
	var a job.Attempt
	if err := json.Unmarshal(b, &a); err != nil {
		w.t.Fatalf("decode the attempt record of %s: %v", id, err)
	}
	return a.BaseGeneration
}

// TestGCRacesPublishAndRollback runs real processes at once on one
// warehouse: gc expiring old generations (min-age 1s, so it really
// deletes; keeping only the current one, or four), a publish of Monday,
// and a rollback of Monday to an old generation started while the publish
// runs. Whatever the order, every
// file the current pointer or a retained generation names is still there,
// readers see the truth, and of the publish and the rollback of the same
// date exactly one wins: the other exits 6 (raced) or 2 (its generation
// expired first) and writes nothing; both land only one after the other:
// the rollback read the pointer after the publish had landed, or the
// publish started from the rollback's generation.
func TestGCRacesPublishAndRollback(t *testing.T) {
	db := publishtest.DB(t)
	// The rollback starts when the publish's stderr shows a phase ended
	// ("" = at once), so the two really overlap whatever the machine's speed.
	// In the second trial the publish also waits 5 s before it moves the
	// pointer (failpoint.DelayEnv), so the rollback lands first however
	// loaded the machine is (a CI run where the other packages' tests slowed
	// the rollback saw it land after the publish in every trial). In the
	// third, started when the gate ends, the publish waits half a second
	// before its pointer move: without it a loaded rehearsal saw the
	// publish exit before the rollback had started, and nothing raced.
	trials := []struct {
		retain, after, delay string
	}{{"1", "", ""}, {"4", "inspect", failpoint.BeforePointer + ":5s"}, {"4", "gate", failpoint.BeforePointer + ":500ms"}, {"1", "inspect", ""}}
	wins := map[string]int{}
	for trial, tc := range trials {
		w := newWorld(t, publishtest.LoadFixture(t, ""), db)
		for _, ds := range [][]string{{mon, tue}, {mon}, {tue}, {mon}} {
			if _, bad := w.publish("base", ds); len(bad) > 0 {
				t.Fatalf("setup: %v", bad)
			}
		}
		time.Sleep(1100 * time.Millisecond) // older than gc's min-age
		gcArgs := []string{"gc", "--warehouse", w.wh, "--retain-generations", tc.retain, "--min-age", "1s", "--force-min-age"}
		pubID, rbID := w.newID("pub"), w.newID("rollback")
		var wg sync.WaitGroup
		var pubCode, rbCode int
		var pubErr, rbErr string
		gcFailed := make(chan string, 8)
		var pubEnd, rbStart time.Time
		phase := make(chan struct{})
		wg.Go(func() {
			var env []string
			if tc.delay != "" {
				env = []string{failpoint.DelayEnv + "=" + tc.delay}
			}
			pubCode, pubErr = w.watch(env, pubID, []string{mon}, tc.after, phase)
			pubEnd = time.Now()
		})
		wg.Go(func() {
			for range 4 {
				if code, stderr := w.command(gcArgs...); code != 0 {
					gcFailed <- fmt.Sprintf("exit %d: %s", code, lastLine(stderr))
				}
			}
		})
		wg.Go(func() {
			<-phase
			rbStart = time.Now()
			rbCode, rbErr = w.command("rollback", "--warehouse", w.wh, "--date", mon, "--to-generation", "2", "--job-id", rbID)
		})
		wg.Wait()
		close(gcFailed)
		for f := range gcFailed {
			t.Errorf("trial %d: gc: %s", trial, f)
		}
		t.Logf("trial %d: publish exit %d (%s), rollback exit %d (%s)", trial, pubCode, lastLine(pubErr), rbCode, lastLine(rbErr))
		if !rbStart.Before(pubEnd) {
			t.Fatalf("trial %d: the rollback started after the publish ended: nothing raced", trial)
		}
		hist, _ := w.history()
		genOf := func(id string) int64 {
			for g, h := range hist {
				if h.UpdatedByJobID == id {
					return g
				}
			}
			return 0
		}
		switch {
		case pubCode == 0 && rbCode == 0:
			// Both may land only one after the other: the rollback read
			// the pointer after the publish landed and chose to undo it,
			// or the publish started from the rollback's generation (its
			// _attempt.json names the generation it started from).
			rbGen, pubGen := genOf(rbID), genOf(pubID)
			switch {
			case pubGen == 0 || rbGen == 0:
				t.Errorf("trial %d: both exited 0 but the history names publish at %d, rollback at %d", trial, pubGen, rbGen)
			case rbGen < pubGen:
				if base := w.baseGeneration(pubID); base < rbGen {
					t.Errorf("trial %d: both landed, rollback at generation %d, then publish at %d that started from generation %d: the publish undid a rollback it never saw", trial, rbGen, pubGen, base)
				}
			}
			wins["sequential"]++
		case pubCode == 0:
			wins["publish"]++
		case rbCode == 0:
			wins["rollback"]++
		default:
			t.Errorf("trial %d: publish exit %d (%s), rollback exit %d (%s): neither landed", trial, pubCode, lastLine(pubErr), rbCode, lastLine(rbErr))
		}
		if pubCode == exitcode.Raced && !strings.Contains(pubErr, "rolled 2026-03-02 back to generation 2") {
			t.Errorf("trial %d: publish exit %d without naming the rollback that came first: %s", trial, pubCode, lastLine(pubErr))
		}
		for _, c := range []struct {
			what string
			code int
		}{{"publish", pubCode}, {"rollback", rbCode}} {
			// Never 1: a scheduler retries 1, and a retry of the loser
			// would undo the winner.
			if c.code != 0 && c.code != exitcode.Raced && c.code != exitcode.Usage {
				t.Errorf("trial %d: %s exit %d, want 0, 6 (raced) or 2 (expired)", trial, c.what, c.code)
			}
		}
		p, _, err := w.pointer()
		if err != nil {
			t.Fatal(err)
		}
		winner := pubID
		if rbCode == 0 && (pubCode != 0 || genOf(rbID) > genOf(pubID)) {
			winner = "base-002" // generation 2's job, which the rollback brings back
		}
		if got := p.Dates[dates.MustParse(mon)].JobID; got != winner {
			t.Errorf("trial %d: Monday names %s, want %s", trial, got, winner)
		}
		// One more gc after everything settled and aged, then everything
		// must hold.
		time.Sleep(1100 * time.Millisecond)
		if code, stderr := w.command(gcArgs...); code != 0 {
			t.Errorf("trial %d: final gc exit %d: %s", trial, code, lastLine(stderr))
		}
		if bad := append(w.checkRetained(), w.checkReaders(p)...); len(bad) > 0 {
			t.Errorf("trial %d: %s", trial, strings.Join(bad, "\n"))
		}
		want, _ := strconv.Atoi(tc.retain)
		if hist, _ := w.history(); len(hist) != min(want, int(p.Generation)) {
			t.Errorf("trial %d: %d history generations after gc --retain-generations %s (%v)", trial, len(hist), tc.retain, keysOf(hist))
		}
	}
	t.Logf("wins: %v", wins)
	if wins["publish"] == 0 || wins["rollback"] == 0 {
		t.Errorf("wins %v: each side should win at least one trial over the other, or the race was not exercised", wins)
	}
}

// watch runs one real publish of ds, with env added to its environment,
// and closes phase as soon as its stderr reports that phase ended (at once
// for ""), or when it exits.
func (w *world) watch(env []string, jobID string, ds []string, after string, phase chan<- struct{}) (int, string) {
	w.t.Helper()
	cmd := w.publishCmd(env, jobID, ds)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	var once sync.Once
	fire := func() { once.Do(func() { close(phase) }) }
	if after == "" {
		fire()
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	var errb strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		errb.WriteString(line + "\n")
		var rec struct{ Msg, Phase string }
		if after != "" && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "phase" && rec.Phase == after {
			fire()
		}
	}
	err = cmd.Wait()
	fire()
	return w.exitCode("publish", err), errb.String()
}

func keysOf(m map[int64]pointer.Pointer) []string {
	var out []string
	for g := range m {
		out = append(out, strconv.FormatInt(g, 10))
	}
	return out
}
