// Package pointertest is the conformance suite every pointer.Store must
// pass, and fault-injecting Store wrappers for tests that need a store to
// fail in a particular way.
package pointertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// Day0 is the first event date the suite publishes.
var Day0 = dates.MustParse("2026-03-02")

// Entry returns a plausible, valid entry for jobID on date d; distinct jobs
// and dates give distinct entries, so an entry read back names its writer.
func Entry(jobID string, d dates.Date) pointer.DateEntry {
	stage := "staging/job_id=" + jobID
	return pointer.DateEntry{
		JobID:                jobID,
		ManifestID:           "dim-2026-03-03",
		EnrollmentSnapshotID: "enr-2026-03-03",
		FactFiles: []pointer.File{
			{Path: fmt.Sprintf("%s/fact_lesson_engagement/event_date=%s/part-0.parquet", stage, d), Bytes: 1234, Rows: 45},
			{Path: fmt.Sprintf("%s/fact_lesson_engagement/event_date=%s/part-1.parquet", stage, d), Bytes: 999, Rows: 30},
		},
		CourseDayFiles: []pointer.File{
			{Path: fmt.Sprintf("%s/course_day/event_date=%s/part-0.parquet", stage, d), Bytes: 321, Rows: 4},
		},
		EventCount:         1000,
		UnknownLessonCount: 10,
		UnknownLessonRate:  0.01,
		GateReport:         stage + "/_gate.json",
	}
}

// Run runs the conformance suite. newStore must return a new, empty store
// for every call; each subtest uses its own.
func Run(t *testing.T, newStore func(t *testing.T) pointer.Store) {
	t.Run("EmptyLoad", func(t *testing.T) { testEmptyLoad(t, newStore(t)) })
	t.Run("FirstSwap", func(t *testing.T) { testFirstSwap(t, newStore(t)) })
	t.Run("StaleVersion", func(t *testing.T) { testStaleVersion(t, newStore) })
	t.Run("GenerationGap", func(t *testing.T) { testGenerationGap(t, newStore(t)) })
	t.Run("HistoryMatchesEachGeneration", func(t *testing.T) { testHistory(t, newStore(t)) })
	t.Run("PublishMergesOnlyItsDates", func(t *testing.T) { testMergesOnlyItsDates(t, newStore(t)) })
	t.Run("ConcurrentDifferentDates", func(t *testing.T) { testConcurrentDifferentDates(t, newStore(t)) })
	t.Run("ConcurrentSameDate", func(t *testing.T) { testConcurrentSameDate(t, newStore(t)) })
	t.Run("JobPublished", func(t *testing.T) { testJobPublished(t, newStore(t)) })
	t.Run("UnknownOutcome", func(t *testing.T) { testUnknownOutcome(t, newStore) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelled(t, newStore(t)) })
	t.Run("Expire", func(t *testing.T) { testExpire(t, newStore(t)) })
}

// testExpire: an expired generation is gone from the history, the current
// one and anything beyond it cannot expire, and publishing goes on.
func testExpire(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	for i := range 4 {
		mustPublish(t, s, fmt.Sprintf("job-%d", i+1), Day0.AddDays(i%2))
	}
	for _, g := range []int64{4, 5, 0} {
		if err := s.Expire(ctx, g); err == nil {
			t.Errorf("Expire(%d) with the pointer at generation 4: no error", g)
		}
	}
	for _, g := range []int64{1, 2, 2} {
		if err := s.Expire(ctx, g); err != nil {
			t.Fatalf("Expire(%d): %v", g, err)
		}
	}
	gens, err := s.Generations(ctx)
	if err != nil || !slices.Equal(gens, []int64{3, 4}) {
		t.Errorf("Generations after expiring 1 and 2 = %v, %v; want [3 4]", gens, err)
	}
	if _, err := s.LoadGeneration(ctx, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadGeneration(1) after expiry: %v, want fs.ErrNotExist", err)
	}
	if ok, err := pointer.JobPublished(ctx, s, "job-1"); err != nil || ok {
		t.Errorf("JobPublished(job-1) after its generation expired = %v, %v; want false", ok, err)
	}
	if p := mustPublish(t, s, "job-5", Day0); p.Generation != 5 {
		t.Errorf("publish after expiry took generation %d, want 5", p.Generation)
	}
}

func testEmptyLoad(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	p, v, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if v != pointer.NoVersion {
		t.Errorf("version = %q, want NoVersion", v)
	}
	if p.Generation != 0 || p.FormatVersion != pointer.FormatVersion || p.Dates == nil || len(p.Dates) != 0 || p.UpdatedByJobID != "" {
		t.Errorf("Load = %+v, want generation 0, format 1, empty non-nil dates", p)
	}
	gens, err := s.Generations(ctx)
	if err != nil {
		t.Fatalf("Generations: %v", err)
	}
	if len(gens) != 0 {
		t.Errorf("Generations = %v, want none", gens)
	}
	if _, err := s.LoadGeneration(ctx, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadGeneration(1) error = %v, want fs.ErrNotExist", err)
	}
	if ok, err := pointer.JobPublished(ctx, s, "job-a"); err != nil || ok {
		t.Errorf("JobPublished on empty store = %v, %v; want false, nil", ok, err)
	}
}

func testFirstSwap(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	cur, v, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	next := merge(cur, "job-a", map[dates.Date]pointer.DateEntry{Day0: Entry("job-a", Day0)})
	if err := s.Swap(ctx, v, next); err != nil {
		t.Fatalf("Swap from %q: %v", v, err)
	}
	got, v1 := mustLoad(t, s)
	if v1 == pointer.NoVersion {
		t.Errorf("version after first swap is NoVersion")
	}
	assertEqual(t, "pointer after first swap", got, next)
	if got.Generation != 1 {
		t.Errorf("generation = %d, want 1", got.Generation)
	}
	assertGenerations(t, s, 1)
	h, err := s.LoadGeneration(ctx, 1)
	if err != nil {
		t.Fatalf("LoadGeneration(1): %v", err)
	}
	assertEqual(t, "history generation 1", h, next)
}

// testStaleVersion swaps from versions that were current once but are no
// longer: each must be refused with ErrConflict and write nothing.
func testStaleVersion(t *testing.T, newStore func(t *testing.T) pointer.Store) {
	for _, tc := range []struct {
		name string
		// stale picks which of the loaded states (0 = empty, 1 = after
		// generation 1) the late writer read.
		stale int
	}{
		{"FromNoVersion", 0},
		{"OneGenerationBehind", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			var seen []pointer.Pointer
			var versions []pointer.Version
			for _, job := range []string{"job-a", "job-b"} {
				p, v := mustLoad(t, s)
				seen, versions = append(seen, p), append(versions, v)
				if err := s.Swap(ctx, v, merge(p, job, map[dates.Date]pointer.DateEntry{Day0: Entry(job, Day0)})); err != nil {
					t.Fatalf("Swap %s: %v", job, err)
				}
			}
			before, vBefore := mustLoad(t, s)

			late := merge(seen[tc.stale], "job-late", map[dates.Date]pointer.DateEntry{Day0.AddDays(1): Entry("job-late", Day0.AddDays(1))})
			err := s.Swap(ctx, versions[tc.stale], late)
			if !errors.Is(err, pointer.ErrConflict) {
				t.Fatalf("stale Swap error = %v, want ErrConflict", err)
			}
			after, vAfter := mustLoad(t, s)
			if vAfter != vBefore {
				t.Errorf("version moved from %q to %q on a conflict", vBefore, vAfter)
			}
			assertEqual(t, "pointer after conflict", after, before)
			assertGenerations(t, s, 1, 2)
			for g := int64(1); g <= 2; g++ {
				h, err := s.LoadGeneration(ctx, g)
				if err != nil {
					t.Fatalf("LoadGeneration(%d): %v", g, err)
				}
				if h.UpdatedByJobID == "job-late" {
					t.Errorf("history generation %d was overwritten by the losing writer", g)
				}
			}
		})
	}
}

// testGenerationGap: a next pointer that skips a generation is refused
// (with any error) and writes nothing.
func testGenerationGap(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	p1 := mustPublish(t, s, "job-a", Day0)
	_, v := mustLoad(t, s)
	next := merge(p1, "job-gap", map[dates.Date]pointer.DateEntry{Day0: Entry("job-gap", Day0)})
	next.Generation++
	if err := s.Swap(ctx, v, next); err == nil {
		t.Fatalf("Swap to generation %d from generation 1 succeeded", next.Generation)
	}
	got, _ := mustLoad(t, s)
	assertEqual(t, "pointer after refused swap", got, p1)
	assertGenerations(t, s, 1)
}

func testHistory(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	var wrote []pointer.Pointer
	for i := range 5 {
		job := fmt.Sprintf("job-%d", i)
		wrote = append(wrote, mustPublish(t, s, job, Day0.AddDays(i%2)))
	}
	assertGenerations(t, s, 1, 2, 3, 4, 5)
	for i, want := range wrote {
		if want.Generation != int64(i+1) {
			t.Errorf("publish %d wrote generation %d, want %d", i, want.Generation, i+1)
		}
		h, err := s.LoadGeneration(ctx, want.Generation)
		if err != nil {
			t.Fatalf("LoadGeneration(%d): %v", want.Generation, err)
		}
		assertEqual(t, fmt.Sprintf("history generation %d", want.Generation), h, want)
	}
	cur, _ := mustLoad(t, s)
	assertEqual(t, "current pointer", cur, wrote[len(wrote)-1])
}

func testMergesOnlyItsDates(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	monday, tuesday, wednesday := Day0, Day0.AddDays(1), Day0.AddDays(2)
	if _, err := publish(ctx, s, "job-a", map[dates.Date]pointer.DateEntry{
		monday:  Entry("job-a", monday),
		tuesday: Entry("job-a", tuesday),
	}); err != nil {
		t.Fatalf("Publish job-a: %v", err)
	}
	got, err := publish(ctx, s, "job-b", map[dates.Date]pointer.DateEntry{
		monday:    Entry("job-b", monday),
		wednesday: Entry("job-b", wednesday),
	})
	if err != nil {
		t.Fatalf("Publish job-b: %v", err)
	}
	cur, _ := mustLoad(t, s)
	assertEqual(t, "Publish result vs Load", cur, got)
	want := map[dates.Date]pointer.DateEntry{
		monday:    Entry("job-b", monday),
		tuesday:   Entry("job-a", tuesday), // the neighbour: untouched
		wednesday: Entry("job-b", wednesday),
	}
	assertEqual(t, "dates", cur.Dates, want)
	if cur.Generation != 2 || cur.UpdatedByJobID != "job-b" {
		t.Errorf("generation %d updated by %q, want 2 by job-b", cur.Generation, cur.UpdatedByJobID)
	}
}

// publishAll publishes jobs[i] for days[i] all at once and returns what
// each Publish returned.
func publishAll(t *testing.T, s pointer.Store, jobs []string, days []dates.Date) []pointer.Pointer {
	ctx := t.Context()
	results := make([]pointer.Pointer, len(jobs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			<-start
			p, err := publish(ctx, s, jobs[i], map[dates.Date]pointer.DateEntry{days[i]: Entry(jobs[i], days[i])})
			if err != nil {
				t.Errorf("Publish %s: %v", jobs[i], err)
			}
			results[i] = p
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Each job's result must be exactly the history copy of its generation,
	// and no two jobs may claim one generation.
	owner := map[int64]string{}
	for i, p := range results {
		if prev, ok := owner[p.Generation]; ok {
			t.Errorf("jobs %s and %s both wrote generation %d", prev, jobs[i], p.Generation)
		}
		owner[p.Generation] = jobs[i]
		h, err := s.LoadGeneration(ctx, p.Generation)
		if err != nil {
			t.Fatalf("LoadGeneration(%d): %v", p.Generation, err)
		}
		assertEqual(t, fmt.Sprintf("history of %s's generation %d", jobs[i], p.Generation), h, p)
	}
	return results
}

func testConcurrentDifferentDates(t *testing.T, s pointer.Store) {
	const n = 8
	var jobs []string
	var days []dates.Date
	for i := range n {
		jobs = append(jobs, fmt.Sprintf("job-%d", i))
		days = append(days, Day0.AddDays(i))
	}
	publishAll(t, s, jobs, days)
	cur, _ := mustLoad(t, s)
	if cur.Generation != n {
		t.Errorf("generation = %d, want %d (one per publish)", cur.Generation, n)
	}
	want := map[dates.Date]pointer.DateEntry{}
	for i := range n {
		want[days[i]] = Entry(jobs[i], days[i])
	}
	assertEqual(t, "dates after concurrent publishes", cur.Dates, want)
	assertGenerations(t, s, 1, 2, 3, 4, 5, 6, 7, 8)
}

func testConcurrentSameDate(t *testing.T, s pointer.Store) {
	const n = 4
	var jobs []string
	var days []dates.Date
	for i := range n {
		jobs = append(jobs, fmt.Sprintf("job-%d", i))
		days = append(days, Day0)
	}
	publishAll(t, s, jobs, days)
	cur, _ := mustLoad(t, s)
	if cur.Generation != n {
		t.Errorf("generation = %d, want %d", cur.Generation, n)
	}
	if len(cur.Dates) != 1 {
		t.Fatalf("dates = %v, want only %s", cur.Dates, Day0)
	}
	got := cur.Dates[Day0]
	matches := 0
	for _, job := range jobs {
		if reflect.DeepEqual(got, normalized(Entry(job, Day0))) {
			matches++
		}
	}
	if matches != 1 {
		t.Errorf("entry for %s matches %d jobs' entries intact, want exactly 1: %+v", Day0, matches, got)
	}
	if got.JobID != cur.UpdatedByJobID {
		t.Errorf("entry names %s but the last writer is %s", got.JobID, cur.UpdatedByJobID)
	}
	assertGenerations(t, s, 1, 2, 3, 4)
}

func testJobPublished(t *testing.T, s pointer.Store) {
	ctx := t.Context()
	mustPublish(t, s, "job-old", Day0)          // later overwritten: history only
	mustPublish(t, s, "job-new", Day0)          // stays as Day0's entry
	mustPublish(t, s, "job-b", Day0.AddDays(1)) // stays as Day0+1's entry
	mustPublish(t, s, "job-c", Day0.AddDays(2)) // the current updater
	for _, tc := range []struct {
		job  string
		want bool
	}{
		{"job-c", true},   // current updated_by_job_id
		{"job-new", true}, // current entry only
		{"job-old", true}, // retained history only
		{"job-never", false},
		{"job-ol", false}, // prefixes are not names
	} {
		got, err := pointer.JobPublished(ctx, s, tc.job)
		if err != nil {
			t.Fatalf("JobPublished(%s): %v", tc.job, err)
		}
		if got != tc.want {
			t.Errorf("JobPublished(%s) = %v, want %v", tc.job, got, tc.want)
		}
	}
}

// testUnknownOutcome drives Publish through Swap failures that do not say
// whether anything was written.
func testUnknownOutcome(t *testing.T, newStore func(t *testing.T) pointer.Store) {
	for _, tc := range []struct {
		name   string
		wrap   func(pointer.Store) pointer.Store
		landed bool  // the underlying store holds the job's write afterwards
		errIs  error // nil: Publish must succeed
	}{
		{"LostReplyLanded", func(s pointer.Store) pointer.Store { return LostReply{Store: s} }, true, nil},
		{"FailedWithoutWriting", func(s pointer.Store) pointer.Store { return FailingSwap{Store: s} }, false, ErrInjected},
		{"BlackoutNotLanded", func(s pointer.Store) pointer.Store { return &Blackout{Store: s} }, false, pointer.ErrOutcomeUnknown},
		{"BlackoutLanded", func(s pointer.Store) pointer.Store { return &Blackout{Store: s, Lands: true} }, true, pointer.ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			before := mustPublish(t, s, "job-seed", Day0)
			day := Day0.AddDays(1)
			got, err := publish(ctx, tc.wrap(s), "job-x", map[dates.Date]pointer.DateEntry{day: Entry("job-x", day)})

			if tc.errIs == nil {
				if err != nil {
					t.Fatalf("Publish: %v, want nil after re-reading a landed write", err)
				}
			} else {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("Publish error = %v, want one wrapping %v", err, tc.errIs)
				}
				if errors.Is(err, pointer.ErrConflict) {
					t.Errorf("Publish error %v wraps ErrConflict, but nothing conflicted", err)
				}
				if tc.errIs != pointer.ErrOutcomeUnknown && errors.Is(err, pointer.ErrOutcomeUnknown) {
					t.Errorf("Publish error %v wraps ErrOutcomeUnknown, but the re-read could tell", err)
				}
			}

			cur, _ := mustLoad(t, s)
			if tc.landed {
				want := merge(before, "job-x", map[dates.Date]pointer.DateEntry{day: Entry("job-x", day)})
				assertEqual(t, "pointer after landed write", cur, want)
				if err == nil {
					assertEqual(t, "Publish result", got, want)
				}
				assertGenerations(t, s, 1, 2)
			} else {
				assertEqual(t, "pointer after failed write", cur, before)
				assertGenerations(t, s, 1)
			}
		})
	}
}

func testCancelled(t *testing.T, s pointer.Store) {
	before := mustPublish(t, s, "job-a", Day0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := publish(ctx, s, "job-b", map[dates.Date]pointer.DateEntry{Day0: Entry("job-b", Day0)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a cancelled context: error %v, want context.Canceled", err)
	}
	cur, _ := mustLoad(t, s)
	assertEqual(t, "pointer after cancelled publish", cur, before)
}

func mustLoad(t *testing.T, s pointer.Store) (pointer.Pointer, pointer.Version) {
	t.Helper()
	p, v, err := s.Load(t.Context())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p, v
}

func mustPublish(t *testing.T, s pointer.Store, jobID string, d dates.Date) pointer.Pointer {
	t.Helper()
	p, err := publish(t.Context(), s, jobID, map[dates.Date]pointer.DateEntry{d: Entry(jobID, d)})
	if err != nil {
		t.Fatalf("Publish %s: %v", jobID, err)
	}
	return p
}

func assertGenerations(t *testing.T, s pointer.Store, want ...int64) {
	t.Helper()
	got, err := s.Generations(t.Context())
	if err != nil {
		t.Fatalf("Generations: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Generations = %v, want %v", got, want)
	}
}

// normalized is e as it reads back from a store: non-nil file lists.
func normalized(e pointer.DateEntry) pointer.DateEntry {
	return merge(pointer.Pointer{}, "x", map[dates.Date]pointer.DateEntry{0: e}).Dates[0]
}

// WrittenAt and WriterVersion are what every suite commit records.
var (
	WrittenAt     = time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)
	WriterVersion = "pointertest"
)

// Commit is a publish of entries by jobID as the suite writes it.
func Commit(jobID string, entries map[dates.Date]pointer.DateEntry) pointer.Commit {
	return pointer.Commit{JobID: jobID, Entries: entries, WrittenAt: WrittenAt, WriterVersion: WriterVersion}
}

func merge(cur pointer.Pointer, jobID string, entries map[dates.Date]pointer.DateEntry) pointer.Pointer {
	return pointer.Merge(cur, Commit(jobID, entries))
}

func publish(ctx context.Context, s pointer.Store, jobID string, entries map[dates.Date]pointer.DateEntry) (pointer.Pointer, error) {
	return pointer.Publish(ctx, s, Commit(jobID, entries))
}

// assertEqual compares after normalising pointers and entries to their
// read-back form, printing both as JSON when they differ.
func assertEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		switch v := v.(type) {
		case pointer.Pointer:
			p := v.Normalized()
			p.Digest = ""
			return p
		case map[dates.Date]pointer.DateEntry:
			out := map[dates.Date]pointer.DateEntry{}
			for d, e := range v {
				out[d] = normalized(e)
			}
			return out
		}
		return v
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs:\n got: %+v\nwant: %+v", what, g, w)
	}
}

// ParquetLike returns the bytes of a file that is Parquet as far as its
// footer goes: pad bytes of data, then a footer that says rows rows (the
// one field a file check reads). Its length is pad+15 for rows under 64.
func ParquetLike(pad int, rows int64) []byte {
	// Thrift compact: field 3 (num_rows) an i64, zigzag varint, stop.
	meta := []byte{0x36}
	for z := uint64(rows<<1) ^ uint64(rows>>63); ; z >>= 7 {
		if z < 0x80 {
			meta = append(meta, byte(z))
			break
		}
		meta = append(meta, byte(z)|0x80)
	}
	meta = append(meta, 0)
	out := append([]byte("PAR1"), make([]byte, pad)...)
	out = append(out, meta...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(meta)))
	return append(out, "PAR1"...)
}
