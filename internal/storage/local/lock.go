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

// holderOf names the lock's holder: the process the kernel lists as
// holding a flock on the file (/proc/locks), else the pid the holder wrote
// into it. The written pid alone can mislead: a writer killed with -9 leaves
// its pid in the file while the kernel drops its lock, and the next holder
// may be another tool's flock, which writes nothing.
func holderOf(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	recorded, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || recorded <= 0 {
		recorded = 0
	}
	if pid := kernelHolder(f); pid > 0 {
		if recorded > 0 && recorded != pid {
			return fmt.Sprintf("pid %d (the kernel's lock table; pid %d recorded in the lock file is a killed writer's)", pid, recorded)
		}
		return fmt.Sprintf("pid %d", pid)
	}
	switch {
	case recorded == 0:
		return "an unknown process (no pid recorded)"
	case !alive(recorded):
		return fmt.Sprintf("an unknown process (pid %d recorded in the lock file runs nowhere here: a killed writer's record, or a writer on another machine)", recorded)
	}
	return fmt.Sprintf("pid %d", recorded)
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return !errors.Is(err, fs.ErrNotExist)
}

// kernelHolder is the pid /proc/locks gives for a FLOCK on f's inode, or 0
// (no such file: not Linux; or no local holder: another machine's, over a
// network file system).
func kernelHolder(f *os.File) int {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	// As the kernel prints it: MAJ:MIN:INODE, the numbers in hex, the inode in decimal.
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(locks), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 5588 fe:00:9986083 0 EOF"; a waiter's
		// line has "->" after the number.
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[1] == "->" {
			continue
		}
		if fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
