// Package local is the storage.Bucket of a local (POSIX) directory.
//
// Writes are durable (a temp file, fsync, rename or link, fsync of the
// directory) and never go through a symlink below the root: every directory
// on the way is checked with lstat as it is walked or created, and a
// symlink is refused (ErrSymlink). The root itself may be a symlink. A Put
// with IfAbsent is an exclusive link(2); one with IfMatch compares and
// replaces under an exclusive flock on <root>/pointer.lock, which every
// holder stamps with its pid so that a waiter can say who it waits for.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
)

// LockName is the lock file of a bucket's conditional writers, in its root.
const LockName = "pointer.lock"

// DefaultLockTimeout is how long a writer waits for the lock before giving
// up. The lock is held for milliseconds by a conditional Put and for the
// length of a gc run, so a longer wait means a stuck holder, which a human
// must see.
const DefaultLockTimeout = 5 * time.Minute

// ErrLockTimeout: the lock stayed held for the whole LockTimeout.
var ErrLockTimeout = errors.New("gave up waiting for the pointer lock")

// ErrSymlink: something the tool would create or write below the root is a
// symlink.
var ErrSymlink = errors.New("is a symlink: nothing the tool writes inside the warehouse is followed through a symlink; replace it with a real directory or file")

// Options tune a Bucket.
type Options struct {
	// LockTimeout bounds the wait for the lock (DefaultLockTimeout when
	// zero); Log hears what a wait is waiting for (nil: silent).
	LockTimeout time.Duration
	Log         *slog.Logger
	// FollowLinks lets reads and listings go through symlinks below the
	// root, for inputs that a human laid out with links. A warehouse is
	// opened without it: a symlink there is an error.
	FollowLinks bool
}

// Bucket is a storage.Bucket on a local directory. It is safe for
// concurrent use by goroutines and by processes sharing the directory.
type Bucket struct {
	root string
	opts Options
}

var (
	_ storage.Bucket = (*Bucket)(nil)
	_ storage.Locker = (*Bucket)(nil)
)

// New returns the bucket of the directory root, which is created on the
// first write when missing.
func New(root string, opts Options) *Bucket { return &Bucket{root: root, opts: opts} }

// Location implements storage.Bucket.
func (b *Bucket) Location() storage.Location {
	return storage.Location{Scheme: storage.File, Path: b.root}
}

func (b *Bucket) path(key string) string { return filepath.Join(b.root, filepath.FromSlash(key)) }

// symlinkError names the link and where it points.
func symlinkError(p string) error {
	return refused{fmt.Errorf("warehouse: %s %w", linkName(p), ErrSymlink)}
}

// refused marks an error as storage.ErrRefused without changing its text.
type refused struct{ error }

func (r refused) Unwrap() []error { return []error{r.error, storage.ErrRefused} }

func linkName(p string) string {
	if to, err := os.Readlink(p); err == nil {
		return p + " (-> " + to + ")"
	}
	return p
}

func isLink(fi fs.FileInfo) bool { return fi.Mode()&fs.ModeSymlink != 0 }

// checkRead refuses, for a bucket that does not follow links, a key whose
// path below the root passes through a symlink.
func (b *Bucket) checkRead(key string) error {
	if b.opts.FollowLinks {
		return nil
	}
	p := b.root
	for _, elem := range strings.Split(key, "/") {
		p = filepath.Join(p, elem)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // the read itself reports a missing path
		}
		if isLink(fi) {
			return symlinkError(p)
		}
	}
	return nil
}

func version(fi fs.FileInfo) string {
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%x-%x-%x", fi.Size(), fi.ModTime().UnixNano(), ino)
}

func attrs(fi fs.FileInfo) storage.Attrs {
	return storage.Attrs{Size: fi.Size(), Version: version(fi), ModTime: fi.ModTime()}
}

// Get implements storage.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, storage.Attrs, error) {
	if err := b.ready(ctx, key); err != nil {
		return nil, storage.Attrs{}, err
	}
	// os errors name the path already.
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, storage.Attrs{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, storage.Attrs{}, fmt.Errorf("read %s: %w", b.path(key), err)
	}
	if fi.IsDir() {
		return nil, storage.Attrs{}, fmt.Errorf("read %s: is a directory: %w", b.path(key), fs.ErrNotExist)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, storage.Attrs{}, fmt.Errorf("read %s: %w", b.path(key), err)
	}
	return data, attrs(fi), nil
}

func (b *Bucket) ready(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storage.CheckKey(key); err != nil {
		return err
	}
	return b.checkRead(key)
}

// ReadRange implements storage.Bucket.
func (b *Bucket) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := b.ready(ctx, key); err != nil {
		return nil, err
	}
	p := b.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if off < 0 {
		off = max(fi.Size()+off, 0)
	}
	if off+n > fi.Size() {
		n = max(fi.Size()-off, 0)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return buf, nil
}

// Stat implements storage.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (storage.Attrs, error) {
	if err := b.ready(ctx, key); err != nil {
		return storage.Attrs{}, err
	}
	fi, err := os.Stat(b.path(key))
	if err != nil {
		return storage.Attrs{}, err
	}
	if fi.IsDir() {
		return storage.Attrs{}, fmt.Errorf("stat %s: is a directory: %w", b.path(key), fs.ErrNotExist)
	}
	return attrs(fi), nil
}

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

// replace durably replaces p with data: temp file, fsync, rename, fsync of
// the directory so the rename itself survives a power loss.
func (b *Bucket) replace(dir, p string, data []byte) (storage.Attrs, error) {
	tmp, err := writeTemp(dir, data)
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
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return storage.Attrs{}, err
	}
	linkErr := os.Link(tmp, p)
	// A temp that cannot be removed is garbage a later writer deletes; it
	// must not turn a landed link into a reported failure.
	_ = os.Remove(tmp)
	if errors.Is(linkErr, fs.ErrExist) {
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

// writeTemp writes data to a new temp file in dir, fsyncs and closes it. It
// is created exclusively (never through an existing name or link) and is
// readable by all: readers of a warehouse may run as other users.
func writeTemp(dir string, data []byte) (p string, err error) {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("create temp in %s: %w", dir, err)
	}
	p = f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(p)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", fmt.Errorf("chmod %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", p, err)
	}
	return p, nil
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
			return fmt.Errorf("warehouse: %s exists and is not a directory", dir)
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
			return fmt.Errorf("warehouse %s: exists and is not a directory", root)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
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

// List implements storage.Bucket. Temp files of writers are not objects.
// Without FollowLinks a symlink below the root is an error naming it, so a
// caller never judges or deletes through one.
func (b *Bucket) List(ctx context.Context, prefix string) ([]storage.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Walk the deepest directory the prefix names, then filter.
	dirKey := prefix
	if !strings.HasSuffix(prefix, "/") {
		dirKey = path.Dir(prefix)
	}
	dirKey = strings.TrimSuffix(dirKey, "/")
	if dirKey == "." {
		dirKey = ""
	}
	start := b.root
	if dirKey != "" {
		if err := storage.CheckKey(dirKey); err != nil {
			return nil, err
		}
		if err := b.checkRead(dirKey); err != nil {
			return nil, err
		}
		start = b.path(dirKey)
	}
	var out []storage.Object
	err := b.walk(start, dirKey, func(key string, fi fs.FileInfo) {
		if strings.HasPrefix(key, prefix) {
			out = append(out, storage.Object{Key: key, Attrs: attrs(fi)})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// walk visits every regular file under dir (key dirKey), following
// symlinks only with FollowLinks.
func (b *Bucket) walk(dir, dirKey string, fn func(key string, fi fs.FileInfo)) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		key := path.Join(dirKey, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		if isLink(fi) {
			if !b.opts.FollowLinks {
				return symlinkError(p)
			}
			if fi, err = os.Stat(p); err != nil {
				return fmt.Errorf("list %s: %w", p, err)
			}
		}
		if fi.IsDir() {
			if err := b.walk(p, key, fn); err != nil {
				return err
			}
			continue
		}
		if fi.Mode().IsRegular() {
			fn(key, fi)
		}
	}
	return nil
}

// ListDir implements storage.Bucket. Without FollowLinks a symlink entry is
// reported as an Object with Link set and not followed. An entry that is
// neither a regular file nor a directory (a socket, a device) is an error
// naming it.
func (b *Bucket) ListDir(ctx context.Context, dir string) ([]storage.Object, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	p := b.root
	if dir != "" {
		if err := storage.CheckKey(dir); err != nil {
			return nil, nil, err
		}
		if err := b.checkRead(dir); err != nil {
			return nil, nil, err
		}
		p = b.path(dir)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, nil, err
	}
	var files []storage.Object
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		ep := filepath.Join(p, e.Name())
		fi, err := os.Lstat(ep)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", p, err)
		}
		if isLink(fi) {
			if !b.opts.FollowLinks {
				// Reported, never followed: the caller leaves it alone.
				files = append(files, storage.Object{Key: path.Join(dir, e.Name()), Link: true})
				continue
			}
			if fi, err = os.Stat(ep); err != nil {
				return nil, nil, fmt.Errorf("list %s: %w", p, err)
			}
		}
		switch {
		case fi.IsDir():
			dirs = append(dirs, e.Name())
		case fi.Mode().IsRegular():
			files = append(files, storage.Object{Key: path.Join(dir, e.Name()), Attrs: attrs(fi)})
		default:
			return nil, nil, fmt.Errorf("list %s: %s is not a regular file", p, e.Name())
		}
	}
	sort.Strings(dirs)
	sort.Slice(files, func(i, j int) bool { return files[i].Key < files[j].Key })
	return files, dirs, nil
}

// Delete implements storage.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := storage.CheckKey(key); err != nil {
		return err
	}
	if err := b.checkRead(key); err != nil {
		return err
	}
	if err := os.Remove(b.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", b.path(key), err)
	}
	return nil
}

// DeletePrefix implements storage.Bucket: it removes the directory tree
// prefix names, never following a symlink (os.RemoveAll removes a link,
// not what it points at) and refusing a prefix that is one.
func (b *Bucket) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := strings.TrimSuffix(prefix, "/")
	if err := storage.CheckKey(dir); err != nil {
		return err
	}
	if err := b.checkRead(dir); err != nil {
		return err
	}
	p := b.path(dir)
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return syncPath(filepath.Dir(p))
}

// WriteURI implements storage.Bucket: the directory is created without
// following a symlink and its path returned.
func (b *Bucket) WriteURI(ctx context.Context, dir string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := storage.CheckKey(dir); err != nil {
		return "", err
	}
	if err := b.mkdirAll(dir); err != nil {
		return "", err
	}
	return b.path(dir), nil
}

// Seal implements storage.Bucket: every file and directory under prefix is
// fsynced, up to the root, so the pointer never names bytes a power cut
// could take back; a symlink anywhere under it is an error.
func (b *Bucket) Seal(ctx context.Context, prefix string) ([]storage.Object, error) {
	objs, err := b.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, o := range objs {
		if err := syncPath(b.path(o.Key)); err != nil {
			return nil, err
		}
		for d := path.Dir(o.Key); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	keys := make([]string, 0, len(dirs))
	for d := range dirs {
		keys = append(keys, d)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	for _, d := range keys {
		if err := syncPath(b.path(d)); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// Lock implements storage.Locker: an exclusive flock on a freshly opened
// descriptor of the lock file. flock locks belong to the open file
// description, so two goroutines of one process exclude each other too,
// and the kernel drops the lock when its holder dies: there are no stale
// locks to clean up. The lock is polled rather than waited on so a
// cancelled ctx ends the wait; a wait is logged with the holder's pid and
// ends with ErrLockTimeout after LockTimeout, so a stuck holder is never
// waited on in silence. The file is opened without following a symlink.
func (b *Bucket) Lock(ctx context.Context) (held context.Context, unlock func(), err error) {
	if err := mkdirRoot(b.root); err != nil {
		return nil, nil, err
	}
	p := filepath.Join(b.root, LockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, symlinkError(p)
		}
		return nil, nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	timeout := b.opts.LockTimeout
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
			return nil, nil, fmt.Errorf("lock %s: %w", p, err)
		}
		waited := time.Since(start)
		if waited >= timeout {
			holder := holderOf(f)
			f.Close()
			return nil, nil, refused{fmt.Errorf("lock %s: %w after %s: it is held by %s; find out why that process holds it (a gc deleting, a stuck publish) or raise engagement.lockTimeout (--lock-timeout)",
				p, ErrLockTimeout, timeout, holder)}
		}
		// Say what is being waited for after a moment, then every 30 s.
		if b.opts.Log != nil && waited >= time.Second && time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			b.opts.Log.Warn("waiting for the pointer lock", "lock", p, "held_by", holderOf(f),
				"waited", waited.Round(time.Millisecond).String(), "gives_up_after", timeout.String())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, nil, fmt.Errorf("lock %s: %w", p, ctx.Err())
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
		b.opts.Log.Info("got the pointer lock", "lock", p, "waited", time.Since(start).Round(time.Millisecond).String())
	}
	// Closing the descriptor releases the lock; an error from Close cannot
	// undo a write that already happened, so it is not reported.
	return context.WithValue(ctx, heldKey{}, b), func() { f.Close() }, nil
}

// heldKey marks a context whose caller holds a bucket's lock.
type heldKey struct{}

// holderOf names the lock's holder from the pid it wrote into the file.
func holderOf(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return "an unknown process (no pid recorded)"
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("pid %d (recorded in the lock file; no such process here, so maybe another machine)", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}
