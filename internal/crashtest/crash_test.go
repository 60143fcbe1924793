package crashtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

const (
	mon = "2026-03-02"
	tue = "2026-03-03"

	// SeedEnv reproduces a run's random kill moments and scenarios.
	SeedEnv = "ENGAGEMENT_CRASH_SEED"
	// KillsEnv sets how many random kills must land (default 60).
	KillsEnv = "ENGAGEMENT_CRASH_KILLS"
)

// tally counts kills and invariant violations for the summary line.
type tally struct {
	named      map[string]int
	random     map[string]int // by the phase the kill landed in
	finished   int            // random moments after the process had exited
	reruns     int
	violations []string
}

func (c *tally) add(what string, bad []string) {
	for _, b := range bad {
		c.violations = append(c.violations, what+": "+b)
	}
}

func (c *tally) summary(seed uint64) string {
	named, random := 0, 0
	var byPhase []string
	for _, n := range c.named {
		named += n
	}
	for _, p := range phases {
		random += c.random[p]
		byPhase = append(byPhase, fmt.Sprintf("%s=%d", p, c.random[p]))
	}
	return fmt.Sprintf("crash matrix: seed=%d kills=%d (named failpoints %d, random moments %d: %s; %d more random moments fell after the process exited) reruns=%d invariant violations=%d",
		seed, named+random, named, random, strings.Join(byPhase, " "), c.finished, c.reruns, len(c.violations))
}

// TestCrashMatrix kills real publish processes with SIGKILL at every named
// failpoint (first publish and republish, two dates and one) and at random
// moments drawn from a seeded PRNG across a measured publish, and after
// every kill checks what readers rely on: pointer.json parses and is the
// old or the new generation; every file it names exists with its listed
// bytes and rows; visible sums equal the generator's ground truth; the
// inputs are byte-identical; a rerun with a new job id publishes correctly.
func TestCrashMatrix(t *testing.T) { crashMatrix(t, publishtest.Local, 60) }

// TestCrashMatrixS3 runs the matrix with the inputs and the warehouse on the
// test S3 server, the invariants checked through S3: the pointer moves by
// conditional writes there, with no lock and no rename to lean on. Its
// random kills default to 20 (an S3 publish takes longer, and the suite's
// time is bounded; ENGAGEMENT_CRASH_KILLS asks for more); every named
// failpoint is hit as often as on disk.
func TestCrashMatrixS3(t *testing.T) { crashMatrix(t, publishtest.S3, 20) }

func crashMatrix(t *testing.T, backend publishtest.Backend, defaultKills uint64) {
	h := publishtest.Harness{Backend: backend}
	fx := h.LoadFixture(t, "")
	db := publishtest.DBFor(t, h.NewWarehouse(t))
	newWorld := func(t *testing.T, fx publishtest.Fixture, db *sql.DB) *world { return newWorldOn(t, backend, fx, db) }
	c := &tally{named: map[string]int{}, random: map[string]int{}}
	both, monOnly := []string{mon, tue}, []string{mon}

	// Named points: the process kills itself there. Each point is hit on a
	// first publish (no pointer yet), then on republishes of one date and
	// of both over an existing generation.
	want := map[string]string{
		failpoint.AfterAttempt:  phaseAttempt,
		failpoint.MidStaging:    phaseStaging,
		failpoint.AfterStaging:  phaseStaging,
		failpoint.BeforePointer: phaseGated,
		failpoint.MidPointer:    phaseHistory,
		failpoint.AfterPointer:  phasePointer,
	}
	points := []string{failpoint.AfterAttempt, failpoint.MidStaging, failpoint.AfterStaging, failpoint.BeforePointer, failpoint.MidPointer, failpoint.AfterPointer}
	var took []time.Duration
	for _, point := range points {
		w := newWorld(t, fx, db)
		for _, ds := range [][]string{both, monOnly, both} {
			before := w.snapshot()
			id := w.newID("kill-" + point)
			code, killed, stderr, _ := w.run([]string{failpoint.Env + "=" + point}, id, ds, 0)
			if !killed {
				t.Fatalf("%s: exit %d, want killed by its failpoint; stderr: %s", point, code, lastLine(stderr))
			}
			c.named[point]++
			phase, bad := w.checkAfterKill(before, id, ds)
			c.add(fmt.Sprintf("%s %v (generation %d)", point, ds, before.ptr.Generation), bad)
			if phase != want[point] {
				t.Errorf("%s: the kill left the warehouse at %q, want %q: the failpoint is not where it says", point, phase, want[point])
			}
			_, bad = w.publish("rerun", ds)
			c.reruns++
			c.add(fmt.Sprintf("rerun after %s %v", point, ds), bad)
		}
		// Calibrate the random moments on uncrashed runs of this binary.
		for range 2 {
			ran, bad := w.publish("calibrate", both)
			took = append(took, ran)
			c.add("calibration publish", bad)
		}
	}
	slices.Sort(took)
	span := took[len(took)/2]

	seed := envUint(t, SeedEnv, uint64(time.Now().UnixNano()))
	kills := int(envUint(t, KillsEnv, defaultKills))
	t.Logf("random kills: seed %d (rerun with %s=%d), %d kills over 0..%v, the median uncrashed publish", seed, SeedEnv, seed, kills, span)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	choices := [][]string{both, monOnly, {tue}}
	var w *world
	for i := 0; c.randomKills() < kills; i++ {
		if i >= 4*kills {
			t.Fatalf("only %d of %d random moments killed a running process; the calibration (%v) is off", c.randomKills(), i, span)
		}
		// A fresh warehouse now and then, so first publishes die too.
		if w == nil || rng.IntN(6) == 0 {
			w = newWorld(t, fx, db)
		}
		ds := choices[rng.IntN(len(choices))]
		delay := time.Duration(rng.Int64N(int64(span))) + time.Microsecond
		before := w.snapshot()
		id := w.newID("random")
		code, killed, stderr, _ := w.run(nil, id, ds, delay)
		if !killed {
			if code != 0 {
				c.add(fmt.Sprintf("random moment %v %v", delay, ds), []string{fmt.Sprintf("exit %d without a kill: %s", code, lastLine(stderr))})
			}
			c.finished++
		}
		phase, bad := w.checkAfterKill(before, id, ds)
		c.add(fmt.Sprintf("random kill at %v %v (generation %d, landed %s)", delay, ds, before.ptr.Generation, phase), bad)
		if killed {
			c.random[phase]++
		}
		_, bad = w.publish("rerun", ds)
		c.reruns++
		c.add(fmt.Sprintf("rerun after a random kill at %v", delay), bad)
	}

	t.Log(c.summary(seed))
	for i, v := range c.violations {
		if i == 20 {
			t.Errorf("... and %d more", len(c.violations)-i)
			break
		}
		t.Errorf("violation: %s", v)
	}
}

func (c *tally) randomKills() int {
	n := 0
	for _, k := range c.random {
		n += k
	}
	return n
}

func envUint(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
