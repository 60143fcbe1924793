package publishtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

func testCrashBeforePointer(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "before-crash", mon, tue))
	before := Get(t, wh, "pointer.json")
	rawHash := Hash(t, fx.In(), "")
	points := []string{failpoint.AfterAttempt, failpoint.MidStaging, failpoint.AfterStaging, failpoint.BeforePointer}
	if h.Engine == "spark" {
		// Only mid-staging is the engine's own moment on a cluster: the
		// process dies while the server is still writing for it. The other
		// points fall before the engine starts or after it is done, the
		// same driver code whichever engine staged, and the DuckDB
		// harnesses and the crash matrix kill there (three Spark
		// publishes, about 45 s of the suite).
		points = []string{failpoint.MidStaging}
	}
	for _, point := range points {
		id := "crash-" + point
		code, _, stderr := h.Run(t, []string{failpoint.Env + "=" + point}, fx.Args(wh, id, mon, tue)...)
		if code != -1 {
			t.Fatalf("%s: process exited %d, want killed by SIGKILL; stderr: %s", point, code, stderr)
		}
		if after := Get(t, wh, "pointer.json"); !bytes.Equal(before, after) {
			t.Errorf("%s: pointer.json changed by a process killed before the pointer write", point)
		}
		if Get(t, wh, warehouse.AttemptPath(id)) == nil {
			t.Errorf("%s: no _attempt.json: it must be written before anything else", point)
		}
		if sums := FactSum(t, wh); sums[d(mon)] != fx.Expected.ByDate[d(mon)].Events {
			t.Errorf("%s: visible sum %d after the crash, want the previous %d", point, sums[d(mon)], fx.Expected.ByDate[d(mon)].Events)
		}
	}
	if Hash(t, fx.In(), "") != rawHash {
		t.Errorf("inputs changed")
	}
	// Since the crashes, the snapshot was rewritten in place under the
	// same pin, the hot course's enrollments dropped: the retry must read
	// it. Spark shares its cache across sessions and finds an entry by its
	// plan: the grain a killed attempt cached (it never ran its UNCACHE)
	// was read by the retry, and the old enrollments published, exit 0.
	rewrite(t, DBFor(t, fx.In()), fx.In(), "enrollments/part-0.parquet", fmt.Sprintf("SELECT * FROM f WHERE course_id <> '%s'", fx.Expected.HotCourse))
	// The retry is a new job id, and it publishes.
	code, _, stderr := h.Run(t, nil, fx.Args(wh, "after-crash", mon, tue)...)
	if code != 0 {
		t.Fatalf("rerun after crashes: exit %d: %s", code, stderr)
	}
	if got := LoadPointer(t, wh).Dates[d(mon)].JobID; got != "after-crash" {
		t.Errorf("pointer names %s after the rerun, want after-crash", got)
	}
	if cd := VisibleCourseDay(t, wh)[d(mon)][fx.Expected.HotCourse]; cd.Enrolled != 0 || cd.Events == 0 {
		t.Errorf("%s on %s after the snapshot dropped its enrollments: %d events, %d enrolled; want some events, none enrolled",
			fx.Expected.HotCourse, mon, cd.Events, cd.Enrolled)
	}
}

// testCrashMidPointer kills the process after the history copy of the new
// generation is written and before pointer.json is replaced: readers keep
// the old generation, and the next publish rolls the crashed one forward
// before adding its own dates, so nothing is lost and nothing is mixed.
func testCrashMidPointer(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "gen-1", mon, tue))
	before := Get(t, wh, "pointer.json")
	code, _, stderr := h.Run(t, []string{failpoint.Env + "=" + failpoint.MidPointer}, fx.Args(wh, "mid-pointer", mon)...)
	if code != -1 {
		t.Fatalf("exit %d, want killed; stderr: %s", code, stderr)
	}
	if !bytes.Equal(before, Get(t, wh, "pointer.json")) {
		t.Fatalf("pointer.json changed although the process died before replacing it")
	}
	if Get(t, wh, "pointer-history/2.json") == nil {
		t.Fatalf("no history copy of generation 2")
	}
	// Its id again: published (exit 4), and the refusal says readers do
	// not see it until the next write rolls it forward.
	code, _, stderr = h.Run(t, nil, fx.Args(wh, "mid-pointer", mon)...)
	if code != exitcode.AlreadyPublished || !strings.Contains(stderr, "which pointer.json does not show yet") {
		t.Errorf("the interrupted job's id again: exit %d, want 4 saying pointer.json does not show it yet\n%s", code, stderr)
	}
	h.MustPublish(t, fx.Job(t, wh, "after-mid", tue))
	// Its record names the generation it built on, the committed 2, not
	// pointer.json's 1 (an audit read it as a publish that ignored 2).
	var rec struct {
		Base int64 `json:"base_generation"`
	}
	if err := json.Unmarshal(Get(t, wh, "staging/job_id=after-mid/_attempt.json"), &rec); err != nil || rec.Base != 2 {
		t.Errorf("after-mid's base_generation %d (%v), want 2", rec.Base, err)
	}
	p := LoadPointer(t, wh)
	if p.Generation != 3 {
		t.Errorf("generation %d, want 3 (the crashed generation 2 rolled forward, then this one)", p.Generation)
	}
	if got := p.Dates[d(mon)].JobID; got != "mid-pointer" {
		t.Errorf("%s names %s, want the rolled-forward mid-pointer", mon, got)
	}
	if got := p.Dates[d(tue)].JobID; got != "after-mid" {
		t.Errorf("%s names %s, want after-mid", tue, got)
	}
	if sums := FactSum(t, wh); sums[d(mon)] != fx.Expected.ByDate[d(mon)].Events || sums[d(tue)] != fx.Expected.ByDate[d(tue)].Events {
		t.Errorf("visible sums %v, want the fixture once", sums)
	}
}
