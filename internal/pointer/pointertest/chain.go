package pointertest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// Backdoor writes a store's objects directly, bypassing Swap, to build the
// states that a crash, an operator or an attacker leaves behind.
type Backdoor interface {
	PutHistory(t *testing.T, gen int64, data []byte)
	PutPointer(t *testing.T, data []byte)
	DeletePointer(t *testing.T)
	DeleteHistory(t *testing.T, gen int64)
}

// RunChain runs the parent-chain suite: a store rolls forward exactly the
// history generation an interrupted Swap leaves (a true successor of the
// stored pointer) and refuses, changing nothing, every other history beyond
// the pointer: a planted or renumbered generation, a pointer.json put back
// by hand, a lost pointer.json. A format 1 warehouse is carried forward.
// newStore returns a new, empty store and its backdoor for every call.
func RunChain(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	t.Run("OrphanRollsForward", func(t *testing.T) { testOrphanRollsForward(t, newStore) })
	t.Run("SwapOntoOrphanConflicts", func(t *testing.T) { testSwapOntoOrphan(t, newStore) })
	t.Run("PlantedGenerationRefused", func(t *testing.T) { testPlanted(t, newStore) })
	t.Run("HandEditedPointerRefused", func(t *testing.T) { testHandEdited(t, newStore) })
	t.Run("HandEditedOneBackRefused", func(t *testing.T) { testHandEditedOneBack(t, newStore) })
	t.Run("EditedInPlaceRefused", func(t *testing.T) { testEditedInPlace(t, newStore) })
	t.Run("EditedSideNamedOnlyWhenKnown", func(t *testing.T) { testEditedWhichSide(t, newStore) })
	t.Run("CurrentCopyMissingRefused", func(t *testing.T) { testCurrentCopyMissing(t, newStore) })
	t.Run("LostPointerRefused", func(t *testing.T) { testLostPointer(t, newStore) })
	t.Run("Format1CarriedForward", func(t *testing.T) { testFormat1(t, newStore) })
	t.Run("Format1OrphanRefused", func(t *testing.T) { testFormat1Orphan(t, newStore) })
}

func encode(t *testing.T, p pointer.Pointer) []byte {
	t.Helper()
	b, err := pointer.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func entries(job string, ds ...dates.Date) map[dates.Date]pointer.DateEntry {
	m := map[dates.Date]pointer.DateEntry{}
	for _, d := range ds {
		m[d] = Entry(job, d)
	}
	return m
}

// state is everything a refused publish must leave as it was.
type state struct {
	ptr  pointer.Pointer
	gens []int64
	hist map[int64]pointer.Pointer
}

func snapshot(t *testing.T, s pointer.Store) state {
	t.Helper()
	p, _ := mustLoad(t, s)
	gens, err := s.Generations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := state{ptr: p, gens: gens, hist: map[int64]pointer.Pointer{}}
	for _, g := range gens {
		h, err := s.LoadGeneration(t.Context(), g)
		if err == nil {
			st.hist[g] = h
		}
	}
	return st
}

// refused publishes over a broken chain: the error must wrap
// ErrBrokenChain and mention each of mention, and nothing may change.
func refused(t *testing.T, s pointer.Store, mention ...string) {
	t.Helper()
	before := snapshot(t, s)
	_, err := pointer.Publish(t.Context(), s, Commit("job-after", entries("job-after", Day0.AddDays(5))))
	if !errors.Is(err, pointer.ErrBrokenChain) {
		t.Fatalf("Publish over a broken chain: error %v, want ErrBrokenChain", err)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	after := snapshot(t, s)
	if after.ptr.Digest != before.ptr.Digest || !slices.Equal(after.gens, before.gens) {
		t.Errorf("a refused publish changed the store: pointer %s -> %s, generations %v -> %v",
			before.ptr.Digest, after.ptr.Digest, before.gens, after.gens)
	}
	for g, h := range before.hist {
		if after.hist[g].Digest != h.Digest {
			t.Errorf("history generation %d changed", g)
		}
	}
}

func testOrphanRollsForward(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	d1, d2, d3 := Day0, Day0.AddDays(1), Day0.AddDays(2)
	p1 := mustPublish(t, s, "job-a", d1)
	// A writer killed between its two writes: history 2 taken, pointer at 1.
	bd.PutHistory(t, 2, encode(t, merge(p1, "job-orphan", entries("job-orphan", d2))))
	if cur, _ := mustLoad(t, s); cur.Generation != 1 {
		t.Fatalf("generation %d before the roll forward, want 1", cur.Generation)
	}
	got := mustPublish(t, s, "job-c", d3)
	if got.Generation != 3 {
		t.Errorf("publish landed on generation %d, want 3 (on top of the orphan)", got.Generation)
	}
	for d, job := range map[dates.Date]string{d1: "job-a", d2: "job-orphan", d3: "job-c"} {
		if got.Dates[d].JobID != job {
			t.Errorf("date %s names %q, want %q", d, got.Dates[d].JobID, job)
		}
	}
	assertGenerations(t, s, 1, 2, 3)
	if ok, err := pointer.JobPublished(t.Context(), s, "job-orphan"); err != nil || !ok {
		t.Errorf("JobPublished(job-orphan) = %v, %v; want true", ok, err)
	}
}

// A Swap that finds the orphan makes the pointer equal to it byte for byte
// (so its successor's parent digest holds) and reports a conflict.
func testSwapOntoOrphan(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	p1 := mustPublish(t, s, "job-a", Day0)
	orphanBytes := encode(t, merge(p1, "job-orphan", entries("job-orphan", Day0.AddDays(1))))
	bd.PutHistory(t, 2, orphanBytes)
	cur, v := mustLoad(t, s)
	err := s.Swap(t.Context(), v, merge(cur, "job-c", entries("job-c", Day0)))
	if !errors.Is(err, pointer.ErrConflict) {
		t.Fatalf("Swap onto an orphan: error %v, want ErrConflict", err)
	}
	after, _ := mustLoad(t, s)
	if after.Generation != 2 || after.UpdatedByJobID != "job-orphan" || after.Digest != pointer.Sum(orphanBytes) {
		t.Errorf("after the roll forward: generation %d by %s, digest %s; want the orphan's bytes", after.Generation, after.UpdatedByJobID, after.Digest)
	}
}

// An old generation's content, renumbered and planted one past the pointer,
// is not a successor: refused in both formats it could be written in.
func testPlanted(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	for _, tc := range []struct {
		name    string
		plant   func(old, cur pointer.Pointer) pointer.Pointer
		mention string
	}{
		{"Format2Renumbered", func(old, cur pointer.Pointer) pointer.Pointer {
			p := old.Normalized()
			p.Generation = cur.Generation + 1
			p.Parent = &pointer.Parent{Generation: cur.Generation, SHA256: old.Digest}
			return p
		}, "is not a successor"},
		{"Format1Renumbered", func(old, cur pointer.Pointer) pointer.Pointer {
			return pointer.Pointer{FormatVersion: 1, Generation: cur.Generation + 1, UpdatedByJobID: old.UpdatedByJobID, Dates: old.Normalized().Dates}
		}, "names no parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bd := newStore(t)
			old := mustPublish(t, s, "job-old", Day0)
			mustPublish(t, s, "job-new", Day0)
			cur := mustPublish(t, s, "job-other", Day0.AddDays(1))
			bd.PutHistory(t, cur.Generation+1, encode(t, tc.plant(old, cur)))
			refused(t, s, tc.mention, "pointer-history/4.json")
			// Planted further ahead, it is refused as soon as it is seen.
			s2, bd2 := newStore(t)
			mustPublish(t, s2, "job-old", Day0)
			cur2, _ := mustLoad(t, s2)
			p := tc.plant(old, cur2)
			p.Generation = cur2.Generation + 2
			if p.Parent != nil {
				p.Parent.Generation = p.Generation - 1
			}
			bd2.PutHistory(t, p.Generation, encode(t, p))
			refused(t, s2, "goes up to generation 3")
		})
	}
}

// pointer.json put back to an old generation by hand, behind the history:
// the next write refuses instead of rolling forward over the edit.
func testHandEdited(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	mustPublish(t, s, "job-1", Day0)
	mustPublish(t, s, "job-2", Day0)
	mustPublish(t, s, "job-3", Day0)
	mustPublish(t, s, "job-4", Day0)
	two, err := s.LoadGeneration(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	bd.PutPointer(t, encode(t, two))
	refused(t, s, "generation 4", "pointer.json is at generation 2")
	if cur, _ := mustLoad(t, s); cur.UpdatedByJobID != "job-2" {
		t.Errorf("the hand-edited pointer was replaced: now by %s", cur.UpdatedByJobID)
	}
}

// The edit that looks exactly like an interrupted write: the generation
// just before the newest copied over pointer.json, so the newest history
// copy is its true successor by bytes. It was written after that copy,
// which no interrupted Swap does: refused, naming both generations and
// rollback. (OrphanRollsForward is the interrupted case.)
func testHandEditedOneBack(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	mustPublish(t, s, "job-1", Day0)
	mustPublish(t, s, "job-2", Day0)
	mustPublish(t, s, "job-3", Day0)
	two, err := s.LoadGeneration(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	// S3 keeps modification times in whole seconds: make the edit land in
	// a later second than the history copy, as any human edit does.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	bd.PutPointer(t, encode(t, two))
	refused(t, s, "put back by hand", "generation 2", "pointer-history/3.json", "rollback --to-generation 2")
	_, err = pointer.Publish(t.Context(), s, Commit("job-x", entries("job-x", Day0)))
	if !errors.Is(err, pointer.ErrHandEdited) {
		t.Errorf("error %v, want ErrHandEdited", err)
	}
	if cur, _ := mustLoad(t, s); cur.UpdatedByJobID != "job-2" || cur.Generation != 2 {
		t.Errorf("the hand-edited pointer was rolled forward over: now generation %d by %s", cur.Generation, cur.UpdatedByJobID)
	}
}

// pointer.json edited in place: its generation kept, a figure changed (or
// a date pointed at other files). A write built on it carried the edit into
// a generation of a sound chain, and history credited that writer with it:
// refused, naming the copy, and OwnCopy says so before any work.
func testEditedInPlace(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	mustPublish(t, s, "job-1", Day0)
	mustPublish(t, s, "job-1b", Day0.AddDays(1))
	mustPublish(t, s, "job-2", Day0)
	cur, _ := mustLoad(t, s)
	e := cur.Dates[Day0.AddDays(1)]
	e.EventCount += 1585
	cur.Dates[Day0.AddDays(1)] = e
	bd.PutPointer(t, encode(t, cur))
	edited, _ := mustLoad(t, s)
	if err := pointer.OwnCopy(t.Context(), s, edited, nil); !errors.Is(err, pointer.ErrCopyDiffers) || !strings.Contains(err.Error(), "pointer-history/3.json") {
		t.Errorf("OwnCopy of the edited pointer: %v, want ErrCopyDiffers naming pointer-history/3.json", err)
	}
	refused(t, s, "edited in place", "pointer-history/3.json")
	// Put back, it is sound again.
	three, err := s.LoadGeneration(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	bd.PutPointer(t, encode(t, three))
	mustPublish(t, s, "job-3", Day0)
}

// pointer.json and its copy differ: which was edited is said only when a
// parent record proves it. A figure edited on either side looks the same
// from both, and the advice to copy the history copy over pointer.json
// published the edit when the copy was the edited one: the error then says
// where the two differ and what tells the sound one, and advises neither.
func testEditedWhichSide(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	figure := func(p *pointer.Pointer) {
		e := p.Dates[Day0.AddDays(1)]
		e.EventCount = 4242
		p.Dates[Day0.AddDays(1)] = e
	}
	parent := func(p *pointer.Pointer) {
		p.Parent = &pointer.Parent{Generation: p.Parent.Generation, SHA256: strings.Repeat("0", 64)}
	}
	neutral := []string{"one of the two was edited in place, and nothing tells which", Day0.AddDays(1).String() + " event_count: pointer.json ", "_gate.json"}
	neutral = neutral[:len(neutral):len(neutral)] // each case appends its own
	for _, tc := range []struct {
		name    string
		history bool // edit pointer-history/3.json, not pointer.json
		edit    func(*pointer.Pointer)
		says    []string
		advice  string // the copy the error must not advise, or "" when it names the edited side
	}{
		{"a figure in pointer.json", false, figure, append(neutral, "pointer.json 4242"), "copy pointer-history/3.json back over pointer.json"},
		{"a figure in the copy", true, figure, append(neutral, "pointer-history/3.json 4242"), "copy pointer-history/3.json back over pointer.json"},
		{"the copy's parent record", true, parent, []string{"the history copy was edited", "copy it over pointer-history/3.json"}, ""},
		{"pointer.json's parent record", false, parent, []string{"it was edited in place (its parent record", "copy pointer-history/3.json back over pointer.json"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bd := newStore(t)
			mustPublish(t, s, "job-1", Day0)
			mustPublish(t, s, "job-1b", Day0.AddDays(1))
			mustPublish(t, s, "job-2", Day0)
			cur, _ := mustLoad(t, s)
			tc.edit(&cur)
			if tc.history {
				bd.PutHistory(t, 3, encode(t, cur))
			} else {
				bd.PutPointer(t, encode(t, cur))
			}
			stored, _ := mustLoad(t, s)
			err := pointer.OwnCopy(t.Context(), s, stored, nil)
			if !errors.Is(err, pointer.ErrCopyDiffers) || !errors.Is(err, pointer.ErrBrokenChain) {
				t.Fatalf("OwnCopy: %v, want ErrCopyDiffers", err)
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("OwnCopy: %v\nwant it to say %q", err, want)
				}
			}
			if tc.advice != "" && strings.Contains(err.Error(), tc.advice) {
				t.Errorf("OwnCopy: %v\nadvises %q, which publishes the edit when the other side was edited", err, tc.advice)
			}
		})
	}
}

// pointer.json edited in place and its copy deleted: the only proof of an
// edit gone with the copy, a write carried the edit forward (exit 0). A
// missing current copy is refused, naming it; put back, it is sound again.
func testCurrentCopyMissing(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	mustPublish(t, s, "job-1", Day0)
	mustPublish(t, s, "job-2", Day0.AddDays(1))
	cur, _ := mustLoad(t, s)
	e := cur.Dates[Day0.AddDays(1)]
	e.EventCount = 123
	cur.Dates[Day0.AddDays(1)] = e
	bd.PutPointer(t, encode(t, cur))
	bd.DeleteHistory(t, 2)
	edited, _ := mustLoad(t, s)
	if err := pointer.OwnCopy(t.Context(), s, edited, nil); !errors.Is(err, pointer.ErrBrokenChain) || !strings.Contains(err.Error(), "pointer-history/2.json, the copy written with pointer.json (generation 2), is missing") {
		t.Errorf("OwnCopy with the copy missing: %v, want ErrBrokenChain naming pointer-history/2.json", err)
	}
	refused(t, s, "pointer-history/2.json", "is missing")
	bd.PutHistory(t, 2, encode(t, edited)) // the operator vouches for pointer.json
	mustPublish(t, s, "job-3", Day0)
}

func testLostPointer(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	mustPublish(t, s, "job-1", Day0)
	mustPublish(t, s, "job-2", Day0)
	mustPublish(t, s, "job-3", Day0)
	bd.DeletePointer(t)
	refused(t, s, "goes up to generation 3", "pointer.json is at generation 0", "pointer-history/3.json")
}

// format1 is a generation as an engagement before format 2 wrote it.
func format1(gen int64, job string, d dates.Date) pointer.Pointer {
	return pointer.Pointer{FormatVersion: 1, Generation: gen, UpdatedByJobID: job, Dates: entries(job, d)}
}

func testFormat1(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	bd.PutHistory(t, 1, encode(t, format1(1, "job-v1a", Day0)))
	gen2 := format1(2, "job-v1b", Day0.AddDays(1))
	gen2.Dates[Day0] = Entry("job-v1a", Day0)
	two := encode(t, gen2)
	bd.PutHistory(t, 2, two)
	bd.PutPointer(t, two)
	got := mustPublish(t, s, "job-v2", Day0.AddDays(2))
	if got.FormatVersion != pointer.FormatVersion || got.Generation != 3 {
		t.Fatalf("publish over format 1 wrote format %d generation %d, want %d and 3", got.FormatVersion, got.Generation, pointer.FormatVersion)
	}
	if want := (pointer.Parent{Generation: 2, SHA256: pointer.Sum(two)}); got.Parent == nil || *got.Parent != want {
		t.Errorf("parent = %+v, want the format 1 generation's %+v", got.Parent, want)
	}
	for d, job := range map[dates.Date]string{Day0: "job-v1a", Day0.AddDays(1): "job-v1b", Day0.AddDays(2): "job-v2"} {
		if got.Dates[d].JobID != job {
			t.Errorf("date %s names %q, want %q", d, got.Dates[d].JobID, job)
		}
	}
	// The format 1 history stays readable, byte for byte.
	h, err := s.LoadGeneration(t.Context(), 2)
	if err != nil || h.FormatVersion != 1 || h.Digest != pointer.Sum(two) {
		t.Errorf("format 1 generation 2 after the upgrade: format %d, %v", h.FormatVersion, err)
	}
	if ok, err := pointer.JobPublished(t.Context(), s, "job-v1a"); err != nil || !ok {
		t.Errorf("JobPublished(job-v1a) = %v, %v; want true", ok, err)
	}
}

// An interrupted format 1 write cannot be proven a successor (it names no
// parent), so it is refused rather than rolled forward on trust.
func testFormat1Orphan(t *testing.T, newStore func(t *testing.T) (pointer.Store, Backdoor)) {
	s, bd := newStore(t)
	one := encode(t, format1(1, "job-v1a", Day0))
	bd.PutHistory(t, 1, one)
	bd.PutPointer(t, one)
	bd.PutHistory(t, 2, encode(t, format1(2, "job-v1b", Day0.AddDays(1))))
	refused(t, s, "names no parent", "pointer-history/2.json")
	if cur, _ := mustLoad(t, s); !bytes.Equal(encode(t, cur), one) {
		t.Errorf("pointer.json changed")
	}
}

// RunStress runs rounds of writers concurrent publishers, each publishing
// its own date (the same dates every round, so the pointer stays the size
// of one round): every publish must succeed, every generation must be one
// writer's (its history copy changes exactly that writer's date and keeps
// every other date of the generation before it), and no date may be lost.
func RunStress(t *testing.T, s pointer.Store, rounds, writers int) {
	ctx := t.Context()
	for r := range rounds {
		start := time.Now()
		before, _ := mustLoad(t, s)
		jobs := make([]string, writers)
		days := make([]dates.Date, writers)
		for i := range writers {
			jobs[i] = fmt.Sprintf("job-r%d-w%d", r, i)
			days[i] = Day0.AddDays(i)
		}
		publishAll(t, s, jobs, days)
		cur, _ := mustLoad(t, s)
		if cur.Generation != before.Generation+int64(writers) {
			t.Fatalf("round %d: generation %d after %d publishes from %d", r, cur.Generation, writers, before.Generation)
		}
		prev := before
		for g := before.Generation + 1; g <= cur.Generation; g++ {
			h, err := s.LoadGeneration(ctx, g)
			if err != nil {
				t.Fatalf("round %d: generation %d: %v", r, g, err)
			}
			if !pointer.Successor(prev, h) {
				t.Errorf("round %d: generation %d is not a successor of %d", r, g, g-1)
			}
			changed, added := 0, 0
			for d, e := range h.Dates {
				old, ok := prev.Dates[d]
				if !ok {
					added++
				}
				if !ok || old.JobID != e.JobID {
					changed++
					if e.JobID != h.UpdatedByJobID {
						t.Errorf("round %d: generation %d by %s changed %s to %s", r, g, h.UpdatedByJobID, d, e.JobID)
					}
				}
			}
			if changed != 1 || len(h.Dates) != len(prev.Dates)+added {
				t.Errorf("round %d: generation %d changed %d dates and holds %d (before %d); want one date changed, none lost", r, g, changed, len(h.Dates), len(prev.Dates))
			}
			prev = h
		}
		for i := range writers {
			if cur.Dates[days[i]].JobID != jobs[i] {
				t.Errorf("round %d: date %s lost: names %q, want %s", r, days[i], cur.Dates[days[i]].JobID, jobs[i])
			}
		}
		if t.Failed() {
			return
		}
		t.Logf("round %d: %d publishes in %v", r, writers, time.Since(start).Round(time.Millisecond))
	}
}
