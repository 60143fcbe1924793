// Package localfs stores the pointer on a local (POSIX) filesystem:
//
//	<warehouse>/pointer.json                       the current pointer
//	<warehouse>/pointer-history/<generation>.json  immutable copy of every generation
//	<warehouse>/pointer.lock                       flock(2) target serialising writers
//
// A Version is the decimal generation of pointer.json.
package localfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
}

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

// Swap makes next current if pointer.json is still at expect.
//
// Under the lock it writes two files in order: first the history copy
// <next.Generation>.json, created exclusively with link(2), then
// pointer.json, replaced with rename(2). The history copy is the commit
// point. A writer killed between the two leaves a history copy one
// generation ahead of pointer.json; readers still see the old generation,
// which is safe, but the next writer must not build on the old generation
// or the orphan's dates would be lost. So when the exclusive create finds
// the copy already there, Swap rolls pointer.json forward to the newest
// history copy and reports ErrConflict, and the caller re-merges on top of
// it.
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
	data, err := pointer.Encode(next)
	if err != nil {
		return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
	}
	if err := mkdirAll(s.dir); err != nil {
		return err
	}
	unlock, err := lock(ctx, s.lockPath())
	if err != nil {
		return err
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
	s.removeTemps()
	if err := mkdirAll(s.historyDir()); err != nil {
		return err
	}
	created, err := createExclusive(s.historyDir(), s.historyPath(next.Generation), data)
	if err != nil {
		return err
	}
	if !created {
		if err := s.rollForward(cur.Generation); err != nil {
			return fmt.Errorf("swap to generation %d: %w", next.Generation, err)
		}
		return fmt.Errorf("swap to generation %d: history copy already existed and was rolled forward: %w",
			next.Generation, pointer.ErrConflict)
	}
	failpoint.Hit(failpoint.MidPointer)
	return replace(s.dir, s.pointerPath(), data)
}

// rollForward makes pointer.json equal to the newest history copy. The
// newest rather than cur+1: if pointer.json was lost while history
// survived, stepping through every old generation would show readers a
// regressing pointer.
func (s *Store) rollForward(cur int64) error {
	gens, err := s.generations()
	if err != nil {
		return err
	}
	if len(gens) == 0 || gens[len(gens)-1] <= cur {
		return fmt.Errorf("roll forward from generation %d: no newer history copy in %s", cur, s.historyDir())
	}
	gen := gens[len(gens)-1]
	path := s.historyPath(gen)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("roll forward: read %s: %w", path, err)
	}
	p, err := pointer.Decode(b)
	if err != nil {
		return fmt.Errorf("roll forward: read %s: %w", path, err)
	}
	if p.Generation != gen {
		return fmt.Errorf("roll forward: %s holds generation %d", path, p.Generation)
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

// lock takes an exclusive flock on a freshly opened descriptor of path.
// flock locks belong to the open file description, so two goroutines of one
// process exclude each other too, and the kernel drops the lock when its
// holder dies: there are no stale locks to clean up. The lock is polled
// rather than waited on so a cancelled ctx ends the wait.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
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
	// Closing the descriptor releases the lock; an error from Close cannot
	// undo a write that already happened, so it is not reported.
	return func() { f.Close() }, nil
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

// mkdirAll creates dir and any missing parents, fsyncing each parent after
// creating a child in it so the new directory survives a crash.
func mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("create directory %s: exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	// Another writer may create it first; that is as good as creating it.
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	return warehouse.SyncDir(parent)
}

// Lock takes the lock that serialises Swap and returns its release. It is
// for callers that act on what the pointer names and must keep it still
// meanwhile (gc deciding which staging prefixes nothing names); a Swap
// waits until the release.
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	return lock(ctx, s.lockPath())
}
