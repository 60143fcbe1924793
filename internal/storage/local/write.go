package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Put implements storage.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return storage.Attrs{}, err
	}
	if err := storage.CheckKey(key); err != nil {
		return storage.Attrs{}, err
	}
	dirKey := path.Dir(key)
	if err := b.mkdirAll(dirKey); err != nil {
		return storage.Attrs{}, err
	}
	p := b.path(key)
	if fi, err := os.Lstat(p); err == nil && isLink(fi) {
		return storage.Attrs{}, symlinkError(p)
	}
	dir := filepath.Dir(p)
	switch {
	case c.IfAbsent:
		return b.create(dir, p, data)
	case c.IfMatch != "":
		// Compare and replace under the lock, unless the caller holds it.
		if ctx.Value(heldKey{}) != b {
			_, unlock, err := b.Lock(ctx)
			if err != nil {
				return storage.Attrs{}, err
			}
			defer unlock()
		}
		fi, err := os.Stat(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return storage.Attrs{}, fmt.Errorf("stat %s: %w", p, err)
		}
		if err != nil || version(fi) != c.IfMatch {
			got := "none"
			if err == nil {
				got = version(fi)
			}
			return storage.Attrs{}, fmt.Errorf("replace %s: stored version %s, want %s: %w", p, got, c.IfMatch, storage.ErrPrecondition)
		}
	}
	return b.replace(dir, p, data)
}

// tempPrefix starts every temp file, so a later writer can recognise and
// remove the leftovers of one that crashed; the dot hides it from listings.
const tempPrefix = ".tmp-"

// staleTemp is the age past which a temp file is a crashed writer's: a live
// one lives for the milliseconds of one small write and fsync.
const staleTemp = time.Hour

// swept holds the directories whose stale temp files this process removed
// already: a directory is listed once per process, not once per write
// (pointer-history grows by a record per publish).
var swept sync.Map

// sweepTemps removes temp files in dir older than staleTemp, left by a
// writer killed between its temp and its rename or link (SIGKILL, power).
// Best effort: a file that cannot be removed stays for the next process.
func sweepTemps(dir string) {
	if _, done := swept.LoadOrStore(dir, true); done {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) >= staleTemp {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// replace durably replaces p with data: temp file, fsync, rename, fsync of
// the directory so the rename itself survives a power loss.
func (b *Bucket) replace(dir, p string, data []byte) (storage.Attrs, error) {
	tmp, err := b.writeTemp(dir, p, data)
	if err != nil {
		return storage.Attrs{}, err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return storage.Attrs{}, fmt.Errorf("rename %s to %s: %w", tmp, p, err)
	}
	if err := syncPath(dir); err != nil {
		return storage.Attrs{}, err
	}
	return b.statAfterWrite(p)
}

// create durably creates p with data unless it exists: written to a temp
// file, then linked into place, since link(2) fails with EEXIST instead of
// replacing and the final name never shows a partial file.
func (b *Bucket) create(dir, p string, data []byte) (storage.Attrs, error) {
	tmp, err := b.writeTemp(dir, p, data)
	if err != nil {
		return storage.Attrs{}, err
	}
	linkErr := os.Link(tmp, p)
	// A temp that cannot be removed is garbage a later writer deletes; it
	// must not turn a landed link into a reported failure.
	_ = os.Remove(tmp)
	if errors.Is(linkErr, fs.ErrExist) {
		// A directory in the object's place is no other writer's object:
		// as a lost race it would be retried until the caller gave up.
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			return storage.Attrs{}, storage.Refused(fmt.Errorf("create %s: in its place is %w", p, storage.ErrNotObject))
		}
		return storage.Attrs{}, fmt.Errorf("create %s: exists: %w", p, storage.ErrPrecondition)
	}
	if linkErr != nil {
		return storage.Attrs{}, fmt.Errorf("link %s to %s: %w", tmp, p, linkErr)
	}
	if err := syncPath(dir); err != nil {
		return storage.Attrs{}, err
	}
	return b.statAfterWrite(p)
}

func (b *Bucket) statAfterWrite(p string) (storage.Attrs, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return storage.Attrs{}, fmt.Errorf("stat %s: %w", p, err)
	}
	return attrs(fi), nil
}

// writeTemp writes data to a new temp file in dir on its way to target,
// fsyncs and closes it. It is created exclusively (never through an
// existing name or link) and is readable by all: readers of a warehouse may
// run as other users. On an error it is removed, and the error names
// target (the temp file's name is in the system's own words).
func (b *Bucket) writeTemp(dir, target string, data []byte) (string, error) {
	if b.opts.SweepTemps {
		sweepTemps(dir)
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("write %s: create a temp file in %s: %w", target, dir, err)
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	return tmp, nil
}

// syncPath fsyncs a file or directory so what was written or renamed in it
// survives a crash.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p, err)
	}
	return nil
}

// mkdirAll creates root/dirKey and its missing parents below root, refusing
// any element below root that is a symlink, and fsyncs each parent after
// creating a child in it so a new directory survives a crash. The root
// itself may be a symlink and is created when missing.
func (b *Bucket) mkdirAll(dirKey string) error {
	if err := mkdirRoot(b.root); err != nil {
		return err
	}
	dir := b.root
	for _, elem := range strings.Split(path.Clean(dirKey), "/") {
		if elem == "." || elem == "" {
			continue
		}
		parent := dir
		dir = filepath.Join(dir, elem)
		fi, err := os.Lstat(dir)
		switch {
		case err == nil && isLink(fi):
			return symlinkError(dir)
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			// A stray file where the tool needs a directory: no retry or new
			// job id helps, so it is a usage error, as S3's
			// ObjectParentIsFile is (it was exit 1 here, 2 there).
			return storage.Refused(exitcode.UsageError(fmt.Errorf("warehouse: %s is a file where engagement needs a directory; move the stray file", dir)))
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("warehouse: %w", err)
		}
		// Another writer may create it first; the lstat after decides.
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if fi, err := os.Lstat(dir); err != nil {
			return fmt.Errorf("warehouse: %w", err)
		} else if isLink(fi) {
			return symlinkError(dir)
		}
		if err := syncPath(parent); err != nil {
			return err
		}
	}
	return nil
}

// mkdirRoot creates the root (and its parents) when missing, fsyncing each
// parent; an existing root may be a symlink to a directory.
func mkdirRoot(root string) error {
	fi, err := os.Stat(root)
	if err == nil {
		if !fi.IsDir() {
			// The root, or (ENOTDIR below) one of its parents: no retry
			// or new job id helps.
			return storage.Refused(exitcode.UsageError(fmt.Errorf("warehouse: %s is a file where engagement needs a directory; move the file or choose another --warehouse", root)))
		}
		return nil
	}
	// ENOTDIR: a parent is a file, which the walk up finds and names.
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("warehouse %s: %w", root, err)
	}
	parent := filepath.Dir(root)
	if parent != root {
		if err := mkdirRoot(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create warehouse %s: %w", root, err)
	}
	return syncPath(parent)
}
