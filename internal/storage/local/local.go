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
	"strings"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
)

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
	// SweepTemps lets a write remove the temp files a killed writer left
	// in its directory (sweepTemps): a warehouse's, whose .tmp-* names are
	// all the tool's. Off for any other directory (report's --out, often
	// shared), where such a name may be another program's file.
	SweepTemps bool
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
	return storage.Refused(fmt.Errorf("warehouse: %s %w", linkName(p), ErrSymlink))
}

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
	// UTC: the time lands in records (_attempt.json's inputs) and errors.
	return storage.Attrs{Size: fi.Size(), Version: version(fi), ModTime: fi.ModTime().UTC(), Changed: changed(fi)}
}

// underObject reads a path that runs through a file (ENOTDIR) as a
// missing object, as S3 answers for a key under another object: keys are
// names there, and the two backends must agree.
func underObject(err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w (a part of its path is a file): %w", err, fs.ErrNotExist)
	}
	return err
}

// Get implements storage.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, storage.Attrs, error) {
	if err := b.ready(ctx, key); err != nil {
		return nil, storage.Attrs{}, err
	}
	// os errors name the path already.
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, storage.Attrs{}, underObject(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, storage.Attrs{}, fmt.Errorf("read %s: %w", b.path(key), err)
	}
	if fi.IsDir() {
		return nil, storage.Attrs{}, fmt.Errorf("read %s: is a directory: %w (%w)", b.path(key), fs.ErrNotExist, storage.ErrNotObject)
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
		return nil, underObject(err)
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
		return storage.Attrs{}, underObject(err)
	}
	if fi.IsDir() {
		return storage.Attrs{}, fmt.Errorf("stat %s: is a directory: %w (%w)", b.path(key), fs.ErrNotExist, storage.ErrNotObject)
	}
	return attrs(fi), nil
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
	if errors.Is(underObject(err), fs.ErrNotExist) {
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
		fi, err := lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read (goneSinceRead)
		}
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

// lstat is os.Lstat; a test removes the entry first (goneSinceRead).
var lstat = os.Lstat

// goneSinceRead: an entry removed between reading its directory and
// looking at it (gc expiring history copies while history or report
// lists them) was listed as a whole-listing "not found", which the
// pointer store took for a missing pointer-history directory: history
// printed no generation and the current copy missing, exit 0. It is left
// out, as a listing a moment later would.

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
		return nil, nil, underObject(err)
	}
	var files []storage.Object
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		ep := filepath.Join(p, e.Name())
		fi, err := lstat(ep)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read (goneSinceRead)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", p, err)
		}
		if isLink(fi) {
			if !b.opts.FollowLinks {
				// Reported, never followed: the caller leaves it alone.
				files = append(files, storage.Object{Key: path.Join(dir, e.Name()), Link: true})
				continue
			}
			if fi, err = os.Stat(ep); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
				// Dangling or a loop: reported as a link, for the caller
				// to judge by its name (a hidden .crc link is no data file).
				files = append(files, storage.Object{Key: path.Join(dir, e.Name()), Link: true})
				continue
			} else if err != nil {
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
	if err := os.Remove(b.path(key)); err != nil && !errors.Is(underObject(err), fs.ErrNotExist) {
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
