package crashtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// calibrate measures the median uncrashed publish of both dates, the span
// over which random moments are drawn.
func calibrate(t *testing.T, w *world) time.Duration {
	t.Helper()
	var took []time.Duration
	for range 3 {
		ran, bad := w.publish("calibrate", []string{mon, tue})
		if len(bad) > 0 {
			t.Fatalf("calibration publish: %v", bad)
		}
		took = append(took, ran)
	}
	slices.Sort(took)
	return took[1]
}

// TestInputsMovedInDuringPublish is the listing race of a real ingestion
// job: a file of 100 redelivered events (event_ids that repeat its
// partition's) is moved into ingest_date=2026-03-03/ at a random moment of
// a real publish process. Whenever it lands, the attempt checks and reads
// one set of files: it is refused by the event-id check (exit 3) when the
// listing saw the file, fails naming the file (exit 1) when it arrived
// between the listing and the check before the gate, or publishes the day
// without it (exit 0, the true figures) when it arrived after. It never
// publishes the day with the redelivered events counted.
func TestInputsMovedInDuringPublish(t *testing.T) {
	db := publishtest.DB(t)
	seed := envUint(t, SeedEnv, uint64(time.Now().UnixNano()))
	trials := int(envUint(t, "ENGAGEMENT_RACE_TRIALS", 30))
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	span := calibrate(t, newWorld(t, publishtest.LoadFixture(t, ""), db))
	t.Logf("listing race: seed %d, %d trials over 0..%v", seed, trials, span)

	outcomes := map[string]int{}
	var violations []string
	for i := range trials {
		fx := publishtest.LoadFixture(t, "")
		w := newWorld(t, fx, db)
		if _, bad := w.publish("settled", []string{mon, tue}); len(bad) > 0 {
			t.Fatalf("first publish: %v", bad)
		}
		before := w.snapshot()
		// Written beside raw first, so the move into the partition is one
		// rename, as an ingestion job's commit is.
		ready := filepath.Join(t.TempDir(), "part-late.parquet")
		publishtest.RedeliveryFile(t, db, fx, ready)
		landed := filepath.Join(fx.Dir, "raw", "ingest_date="+tue, "part-late.parquet")
		delay := time.Duration(rng.Int64N(int64(span)))
		if i%5 == 0 {
			// Every fifth move lands as the process starts, before its
			// listing: on a loaded machine the calibration can be off by
			// twice, and 30 random moments once all fell after the listing.
			delay = 0
		}
		id := w.newID("racing")
		code, sig, stderr, _ := w.runWith(nil, id, []string{mon, tue}, delay, func(*exec.Cmd) {
			if err := os.Rename(ready, landed); err != nil {
				t.Error(err)
			}
		})
		if _, err := os.Stat(landed); err != nil {
			// The process ended before the delay: move it in now, so the
			// world's inputs are the same in every trial.
			if err := os.Rename(ready, landed); err != nil {
				t.Fatal(err)
			}
			outcomes["finished before the move"]++
		}
		// The inputs now hold the redelivery by the test's hand, not the job's.
		w.rawHash = publishtest.TreeHash(t, fx.Dir)
		what := fmt.Sprintf("trial %d (move at %v): exit %d", i, delay, code)
		var bad []string
		switch {
		case sig != 0:
			bad = append(bad, fmt.Sprintf("died by %v", sig))
		case code == 0:
			outcomes["published without it"]++
			// Exit 0 means the attempt read and checked the files it
			// listed, without the redelivery: the truth, once.
			p, _, err := w.pointer()
			if err != nil || p.Dates[dates.MustParse(tue)].JobID != id {
				bad = append(bad, fmt.Sprintf("exit 0 but the pointer does not name %s for %s (%v)", id, tue, err))
			}
			bad = append(bad, w.checkReaders(p)...)
		case code == 1:
			outcomes["refused: input changed"]++
			if line := lastLine(stderr); !strings.Contains(line, landed+" was added after the attempt listed its inputs") {
				bad = append(bad, "error does not name the added file: "+line)
			}
		case code == 3:
			outcomes["refused: event ids repeat"]++
			if failed := rejected(t, w, id); !slices.Equal(failed, []string{gate.CheckEventIDUnique}) {
				bad = append(bad, fmt.Sprintf("rejected for %v, want only %s", failed, gate.CheckEventIDUnique))
			}
		default:
			bad = append(bad, "unexpected exit: "+lastLine(stderr))
		}
		if code != 0 {
			if p, b, err := w.pointer(); err != nil || string(b) != string(before.bytes) {
				bad = append(bad, fmt.Sprintf("pointer changed by a refused attempt (generation %d, %v)", p.Generation, err))
			}
		}
		for _, b := range bad {
			violations = append(violations, what+": "+b)
		}
	}
	t.Logf("listing race: %v", outcomes)
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
	// The trials must have caught the file on both sides of the listing,
	// or they proved nothing about the race.
	if outcomes["refused: event ids repeat"] == 0 || outcomes["refused: input changed"]+outcomes["published without it"] == 0 {
		t.Errorf("the moves did not land on both sides of the listing (%v): the calibration (%v) is off", outcomes, span)
	}
}

// rejected returns the failed checks of a job's rejection record, sorted.
func rejected(t *testing.T, w *world, jobID string) []string {
	t.Helper()
	var rej struct {
		Failed []gate.Check `json:"failed_checks"`
	}
	b := publishtest.FileBytes(t, warehouse.Abs(w.wh, warehouse.RejectionPath(jobID)))
	if err := json.Unmarshal(b, &rej); err != nil {
		return []string{fmt.Sprintf("unreadable rejection record: %v", err)}
	}
	var names []string
	for _, c := range rej.Failed {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestSignalsNeverUsage sends SIGTERM or SIGINT to real publish processes
// at random moments. Cancellation is never a usage error: a process that
// handled the signal exits 143 / 130 with the pointer as it was and no
// history generation of its own, or 0 when its pointer write had already
// landed; one signalled before it could install its handler dies by the
// signal like a kill. After each, readers see the truth and a rerun
// publishes.
func TestSignalsNeverUsage(t *testing.T) {
	db := publishtest.DB(t)
	fx := publishtest.LoadFixture(t, "")
	seed := envUint(t, SeedEnv, uint64(time.Now().UnixNano()))
	trials := int(envUint(t, "ENGAGEMENT_SIGNAL_TRIALS", 20))
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	w := newWorld(t, fx, db)
	span := calibrate(t, w)
	t.Logf("signals: seed %d, %d SIGTERMs and SIGINTs over 0..%v", seed, trials, span)
	outcomes := map[string]int{}
	for i := range trials {
		sig := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}[i%2]
		ds := [][]string{{mon, tue}, {mon}, {tue}}[rng.IntN(3)]
		delay := time.Duration(rng.Int64N(int64(span)))
		if i%5 == 0 {
			// Every fifth move lands as the process starts, before its
			// listing: on a loaded machine the calibration can be off by
			// twice, and 30 random moments once all fell after the listing.
			delay = 0
		}
		before := w.snapshot()
		id := w.newID("signal")
		code, died, stderr, _ := w.runWith(nil, id, ds, delay, func(cmd *exec.Cmd) { _ = cmd.Process.Signal(sig) })
		what := fmt.Sprintf("%s %d at %v %v", signals.Name(sig), i, delay, ds)
		phase, bad := w.checkAfterKill(before, id, ds)
		bad = append(bad, w.checkNoHalfWrites(id)...)
		moved := phase == phasePointer
		switch {
		case died == sig:
			outcomes["died before its handler"]++
		case died != 0:
			bad = append(bad, fmt.Sprintf("died by %v", died))
		case code == 0:
			outcomes["finished"]++
			if !moved {
				bad = append(bad, "exit 0 but the pointer did not move")
			}
		case code == exitcode.Signalled(int(sig)):
			outcomes["cancelled"]++
			if moved || phase == phaseHistory {
				bad = append(bad, fmt.Sprintf("exit %d but the warehouse is at %q: %s", code, phase, lastLine(stderr)))
			}
		default:
			bad = append(bad, fmt.Sprintf("exit %d: %s", code, lastLine(stderr)))
		}
		_, more := w.publish("rerun", ds)
		for _, b := range append(bad, more...) {
			t.Errorf("%s: %s", what, b)
		}
	}
	t.Logf("signals: %v", outcomes)
	if outcomes["cancelled"] == 0 {
		t.Errorf("no signal landed while a publish ran (%v): the calibration (%v) is off", outcomes, span)
	}
}
