// Package localfs stores the pointer on a local (POSIX) filesystem:
//
//	<warehouse>/pointer.json                       the current pointer
//	<warehouse>/pointer-history/<generation>.json  immutable copy of every generation
//	<warehouse>/pointer.lock                       flock(2) target serialising writers
//
// A Version is the decimal generation of pointer.json. Nothing is written
// through a symlink inside the warehouse: a symlinked pointer-history/,
// pointer.json or pointer.lock is refused (warehouse.ErrSymlink).
package localfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

const (
	pointerName = "pointer.json"
	historyName = "pointer-history"
	lockName    = "pointer.lock"

	// Temp files start with a dot so readers listing the warehouse skip
	// them; the fixed prefix lets a later writer recognise and remove the
	// leftovers of one that crashed.
	pointerTempPrefix = ".pointer.json.tmp-"
	historyTempPrefix = ".history.tmp-"
)

var _ pointer.Store = (*Store)(nil)

// Store is a pointer.Store on a local filesystem. It is safe for concurrent
// use by goroutines and by processes sharing the warehouse directory
// (through flock on a local filesystem; NFS locking is not relied upon).
type Store struct {
	dir string
	// LockTimeout bounds the wait for the writer lock (DefaultLockTimeout
	// when zero); Log hears what a wait is waiting for (nil: silent).
	LockTimeout time.Duration
	Log         *slog.Logger
}

// DefaultLockTimeout is how long a writer waits for the lock before giving
// up. The lock is held for milliseconds by a Swap and for the length of a
// gc run, so a longer wait means a stuck holder, which a human must see.
const DefaultLockTimeout = 5 * time.Minute

// ErrLockTimeout: the writer lock stayed held for the whole LockTimeout.
var ErrLockTimeout = errors.New("gave up waiting for the pointer lock")

// New returns a Store for the warehouse directory, which is created on the
// first Swap if missing.
func New(warehouse string) *Store {
	return &Store{dir: warehouse}
}

func (s *Store) pointerPath() string { return filepath.Join(s.dir, pointerName) }
func (s *Store) historyDir() string  { return filepath.Join(s.dir, historyName) }
func (s *Store) lockPath() string    { return filepath.Join(s.dir, lockName) }
func (s *Store) historyPath(gen int64) string {
	return filepath.Join(s.historyDir(), strconv.FormatInt(gen, 10)+".json")
}

func version(gen int64) pointer.Version {
	if gen == 0 {
		return pointer.NoVersion
	}
	return pointer.Version(strconv.FormatInt(gen, 10))
}

func parseVersion(v pointer.Version) (int64, error) {
	if v == pointer.NoVersion {
		return 0, nil
	}
	gen, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || gen < 1 || version(gen) != v {
		return 0, fmt.Errorf("version %q: not a generation of this store", v)
	}
	return gen, nil
}

// Load reads pointer.json without taking the lock: it is only ever replaced
// by rename, so a reader sees the old or the new file, never a mix.
func (s *Store) Load(ctx context.Context) (pointer.Pointer, pointer.Version, error) {
	if err := ctx.Err(); err != nil {
		return pointer.Pointer{}, pointer.NoVersion, err
	}
	p, _, err := s.read()
	if err != nil {
		return pointer.Pointer{}, pointer.NoVersion, err
	}
	return p, version(p.Generation), nil
}

// read returns the stored pointer and its raw bytes, or the empty pointer
// when pointer.json does not exist.
func (s *Store) read() (pointer.Pointer, []byte, error) {
	path := s.pointerPath()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pointer.Empty(), nil, nil
	}
	if err != nil {
		return pointer.Pointer{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	p, err := pointer.Decode(b)
	if err != nil {
		return pointer.Pointer{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return p, b, nil
}

// Swap makes next current if pointer.json is still at expect and next's
// parent is pointer.json as stored (generation and digest).
//
// Under the lock it first looks past pointer.json in the history
// (pointer.Beyond): a true successor left by a writer killed between its two
// writes is rolled forward (ErrConflict, the caller re-merges on top of it),
// anything else is refused (ErrBrokenChain) and nothing is written. Then it
// writes two files in order: the history copy <next.Generation>.json,
// created exclusively with link(2), which is the commit point, and
// pointer.json, replaced with rename(2). Readers see the old generation or
// the new one, never a mix.
func (s *Store) Swap(ctx context.Context, expect pointer.Version, next pointer.Pointer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	expectGen, err := parseVersion(expect)
	if err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	if next.Generation != expectGen+1 {
		return fmt.Errorf("swap: next generation %d does not follow version %q", next.Generation, expect)
	}
	if next.FormatVersion != pointer.FormatVersion {
		return fmt.Errorf("swap: next is format %d; this store writes format %d only", next.FormatVersion, pointer.FormatVersion)
	}
	data, err := pointer.Encode(next)
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
	}
	// Refusals before the lock write nothing, and say so: the caller need
	// not re-read to learn the outcome.
	if err := warehouse.MkdirAll(s.dir, historyName); err != nil {
		return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
	}
	for _, p := range []string{s.pointerPath(), s.lockPath()} {
		if err := warehouse.NoSymlink(p); err != nil {
			return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
		}
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", pointer.ErrNotWritten, err)
	}
	defer unlock()

	cur, _, err := s.read()
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
	}
	if got := version(cur.Generation); got != expect {
		return fmt.Errorf("swap to generation %d: stored version %q, read version %q: %w",
			next.Generation, got, expect, pointer.ErrConflict)
	}
	if !parentIs(next, cur) {
		return fmt.Errorf("swap to generation %d: pointer.json changed since it was read (same generation, other bytes): %w",
			next.Generation, pointer.ErrConflict)
	}
	s.removeTemps()
	gens, err := s.generations()
	if err != nil {
		return err
	}
	orphan, err := pointer.Beyond(cur, gens, func(g int64) (pointer.Pointer, error) { return s.loadGeneration(g) })
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
	}
	if orphan != nil {
		if err := s.rollForward(orphan.Generation); err != nil {
			return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
		}
		return fmt.Errorf("swap to generation %d: an interrupted write had left generation %d in the history; it was rolled forward: %w",
			next.Generation, orphan.Generation, pointer.ErrConflict)
	}
	created, err := createExclusive(s.historyDir(), s.historyPath(next.Generation), data)
	if err != nil {
		return err
	}
	if !created {
		// Under the lock only a writer that ignores it can have taken the
		// generation; re-reading shows what it did.
		return fmt.Errorf("swap to generation %d: history copy appeared outside the lock: %w", next.Generation, pointer.ErrConflict)
	}
	failpoint.Hit(failpoint.MidPointer)
	return replace(s.dir, s.pointerPath(), data)
}

// parentIs reports whether next was merged from cur as stored.
func parentIs(next, cur pointer.Pointer) bool {
	if cur.Generation == 0 {
		return next.Parent == nil
	}
	return next.Parent != nil && next.Parent.Generation == cur.Generation && next.Parent.SHA256 == cur.Digest
}

// rollForward makes pointer.json the history copy of generation gen, byte
// for byte, so the parent digest its successor names stays true.
func (s *Store) rollForward(gen int64) error {
	path := s.historyPath(gen)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("roll forward: read %s: %w", path, err)
	}
	return replace(s.dir, s.pointerPath(), b)
}

// removeTemps deletes temp files left by writers that died mid-write. It
// runs only under the lock, when no live writer can own one. Failures are
// ignored: a leftover temp is garbage, never read.
func (s *Store) removeTemps() {
	for _, d := range []struct{ dir, prefix string }{
		{s.dir, pointerTempPrefix},
		{s.historyDir(), historyTempPrefix},
	} {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), d.prefix) {
				_ = os.Remove(filepath.Join(d.dir, e.Name()))
			}
		}
	}
}

// Generations lists the history copies, ascending; a missing history
// directory is an empty list.
func (s *Store) Generations(ctx context.Context) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.generations()
}

func (s *Store) generations() ([]int64, error) {
	entries, err := os.ReadDir(s.historyDir())
	if errors.Is(err, fs.ErrNotExist) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.historyDir(), err)
	}
	gens := []int64{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		gen, err := strconv.ParseInt(name, 10, 64)
		// Only the canonical spelling counts, so "007.json" cannot alias 7.
		if err != nil || gen < 1 || strconv.FormatInt(gen, 10) != name {
			continue
		}
		gens = append(gens, gen)
	}
	slices.Sort(gens)
	return gens, nil
}

// LoadGeneration reads pointer-history/<generation>.json; a missing one is
// an error wrapping fs.ErrNotExist.
func (s *Store) LoadGeneration(ctx context.Context, generation int64) (pointer.Pointer, error) {
	if err := ctx.Err(); err != nil {
		return pointer.Pointer{}, err
	}
	return s.loadGeneration(generation)
}

func (s *Store) loadGeneration(generation int64) (pointer.Pointer, error) {
	if generation < 1 {
		return pointer.Pointer{}, fmt.Errorf("load generation %d: %w", generation, fs.ErrNotExist)
	}
	path := s.historyPath(generation)
	b, err := os.ReadFile(path)
	if err != nil {
		return pointer.Pointer{}, fmt.Errorf("read %s: %w", path, err)
	}
	p, err := pointer.Decode(b)
	if err != nil {
		return pointer.Pointer{}, fmt.Errorf("read %s: %w", path, err)
	}
	if p.Generation != generation {
		return pointer.Pointer{}, fmt.Errorf("read %s: holds generation %d", path, p.Generation)
	}
	return p, nil
}

// lock takes an exclusive flock on a freshly opened descriptor of the lock
// file. flock locks belong to the open file description, so two goroutines
// of one process exclude each other too, and the kernel drops the lock when
// its holder dies: there are no stale locks to clean up. The lock is polled
// rather than waited on so a cancelled ctx ends the wait; a wait is logged
// with the holder's pid (which every holder writes into the file) and ends
// with ErrLockTimeout after LockTimeout, so a stuck holder is never waited
// on in silence. The file is opened without following a symlink.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	path := s.lockPath()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, warehouse.NoSymlink(path)
		}
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	start := time.Now()
	var lastLog time.Time
	wait := 100 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		waited := time.Since(start)
		if waited >= timeout {
			holder := holderOf(f)
			f.Close()
			return nil, fmt.Errorf("lock %s: %w after %s: it is held by %s; find out why that process holds it (a gc deleting, a stuck publish) or raise engagement.lockTimeout (--lock-timeout)",
				path, ErrLockTimeout, timeout, holder)
		}
		// Say what is being waited for after a moment, then every 30 s.
		if s.Log != nil && waited >= time.Second && time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			s.Log.Warn("waiting for the pointer lock", "lock", path, "held_by", holderOf(f),
				"waited", waited.Round(time.Millisecond).String(), "gives_up_after", timeout.String())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
	// Record the holder for whoever waits next; the note is advisory, so a
	// failure to write it does not fail the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if !lastLog.IsZero() {
		s.Log.Info("got the pointer lock", "lock", path, "waited", time.Since(start).Round(time.Millisecond).String())
	}
	// Closing the descriptor releases the lock; an error from Close cannot
	// undo a write that already happened, so it is not reported.
	return func() { f.Close() }, nil
}

// holderOf names the lock's holder from the pid it wrote into the file.
func holderOf(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return "an unknown process (no pid recorded)"
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil && errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("pid %d (recorded in the lock file; no such process here, so maybe another machine)", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}

// replace durably replaces path with data: temp file, fsync, rename, fsync
// of the directory so the rename itself survives a power loss.
func replace(dir, path string, data []byte) error {
	tmp, err := warehouse.WriteTemp(dir, pointerTempPrefix, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	return warehouse.SyncDir(dir)
}

// createExclusive durably creates path with data unless it already exists,
// reporting whether it created it. The data is written to a temp file and
// then linked into place: link(2) fails with EEXIST instead of replacing, so
// a generation can be taken only once, and the final name never shows a
// partial file.
func createExclusive(dir, path string, data []byte) (created bool, err error) {
	tmp, err := warehouse.WriteTemp(dir, historyTempPrefix, data)
	if err != nil {
		return false, err
	}
	linkErr := os.Link(tmp, path)
	// A temp that cannot be removed is garbage the next writer deletes; it
	// must not turn a landed link into a reported failure.
	_ = os.Remove(tmp)
	if errors.Is(linkErr, fs.ErrExist) {
		return false, nil
	}
	if linkErr != nil {
		return false, fmt.Errorf("link %s to %s: %w", tmp, path, linkErr)
	}
	if err := warehouse.SyncDir(dir); err != nil {
		return false, err
	}
	return true, nil
}

// Lock takes the lock that serialises Swap and returns its release. It is
// for callers that act on what the pointer names and must keep it still
// meanwhile (gc deciding which staging prefixes nothing names); a Swap
// waits until the release.
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	if err := warehouse.NoSymlink(s.lockPath()); err != nil {
		return nil, err
	}
	return s.lock(ctx)
}
