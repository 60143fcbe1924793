package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
			return nil, nil, storage.Refused(fmt.Errorf("lock %s: %w after %s: it is held by %s; find out why that process holds it (a gc deleting, a stuck publish) or raise --lock-timeout (ENGAGEMENT_LOCK_TIMEOUT; a publish also reads engagement.lockTimeout)",
				p, ErrLockTimeout, timeout, holder))
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
	// The pid is cleared while the lock is still held, so a waiter on a lock
	// some other tool's flock holds is not told of this process, long gone.
	// Closing the descriptor releases the lock; an error from Close cannot
	// undo a write that already happened, so it is not reported.
	return context.WithValue(ctx, heldKey{}, b), func() { _ = f.Truncate(0); f.Close() }, nil
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
