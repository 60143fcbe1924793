// Package objstore is the pointer.Store on a storage.Bucket, local or S3,
// using only what object stores give: a conditional create and a
// conditional replace.
//
//	pointer.json                        the current pointer
//	pointer-history/<generation>.json   immutable copy of every generation
//
// A generation is taken by creating its history copy only if absent (S3:
// If-None-Match: *); pointer.json is then replaced only if it is still the
// version that was read (S3: If-Match: <etag>). The history copy is the
// commit point. A Version is the bucket's version of pointer.json: its ETag
// on S3, its size, modification time and inode locally.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

const (
	pointerKey    = "pointer.json"
	historyPrefix = "pointer-history/"
)

// Store is a pointer.Store on a bucket. Every write is a conditional Put, so
// it is safe for any number of writers on any number of machines that see
// the same bucket; where the bucket has a lock (a local directory) a Swap
// also holds it.
type Store struct {
	b storage.Bucket
}

var _ pointer.Store = (*Store)(nil)

// Bucket is the warehouse bucket the store is on.
func (s *Store) Bucket() storage.Bucket { return s.b }

// New returns the store of the warehouse bucket b.
func New(b storage.Bucket) *Store { return &Store{b: b} }

func historyKey(gen int64) string { return historyPrefix + strconv.FormatInt(gen, 10) + ".json" }

func (s *Store) uri(key string) string { return s.b.Location().Join(key).String() }

// Load implements pointer.Store: pointer.json as stored, or the empty
// pointer and NoVersion when there is none. It takes no lock: the object is
// only ever replaced whole.
func (s *Store) Load(ctx context.Context) (pointer.Pointer, pointer.Version, error) {
	b, attrs, err := s.b.Get(ctx, pointerKey)
	if errors.Is(err, storage.ErrNotObject) {
		// Read as no pointer, it would have a publish start a generation
		// 1 the history already holds, and retry that until it gave up.
		return pointer.Pointer{}, pointer.NoVersion, fmt.Errorf("%s is a directory, not the pointer: the warehouse is damaged; "+
			"move the directory away and copy the newest pointer-history/<generation>.json in its place", s.uri(pointerKey))
	}
	if storage.IsNotExist(err) {
		return pointer.Empty(), pointer.NoVersion, nil
	}
	if err != nil {
		return pointer.Pointer{}, pointer.NoVersion, err
	}
	p, err := pointer.Decode(b)
	if errors.Is(err, pointer.ErrDamaged) {
		return pointer.Pointer{}, pointer.NoVersion, fmt.Errorf("read %s: %w; copy the newest pointer-history/<generation>.json over it, then check `engagement history`", s.uri(pointerKey), err)
	}
	if err != nil {
		return pointer.Pointer{}, pointer.NoVersion, fmt.Errorf("read %s: %w", s.uri(pointerKey), err)
	}
	return p, pointer.Version(attrs.Version), nil
}

// Swap implements pointer.Store.
//
// It reads pointer.json: when its version is not expect, or next's parent
// is not it (generation and digest), that is a conflict. It then looks past
// it in the history (pointer.Beyond): a true successor that an interrupted
// Swap left is rolled forward (replacing pointer.json only if still at the
// version read) and reported as a conflict so the caller re-merges on top
// of it; anything else is refused (ErrBrokenChain), writing nothing. Then it
// creates the history copy of next only if absent (a 412 is a conflict:
// another writer took the generation) and replaces pointer.json only if it
// is still at expect. If that replace finds another version, a re-read
// decides: another writer rolled this very copy forward (pointer.json holds
// next's bytes: success), or the outcome is for the caller to resolve.
func (s *Store) Swap(ctx context.Context, expect pointer.Version, next pointer.Pointer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if next.FormatVersion != pointer.FormatVersion {
		return fmt.Errorf("swap: next is format %d; this store writes format %d only", next.FormatVersion, pointer.FormatVersion)
	}
	data, err := pointer.Encode(next)
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
	}
	// Where the bucket has a lock (a local directory), the whole swap holds
	// it, so local writers are serialised as they always were.
	if l, ok := s.b.(storage.Locker); ok {
		held, unlock, err := l.Lock(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
		}
		defer unlock()
		ctx = held
	}
	cur, ver, err := s.Load(ctx)
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w: %w", next.Generation, pointer.ErrNotWritten, err)
	}
	if ver != expect {
		return fmt.Errorf("swap to generation %d: stored version %q, read version %q: %w", next.Generation, ver, expect, pointer.ErrConflict)
	}
	// With a version that matches, a generation or parent that does not
	// means the read that gave expect saw another state than this one (a
	// server whose GET is not atomic can pair one object's bytes with
	// another's ETag): a conflict, re-read and retried, never a write.
	if next.Generation != cur.Generation+1 {
		return fmt.Errorf("swap: next generation %d does not follow the stored generation %d: %w", next.Generation, cur.Generation, pointer.ErrConflict)
	}
	if !parentIs(next, cur) {
		return fmt.Errorf("swap to generation %d: pointer.json changed since it was read (same version, other parent): %w", next.Generation, pointer.ErrConflict)
	}
	// Without a lock, other writers may move on between the read of
	// pointer.json and the reads of the history: the history proves a broken
	// chain only while pointer.json stays where it was, which is checked
	// before anything costly (listing the whole history for the message).
	moved := func() bool {
		_, now, err := s.Load(ctx)
		return err == nil && now != ver
	}
	errMoved := errors.New("pointer.json moved")
	newest := func() (int64, error) {
		if moved() {
			return 0, errMoved
		}
		gens, err := s.Generations(ctx)
		if err != nil || len(gens) == 0 {
			return 0, err
		}
		return gens[len(gens)-1], nil
	}
	orphan, err := pointer.Beyond(cur, func(g int64) (pointer.Pointer, error) { return s.LoadGeneration(ctx, g) }, newest)
	if err != nil {
		if errors.Is(err, errMoved) || moved() {
			return fmt.Errorf("swap to generation %d: pointer.json moved while the history was read: %w", next.Generation, pointer.ErrConflict)
		}
		if errors.Is(err, pointer.ErrBrokenChain) {
			return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
		}
		// Nothing has been written yet: a failed read leaves the pointer as it was.
		return fmt.Errorf("swap to generation %d: %w: %w", next.Generation, pointer.ErrNotWritten, err)
	}
	if orphan == nil {
		if err := pointer.OwnCopy(ctx, s, cur, nil); err != nil {
			if moved() {
				return fmt.Errorf("swap to generation %d: pointer.json moved while the history was read: %w", next.Generation, pointer.ErrConflict)
			}
			if errors.Is(err, pointer.ErrBrokenChain) {
				return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
			}
			return fmt.Errorf("swap to generation %d: %w: %w", next.Generation, pointer.ErrNotWritten, err)
		}
	}
	if orphan != nil {
		if err := s.edited(ctx, cur, ver, *orphan); err != nil {
			return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
		}
		if err := s.replacePointer(ctx, ver, orphan.Generation); err != nil {
			if refusedForGood(err) {
				return fmt.Errorf("swap to generation %d: generation %d (job %s), committed by an earlier write, cannot be made visible: %w: %w",
					next.Generation, orphan.Generation, orphan.UpdatedByJobID, pointer.ErrStuck, err)
			}
			// A 503 or a timeout: the next write may well roll it forward.
			return fmt.Errorf("swap to generation %d: generation %d (job %s), committed by an earlier write, was not rolled forward this time: %w",
				next.Generation, orphan.Generation, orphan.UpdatedByJobID, err)
		}
		return fmt.Errorf("swap to generation %d: an interrupted write had left generation %d in the history; it was rolled forward: %w",
			next.Generation, orphan.Generation, pointer.ErrConflict)
	}
	// A retried create whose first try landed meets its own copy, which
	// storage.Create takes as this write; any other copy is another writer's.
	if err := storage.Create(ctx, s.b, historyKey(next.Generation), data); err != nil {
		switch {
		case errors.Is(err, storage.ErrPrecondition):
			return fmt.Errorf("swap to generation %d: another writer took it: %w", next.Generation, pointer.ErrConflict)
		case errors.Is(err, storage.ErrRefused):
			return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
		default:
			// A failed PUT may still have landed, which the caller
			// resolves by re-reading.
			return fmt.Errorf("swap to generation %d: write history: %w", next.Generation, err)
		}
	}
	failpoint.HitCtx(ctx, failpoint.MidPointer)
	// The history copy is the commit: a cancellation (a signal) from here on
	// would only leave it for the next writer to roll forward, with readers
	// still on the old generation meanwhile, so the replace runs to its end.
	ctx = context.WithoutCancel(ctx)
	err = s.putPointer(ctx, data, ver)
	if errors.Is(err, storage.ErrPrecondition) {
		// Another writer, finding this generation's copy beyond the pointer,
		// may have rolled it forward first, and built on it since: then it
		// is done. A later generation can only stand on this one, whose
		// copy this writer created; the caller's re-read follows the chain.
		if now, _, rerr := s.Load(ctx); rerr == nil && (now.Generation > next.Generation ||
			now.Generation == next.Generation && now.Digest == pointer.Sum(data)) {
			return nil
		}
	}
	if err != nil {
		// The history copy is taken: whatever the replace did, the caller
		// re-reads to learn what readers see.
		return fmt.Errorf("swap to generation %d: replace pointer: %w", next.Generation, err)
	}
	return nil
}

// Pending says, writing nothing, what the next Swap would find past
// pointer.json: nil when nothing; the copy an interrupted Swap left, which
// it would roll forward; or the error, wrapping ErrBrokenChain, it would
// refuse with (pointer.json put back by hand, a history two or more ahead).
// history shows it, so that it never calls a hand-edit an interrupted write
// that the next publish mends; publish and rollback ask it before any work.
// A pointer.json that moved meanwhile (a writer at work) gives nil.
func (s *Store) Pending(ctx context.Context) (*pointer.Pointer, error) {
	cur, ver, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	newest := func() (int64, error) {
		gens, err := s.Generations(ctx)
		if err != nil || len(gens) == 0 {
			return 0, err
		}
		return gens[len(gens)-1], nil
	}
	orphan, err := pointer.Beyond(cur, func(g int64) (pointer.Pointer, error) { return s.LoadGeneration(ctx, g) }, newest)
	if err == nil && orphan != nil {
		err = s.edited(ctx, cur, ver, *orphan)
	}
	if err == nil && orphan != nil {
		// A writer between its history copy and its replace finishes
		// first as a rule: pointer.json moved since is that (history, not
		// under the writers' lock, called it an interrupted write).
		if _, now, lerr := s.Load(ctx); lerr == nil && now != ver {
			return nil, nil
		}
	}
	if err == nil {
		return orphan, nil
	}
	// Writers that moved pointer.json while the history was read leave
	// it looking ahead by two: what the next Swap finds is theirs to say.
	if _, now, lerr := s.Load(ctx); errors.Is(err, pointer.ErrConflict) || (lerr == nil && now != ver) {
		return nil, nil
	}
	return nil, err
}

// edited tells a hand-edit from an interrupted Swap when the history holds
// a true successor of pointer.json. Both leave the same bytes (an operator
// who copies pointer-history/<G>.json over pointer.json recreates
// generation G exactly), so the order of the writes decides: a Swap writes
// the history copy after the pointer it continues, an operator writes
// pointer.json after the history copy it undoes. Equal times (S3 keeps
// whole seconds) count as a Swap, the case that must roll forward.
func (s *Store) edited(ctx context.Context, cur pointer.Pointer, ver pointer.Version, orphan pointer.Pointer) error {
	if cur.Generation == 0 {
		return nil // no pointer.json to have edited: generation 1's first write
	}
	pa, err := s.b.Stat(ctx, pointerKey)
	if err != nil {
		return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
	}
	if pointer.Version(pa.Version) != ver {
		// The writer that left the copy (or another) has just moved
		// pointer.json on: its time says nothing about an edit.
		return fmt.Errorf("pointer.json moved while the history was read: %w", pointer.ErrConflict)
	}
	ha, err := s.b.Stat(ctx, historyKey(orphan.Generation))
	if err != nil {
		return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
	}
	// Written, not ModTime: a pointer.json copied back with cp -p keeps the
	// source's modification time, and read by it would be rolled forward
	// over in silence; its inode change time says when it was written.
	// Unless the history copy's own change time is well past its
	// modification time: then the warehouse itself was copied or restored
	// (cp -a, rsync -a) or its modes changed (chmod -R), every change time
	// is that moment's, in no order, and the modification times alone
	// keep the order of the writes.
	pw, hw := pa.Written(), ha.Written()
	if ha.Changed.After(ha.ModTime.Add(time.Second)) {
		pw, hw = pa.ModTime, ha.ModTime
	}
	if !pw.After(hw) {
		return nil
	}
	return fmt.Errorf("%w: %w: pointer.json holds generation %d but was written at %s, after pointer-history/%d.json (job %s, written %s): "+
		"it was put back by hand, not left by an interrupted write, so it is not rolled forward over; nothing was changed. "+
		"First copy pointer-history/%d.json back over pointer.json (publish and rollback refuse until then; readers see this pointer.json); then, to return dates to generation %d, use `engagement rollback --to-generation %d`, which records the change",
		pointer.ErrBrokenChain, pointer.ErrHandEdited, cur.Generation, pw.UTC().Format(time.RFC3339Nano), orphan.Generation, orphan.UpdatedByJobID,
		hw.UTC().Format(time.RFC3339Nano), orphan.Generation, cur.Generation, cur.Generation)
}

// cond is the condition for replacing a pointer.json read at version v.
func cond(v pointer.Version) storage.Cond {
	if v == pointer.NoVersion {
		return storage.Cond{IfAbsent: true}
	}
	return storage.Cond{IfMatch: string(v)}
}

// refusedForGood reports whether a failed replace of pointer.json will fail
// the same way until someone acts: permissions, an immutable file or a
// read-only file system, an S3 policy that denies it.
func refusedForGood(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, storage.ErrRefused)
}

// replacePointer makes pointer.json the history copy of generation gen, byte
// for byte, so the parent digest its successor names stays true.
func (s *Store) replacePointer(ctx context.Context, ver pointer.Version, gen int64) error {
	b, _, err := s.b.Get(ctx, historyKey(gen))
	if err != nil {
		return fmt.Errorf("roll forward: %w", err)
	}
	if err := s.putPointer(ctx, b, ver); err != nil && !errors.Is(err, storage.ErrPrecondition) {
		return fmt.Errorf("roll forward to generation %d: %w", gen, err)
	}
	// A precondition failure means another writer moved pointer.json first
	// (most likely rolling the same copy forward): the caller re-reads.
	return nil
}

// putPointer replaces pointer.json at version ver (creates it for
// NoVersion). A create refused while no pointer.json exists is a
// directory in its place when keys under pointer.json/ exist (a server on
// a file system refuses it for them): refused as such, since every retry
// would meet it again.
func (s *Store) putPointer(ctx context.Context, data []byte, ver pointer.Version) error {
	_, err := s.b.Put(ctx, pointerKey, data, cond(ver))
	if errors.Is(err, storage.ErrPrecondition) && ver == pointer.NoVersion {
		if _, serr := s.b.Stat(ctx, pointerKey); storage.IsNotExist(serr) {
			return storage.DirectoryInPlace(ctx, s.b, pointerKey, err)
		}
	}
	return err
}

// parentIs reports whether next was merged from cur as stored.
func parentIs(next, cur pointer.Pointer) bool {
	if cur.Generation == 0 {
		return next.Parent == nil
	}
	return next.NamesParent(cur)
}

// Generations implements pointer.Store: the history copies, ascending;
// names that are not a canonical generation (007.json, temp files) are not
// history.
func (s *Store) Generations(ctx context.Context) ([]int64, error) {
	files, _, err := s.b.ListDir(ctx, strings.TrimSuffix(historyPrefix, "/"))
	if storage.IsNotExist(err) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, err // names the location already (storage.Bucket)
	}
	gens := []int64{}
	for _, f := range files {
		name, ok := strings.CutSuffix(strings.TrimPrefix(f.Key, historyPrefix), ".json")
		if !ok {
			continue
		}
		gen, err := strconv.ParseInt(name, 10, 64)
		if err != nil || gen < 1 || strconv.FormatInt(gen, 10) != name {
			continue
		}
		gens = append(gens, gen)
	}
	slices.Sort(gens)
	return gens, nil
}

// LoadGeneration implements pointer.Store.
func (s *Store) LoadGeneration(ctx context.Context, generation int64) (pointer.Pointer, error) {
	if generation < 1 {
		return pointer.Pointer{}, fmt.Errorf("load generation %d: %w", generation, fs.ErrNotExist)
	}
	b, _, err := s.b.Get(ctx, historyKey(generation))
	if err != nil {
		return pointer.Pointer{}, err
	}
	// A history copy is written once and never again, so the remedy is
	// not another copy of the newest one (which is what pointer.json's is).
	remedy := fmt.Sprintf("if generation %d is the current one, copy pointer.json over it (the same bytes); otherwise restore it from a backup, "+
		"or move it out of pointer-history/ (the generation is then not retained: no rollback to it)", generation)
	p, err := pointer.Decode(b)
	if errors.Is(err, pointer.ErrDamaged) {
		return pointer.Pointer{}, fmt.Errorf("read %s: %w; %s", s.uri(historyKey(generation)), err, remedy)
	}
	if err != nil {
		return pointer.Pointer{}, fmt.Errorf("read %s: %w", s.uri(historyKey(generation)), err)
	}
	if p.Generation != generation {
		return pointer.Pointer{}, fmt.Errorf("read %s: holds generation %d, not %d; %s", s.uri(historyKey(generation)), p.Generation, generation, remedy)
	}
	return p, nil
}

// Expire implements pointer.Store. The generation is checked against a
// fresh read of pointer.json, so a stale caller cannot expire what became
// current meanwhile; generations only grow, so what was older stays older.
func (s *Store) Expire(ctx context.Context, generation int64) error {
	cur, _, err := s.Load(ctx)
	if err != nil {
		return fmt.Errorf("expire generation %d: %w", generation, err)
	}
	if generation < 1 || generation >= cur.Generation {
		return fmt.Errorf("expire generation %d: only generations older than the current one (%d) may expire", generation, cur.Generation)
	}
	if err := s.b.Delete(ctx, historyKey(generation)); err != nil && !storage.IsNotExist(err) {
		return fmt.Errorf("expire %s: %w", s.uri(historyKey(generation)), err)
	}
	return nil
}

// Lock holds the bucket's conditional writers still where the bucket can
// (a local directory's flock): gc deciding what nothing names takes it. On
// a bucket without a lock it returns a no-op, and gc relies on its minimum
// age and its re-read after deleting. The context it returns says the
// lock is held: a conditional write under it must not take it again (a
// local bucket's would wait on its own holder until --lock-timeout).
func (s *Store) Lock(ctx context.Context) (held context.Context, unlock func(), err error) {
	if l, ok := s.b.(storage.Locker); ok {
		return l.Lock(ctx)
	}
	return ctx, func() {}, nil
}
