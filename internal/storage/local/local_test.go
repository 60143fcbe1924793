package local_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		return local.New(t.TempDir(), local.Options{})
	})
}

// A warehouse bucket never reads, lists, writes or deletes through a
// symlink below its root; the root itself may be one; an input bucket may
// follow links on purpose.
func TestSymlinks(t *testing.T) {
	ctx := t.Context()
	real, elsewhere := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "f"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(real, root); err != nil {
		t.Fatal(err)
	}
	b := local.New(root, local.Options{})
	if _, err := b.Put(ctx, "staging/ok.json", []byte("{}"), storage.Cond{}); err != nil {
		t.Fatalf("write through a symlinked root: %v", err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(real, "linked")); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Put":          func() error { _, err := b.Put(ctx, "linked/new.json", []byte("x"), storage.Cond{}); return err },
		"Get":          func() error { _, _, err := b.Get(ctx, "linked/f"); return err },
		"List":         func() error { _, err := b.List(ctx, ""); return err },
		"Delete":       func() error { return b.Delete(ctx, "linked/f") },
		"DeletePrefix": func() error { return b.DeletePrefix(ctx, "linked/") },
		"WriteURI":     func() error { _, err := b.WriteURI(ctx, "linked/dir"); return err },
	} {
		err := op()
		if !errors.Is(err, local.ErrSymlink) || !errors.Is(err, storage.ErrRefused) || !strings.Contains(err.Error(), filepath.Join(root, "linked")) {
			t.Errorf("%s through a symlink: %v, want ErrSymlink naming it", name, err)
		}
	}
	files, _, err := b.ListDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Key == "linked" && !f.Link {
			t.Errorf("ListDir reports the symlink without Link set")
		}
	}
	if got, _ := os.ReadFile(filepath.Join(elsewhere, "f")); string(got) != "outside" {
		t.Errorf("the link's target changed: %q", got)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
		t.Errorf("something was written through the link: %v", entries)
	}
	in := local.New(real, local.Options{FollowLinks: true})
	if data, _, err := in.Get(ctx, "linked/f"); err != nil || string(data) != "outside" {
		t.Errorf("an input bucket following links: %q, %v", data, err)
	}
}

// A directory where an object is asked for is no object, and no other
// writer's either: Get and Stat say not-exist and, beside it, ErrNotObject
// (which the pointer store takes for damage), and a create is refused, not
// a lost race a caller would retry.
func TestDirectoryInAnObjectsPlace(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "pointer-history", "2.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := local.New(root, local.Options{})
	key := "pointer-history/2.json"
	if _, _, err := b.Get(ctx, key); !storage.IsNotExist(err) || !errors.Is(err, storage.ErrNotObject) {
		t.Errorf("Get: %v, want not-exist and ErrNotObject", err)
	}
	if _, err := b.Stat(ctx, key); !storage.IsNotExist(err) || !errors.Is(err, storage.ErrNotObject) {
		t.Errorf("Stat: %v, want not-exist and ErrNotObject", err)
	}
	_, err := b.Put(ctx, key, []byte("{}"), storage.Cond{IfAbsent: true})
	if !errors.Is(err, storage.ErrRefused) || !errors.Is(err, storage.ErrNotObject) || errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("create: %v, want refused (ErrNotObject), not a precondition failure", err)
	}
}

// A temp file a killed writer left (older than an hour) goes with the next
// write in its directory; a fresh one, maybe a live writer's, stays.
func TestStaleTempsSwept(t *testing.T) {
	root := t.TempDir()
	b := local.New(root, local.Options{SweepTemps: true})
	stale, fresh := filepath.Join(root, ".tmp-111"), filepath.Join(root, ".tmp-222")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), "pointer.json", []byte("{}"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp: stat err %v, want it removed", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp: %v, want it kept", err)
	}
}

// TestLockHolderNamed: a lock another process's flock holds is named by
// the kernel's lock table, not by the pid in the file. After a clean
// unlock the file records no pid; after a writer killed with -9 it records
// that writer's, long gone, and the next holder (another tool's flock)
// writes nothing: that pid was named, with "maybe another machine".
func TestLockHolderNamed(t *testing.T) {
	if lock := os.Getenv("ENGAGEMENT_TEST_HOLD_LOCK"); lock != "" {
		// The foreign holder: flock the file, say so, hold until stdin closes.
		f, err := os.Open(lock)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = io.ReadAll(os.Stdin)
		os.Exit(0)
	}
	for _, tc := range []struct {
		name     string
		recorded string // what the lock file holds when the other process takes it
		want     string
	}{
		{"cleared on unlock", "", ""},
		{"a killed writer's pid", "999999\n", " (the kernel's lock table; pid 999999 recorded in the lock file is a killed writer's)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			b := local.New(root, local.Options{LockTimeout: 50 * time.Millisecond})
			_, unlock, err := b.Lock(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			lock := filepath.Join(root, local.LockName)
			if err := os.WriteFile(lock, []byte(tc.recorded), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderNamed$")
			cmd.Env = append(os.Environ(), "ENGAGEMENT_TEST_HOLD_LOCK="+lock)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); _ = cmd.Wait() }()
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
				t.Fatalf("the holding process said %q, %v", line, err)
			}
			_, _, err = b.Lock(t.Context())
			if !errors.Is(err, local.ErrLockTimeout) {
				t.Fatalf("lock held by another process: err %v, want ErrLockTimeout", err)
			}
			if want := "held by pid " + strconv.Itoa(cmd.Process.Pid) + tc.want; !strings.Contains(err.Error(), want) {
				t.Errorf("err %q: want %q", err, want)
			}
		})
	}
}

// TestFailedWriteLeavesNoTemp: a write that fails part way (here the file
// size limit, EFBIG, as a full disk fails it with ENOSPC) removes its temp
// file and names the object it was writing. Every such temp was left, and
// the error named only the temp (".tmp-123: ... .tmp-123"), not which
// record failed.
func TestFailedWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	b := local.New(dir, local.Options{})
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	// Go ignores SIGXFSZ, so the write returns EFBIG. The limit is the
	// process's: restored at once, before any other write of this test.
	limited := syscall.Rlimit{Cur: 256 << 10, Max: old.Max} // above the test log the framework writes meanwhile
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Fatal(err)
	}
	_, putErr := b.Put(t.Context(), "records/big.json", make([]byte, 4<<20), storage.Cond{})
	_, createErr := b.Put(t.Context(), "records/new.json", make([]byte, 4<<20), storage.Cond{IfAbsent: true})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"big.json": putErr, "new.json": createErr} {
		if err == nil || !strings.Contains(err.Error(), "write "+filepath.Join(dir, "records", name)+":") || !errors.Is(err, syscall.EFBIG) {
			t.Errorf("%s: %v, want EFBIG naming the object", name, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "records"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}
