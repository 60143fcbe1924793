package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/internal/storage/storagetest"
)

// The one pointer store, on both backends, passes the same suites.
var backends = map[string]func(t *testing.T) storage.Bucket{
	"local": func(t *testing.T) storage.Bucket { return local.New(t.TempDir(), local.Options{}) },
	"s3":    func(t *testing.T) storage.Bucket { return s3test.Bucket(t) },
}

// bucketBackdoor writes a store's objects with plain PUTs, as a crash, an
// operator or an attacker would leave them, on any backend.
type bucketBackdoor struct{ b storage.Bucket }

func (d bucketBackdoor) PutHistory(t *testing.T, gen int64, data []byte) {
	t.Helper()
	if _, err := d.b.Put(t.Context(), "pointer-history/"+itoa(gen)+".json", data, storage.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func (d bucketBackdoor) PutPointer(t *testing.T, data []byte) {
	t.Helper()
	if _, err := d.b.Put(t.Context(), "pointer.json", data, storage.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func (d bucketBackdoor) DeletePointer(t *testing.T) {
	t.Helper()
	if err := d.b.Delete(t.Context(), "pointer.json"); err != nil {
		t.Fatal(err)
	}
}

func (d bucketBackdoor) DeleteHistory(t *testing.T, gen int64) {
	t.Helper()
	if err := d.b.Delete(t.Context(), "pointer-history/"+itoa(gen)+".json"); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string {
	b := []byte{}
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestS3Conformance(t *testing.T) {
	pointertest.Run(t, func(t *testing.T) pointer.Store { return objstore.New(s3test.Bucket(t)) })
}

func TestS3Chain(t *testing.T) {
	pointertest.RunChain(t, func(t *testing.T) (pointer.Store, pointertest.Backdoor) {
		b := s3test.Bucket(t)
		return objstore.New(b), bucketBackdoor{b}
	})
}

// 64 concurrent swappers per round: exactly one winner per generation and
// no lost date. Six rounds on S3 (384 publishes), where nothing but
// conditional requests keeps the writers apart; three locally, where a
// lock serialises them. The test command runs it alone, so its rounds are
// CI's minutes: ten took 67 s.
func TestStress(t *testing.T) {
	rounds := map[string]int{"s3": 6, "local": 3}
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			pointertest.RunStress(t, objstore.New(newBucket(t)), rounds[name], 64)
		})
	}
}

// racingPointer moves pointer.json (as an operator's hand edit would) just
// before the store's conditional replace of it, so that replace meets a
// 412: the write must not be taken for a success, nor retried over the
// edit.
type racingPointer struct {
	storage.Bucket
	edit  []byte
	fired bool
}

func (r *racingPointer) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if key == "pointer.json" && c.IfMatch != "" && !r.fired {
		r.fired = true
		if _, err := r.Bucket.Put(ctx, key, r.edit, storage.Cond{}); err != nil {
			return storage.Attrs{}, err
		}
	}
	return r.Bucket.Put(ctx, key, data, c)
}

func TestPreconditionFailedIsNeverSuccess(t *testing.T) {
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			s := objstore.New(b)
			p1, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-1", map[dates.Date]pointer.DateEntry{pointertest.Day0: pointertest.Entry("job-1", pointertest.Day0)}))
			if err != nil {
				t.Fatal(err)
			}
			// The hand edit: generation 1's content, written back with a
			// different entry, so its bytes (and version) change.
			edited := p1.Normalized()
			e := edited.Dates[pointertest.Day0]
			e.EventCount++
			edited.Dates[pointertest.Day0] = e
			edit, err := pointer.Encode(edited)
			if err != nil {
				t.Fatal(err)
			}
			racing := &racingPointer{Bucket: b, edit: edit}
			_, err = pointer.Publish(t.Context(), objstore.New(racing), pointertest.Commit("job-2", map[dates.Date]pointer.DateEntry{pointertest.Day0: pointertest.Entry("job-2", pointertest.Day0)}))
			if err == nil {
				t.Fatalf("a publish whose pointer replace met 412 reported success")
			}
			if errors.Is(err, pointer.ErrConflict) {
				t.Errorf("gave up as a plain conflict: %v", err)
			}
			cur, _, lerr := s.Load(t.Context())
			if lerr != nil || cur.UpdatedByJobID != "job-1" || cur.Dates[pointertest.Day0].EventCount != e.EventCount {
				t.Errorf("pointer.json after the refused replace: %+v, %v; want the edit kept", cur.Dates[pointertest.Day0], lerr)
			}
		})
	}
}

// TestPausedWriterOvertaken: on S3 (no lock), a writer pauses between its
// commit (the history copy) and its pointer.json replace; meanwhile another
// writer rolls its generation forward and builds the next one on it. The
// paused writer's replace then fails its condition, and that is its write
// done, not the store misbehaving: the Swap returns nil (the caller's
// re-read follows the chain), where it reported an error that the job
// logged as "the pointer store reported an error for this job's write".
func TestPausedWriterOvertaken(t *testing.T) {
	b := s3test.Bucket(t)
	s := objstore.New(b)
	d1, d2, d3 := pointertest.Day0, pointertest.Day0.AddDays(1), pointertest.Day0.AddDays(2)
	if _, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-a", map[dates.Date]pointer.DateEntry{d1: pointertest.Entry("job-a", d1)})); err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool // the other writer's own swap passes the hook too
	remove := failpoint.SetHook(failpoint.MidPointer, func() {
		if fired.Swap(true) {
			return
		}
		if _, err := pointer.Publish(context.Background(), objstore.New(b), pointertest.Commit("job-c", map[dates.Date]pointer.DateEntry{d3: pointertest.Entry("job-c", d3)})); err != nil {
			t.Errorf("the other writer: %v", err)
		}
	})
	defer remove()
	out, err := pointer.PublishOutcome(t.Context(), s, pointertest.Commit("job-b", map[dates.Date]pointer.DateEntry{d2: pointertest.Entry("job-b", d2)}))
	if err != nil {
		t.Fatalf("the paused writer: %v, want published", err)
	}
	if out.LandedDespite != nil {
		t.Errorf("LandedDespite = %v: another writer rolling this one forward is no store error", out.LandedDespite)
	}
	cur, _, err := s.Load(t.Context())
	if err != nil || cur.Generation != 3 || cur.Dates[d2].JobID != "job-b" || cur.Dates[d3].JobID != "job-c" {
		t.Errorf("pointer.json: generation %d, %v, %v; want 3 holding job-b's and job-c's dates", cur.Generation, cur.Dates, err)
	}
}

// TestStuckRollForward: a generation committed by an earlier write that
// pointer.json cannot be replaced with (permissions) fails every later
// write with ErrStuck, naming that generation and its job, not as this
// write's own "did not land" that a rerun would cure; a replace that fails
// for a moment (a 503) is no ErrStuck, and the next write rolls it forward.
func TestStuckRollForward(t *testing.T) {
	entry := func(job string) map[dates.Date]pointer.DateEntry {
		return map[dates.Date]pointer.DateEntry{pointertest.Day0: pointertest.Entry(job, pointertest.Day0)}
	}
	for name, newBucket := range backends {
		for _, tc := range []struct {
			name  string
			err   error
			stuck bool
		}{
			{"denied", nil, true},
			{"for a moment", errors.New("StatusCode: 503, api error SlowDown"), false},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				b := newBucket(t)
				if _, err := pointer.Publish(t.Context(), objstore.New(b), pointertest.Commit("job-1", entry("job-1"))); err != nil {
					t.Fatal(err)
				}
				// Three failures: job-2's replace and the roll-forward its
				// re-read tries, then job-3's roll-forward (all of them,
				// when denied).
				var left atomic.Int32
				left.Store(3)
				refusing := storagetest.RefusePut{Bucket: b, Key: "pointer.json", Err: tc.err}
				if !tc.stuck {
					refusing.Left = &left
				}
				s := objstore.New(refusing)
				if _, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-2", entry("job-2"))); err == nil {
					t.Fatal("a publish whose pointer.json replace failed reported success")
				}
				_, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-3", entry("job-3")))
				if err == nil || errors.Is(err, pointer.ErrStuck) != tc.stuck || !strings.Contains(fmt.Sprint(err), "generation 2 (job job-2), committed by an earlier write") {
					t.Fatalf("the next publish: %v, want ErrStuck %v naming generation 2 and job-2", err, tc.stuck)
				}
				_, err = pointer.Publish(t.Context(), s, pointertest.Commit("job-4", entry("job-4")))
				if cur, _, _ := objstore.New(b).Load(t.Context()); tc.stuck && cur.UpdatedByJobID != "job-1" {
					t.Errorf("pointer.json names %s, want job-1 still", cur.UpdatedByJobID)
				} else if !tc.stuck && (err != nil || cur.UpdatedByJobID != "job-4") {
					t.Errorf("after the 503s: %v, pointer.json names %s, want job-4", err, cur.UpdatedByJobID)
				}
			})
		}
	}
}
