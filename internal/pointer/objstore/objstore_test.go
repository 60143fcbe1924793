package objstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// newLocal is the store of a local warehouse directory.
func newLocal(dir string) *objstore.Store { return objstore.New(local.New(dir, local.Options{})) }

func TestConformance(t *testing.T) {
	pointertest.Run(t, func(t *testing.T) pointer.Store {
		return newLocal(t.TempDir())
	})
}

// backdoor writes the store's files directly, as a crash, an operator or
// an attacker would leave them.
type backdoor struct{ dir string }

func (b backdoor) PutHistory(t *testing.T, gen int64, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(b.dir, "pointer-history"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "pointer-history", strconv.FormatInt(gen, 10)+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b backdoor) PutPointer(t *testing.T, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "pointer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b backdoor) DeletePointer(t *testing.T) {
	t.Helper()
	if err := os.Remove(filepath.Join(b.dir, "pointer.json")); err != nil {
		t.Fatal(err)
	}
}

func (b backdoor) DeleteHistory(t *testing.T, gen int64) {
	t.Helper()
	if err := os.Remove(filepath.Join(b.dir, "pointer-history", strconv.FormatInt(gen, 10)+".json")); err != nil {
		t.Fatal(err)
	}
}

func TestChain(t *testing.T) {
	pointertest.RunChain(t, func(t *testing.T) (pointer.Store, pointertest.Backdoor) {
		dir := t.TempDir()
		return newLocal(dir), backdoor{dir}
	})
}

// A warehouse directory that does not exist yet reads as empty and is
// created by the first publish.
func TestCreatesWarehouse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "warehouse")
	s := newLocal(dir)
	if p, v, err := s.Load(t.Context()); err != nil || v != pointer.NoVersion || p.Generation != 0 {
		t.Fatalf("Load of a missing warehouse = %+v, %q, %v; want empty", p, v, err)
	}
	publish(t, s, "job-a", pointertest.Day0)
	if _, err := os.Stat(filepath.Join(dir, "pointer-history", "1.json")); err != nil {
		t.Fatal(err)
	}
}

// A corrupt pointer.json is an error naming the file, never an empty
// pointer: treating it as empty would let the next publish drop every date.
func TestCorruptPointer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		says    string
	}{
		{"Truncated", `{"format_version": 1, "generation": 3, "upd`, "copy the newest pointer-history/"},
		{"Empty", ``, "(0 bytes): the file is damaged"},
		{"NewerVersion", `{"format_version": 3, "generation": 3, "updated_by_job_id": "j", "dates": {}}`, ""},
		{"Format2WithoutLineage", `{"format_version": 2, "generation": 3, "updated_by_job_id": "j", "dates": {}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newLocal(dir)
			path := filepath.Join(dir, "pointer.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Load(t.Context())
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Load error = %v, want one naming %s and saying %q", err, path, tc.says)
			}
			_, err = pointer.Publish(t.Context(), s, pointertest.Commit("job-a", map[dates.Date]pointer.DateEntry{
				pointertest.Day0: pointertest.Entry("job-a", pointertest.Day0),
			}))
			if err == nil {
				t.Fatalf("Publish over a corrupt pointer succeeded")
			}
			if got, _ := os.ReadFile(path); string(got) != tc.content {
				t.Errorf("corrupt pointer.json was rewritten to %q", got)
			}
		})
	}
}

// A damaged history copy is not mended like pointer.json (by copying the
// newest history copy over it, which a history file's own generation then
// refuses): its error says what does mend it.
func TestCorruptHistory(t *testing.T) {
	for _, tc := range []struct{ name, content, says string }{
		{"Truncated", `{"format_version": 1, "generation": 1, "upd`, "(43 bytes): the file is damaged"},
		{"AnotherGeneration", "", "holds generation 2, not 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newLocal(dir)
			publish(t, s, "job-a", pointertest.Day0)
			publish(t, s, "job-b", pointertest.Day0)
			content := []byte(tc.content)
			if tc.content == "" {
				content, _ = os.ReadFile(filepath.Join(dir, "pointer-history", "2.json"))
			}
			if err := os.WriteFile(filepath.Join(dir, "pointer-history", "1.json"), content, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.LoadGeneration(t.Context(), 1)
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "restore it from a backup") ||
				strings.Contains(err.Error(), "copy the newest") {
				t.Fatalf("LoadGeneration error = %v, want one saying %q and how to restore a history copy", err, tc.says)
			}
		})
	}
}

// Writes go through temp files that are renamed or linked into place, so a
// successful publish leaves only the final names behind.
func TestNoTempFilesLeft(t *testing.T) {
	dir := t.TempDir()
	s := newLocal(dir)
	for i, job := range []string{"job-a", "job-b", "job-c"} {
		publish(t, s, job, pointertest.Day0.AddDays(i))
	}
	assertDir(t, dir, "pointer-history", "pointer.json", "pointer.lock")
	assertDir(t, filepath.Join(dir, "pointer-history"), "1.json", "2.json", "3.json")
	b, err := os.ReadFile(filepath.Join(dir, "pointer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Decode(b); err != nil {
		t.Errorf("pointer.json: %v", err)
	}
}

// Temp files of a writer that died mid-write are hidden: never mistaken
// for a generation or the pointer, and no obstacle to the next writer.
func TestCrashedWriterTempsIgnored(t *testing.T) {
	dir := t.TempDir()
	s := newLocal(dir)
	publish(t, s, "job-a", pointertest.Day0)
	for _, name := range []string{".tmp-123", "pointer-history/.tmp-456", "pointer-history/2.json.partial"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"trunc`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gens, err := s.Generations(t.Context())
	if err != nil || !slices.Equal(gens, []int64{1}) {
		t.Errorf("Generations with temps present = %v, %v; want [1]", gens, err)
	}
	publish(t, s, "job-b", pointertest.Day0)
	if gens, err := s.Generations(t.Context()); err != nil || !slices.Equal(gens, []int64{1, 2}) {
		t.Errorf("Generations = %v, %v; want [1 2]", gens, err)
	}
}

// Files written are readable by readers running as other users.
func TestFileModes(t *testing.T) {
	dir := t.TempDir()
	s := newLocal(dir)
	publish(t, s, "job-a", pointertest.Day0)
	for _, name := range []string{"pointer.json", "pointer-history/1.json"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v, want 0644", name, fi.Mode().Perm())
		}
	}
}

func publish(t *testing.T, s pointer.Store, jobID string, d dates.Date) pointer.Pointer {
	t.Helper()
	p, err := pointer.Publish(t.Context(), s, pointertest.Commit(jobID, map[dates.Date]pointer.DateEntry{d: pointertest.Entry(jobID, d)}))
	if err != nil {
		t.Fatalf("Publish %s: %v", jobID, err)
	}
	return p
}

func assertDir(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}

// Nothing is written through a symlink inside the warehouse: a symlinked
// pointer-history/, pointer.json or pointer.lock fails the Swap as not
// written, names the link, and nothing appears where it points.
func TestSymlinksRefused(t *testing.T) {
	for _, name := range []string{"pointer-history", "pointer.json", "pointer.lock"} {
		t.Run(name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			target := filepath.Join(elsewhere, "target")
			if name == "pointer-history" {
				if err := os.Mkdir(target, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			s := newLocal(dir)
			_, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-a", map[dates.Date]pointer.DateEntry{
				pointertest.Day0: pointertest.Entry("job-a", pointertest.Day0),
			}))
			if !errors.Is(err, local.ErrSymlink) || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
				t.Fatalf("Publish through a symlinked %s: %v, want ErrSymlink naming it", name, err)
			}
			if name != "pointer.json" && !errors.Is(err, pointer.ErrNotWritten) {
				t.Errorf("Publish through a symlinked %s: %v, want it reported as not written", name, err)
			}
			entries, _ := os.ReadDir(elsewhere)
			var inside []string
			if name == "pointer-history" {
				more, _ := os.ReadDir(target)
				for _, e := range more {
					inside = append(inside, e.Name())
				}
			}
			if (name != "pointer-history" && len(entries) != 0) || len(inside) != 0 {
				t.Errorf("something was written through the link: %v %v", entries, inside)
			}
		})
	}
}

// A held lock is given up after LockTimeout, naming the holder's pid, with
// nothing written.
func TestLockTimeout(t *testing.T) {
	dir := t.TempDir()
	publish(t, newLocal(dir), "job-a", pointertest.Day0)
	_, unlock, err := newLocal(dir).Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	s := objstore.New(local.New(dir, local.Options{LockTimeout: 200 * time.Millisecond}))
	start := time.Now()
	_, err = pointer.Publish(t.Context(), s, pointertest.Commit("job-b", map[dates.Date]pointer.DateEntry{
		pointertest.Day0: pointertest.Entry("job-b", pointertest.Day0),
	}))
	if !errors.Is(err, local.ErrLockTimeout) || !errors.Is(err, pointer.ErrNotWritten) || !strings.Contains(err.Error(), "held by pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("Publish under a held lock: %v, want ErrLockTimeout naming this process", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 30*time.Second {
		t.Errorf("gave up after %v, want about the 200ms timeout", took)
	}
	if cur, _, _ := s.Load(t.Context()); cur.UpdatedByJobID != "job-a" {
		t.Errorf("pointer now by %s", cur.UpdatedByJobID)
	}
}

// TestInterruptedWriteInCopiedWarehouse: a writer died between its commit
// (pointer-history/2.json) and its pointer.json replace; then the whole
// warehouse had its modes changed (chmod -R; cp -a and rsync -a likewise
// reset every change time): every change time is that moment's, so the
// modification times alone keep the order, and the next write still
// rolls generation 2 forward, where it was refused as a hand edit.
// pointer.json alone written after the copy (cp -p) is the hand edit.
func TestInterruptedWriteInCopiedWarehouse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		touch  []string // files whose modes change, a second after the writes
		refuse bool
	}{
		{"whole warehouse", []string{"pointer.json", "pointer-history/1.json", "pointer-history/2.json"}, false},
		{"pointer.json alone", []string{"pointer.json"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newLocal(dir)
			d := pointertest.Day0
			interruptedSecond(t, dir, s)
			// The history copy's modification time is its write's; a
			// second later, the modes change.
			time.Sleep(1100 * time.Millisecond)
			for _, f := range tc.touch {
				if err := os.Chmod(filepath.Join(dir, f), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			_, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-c", map[dates.Date]pointer.DateEntry{d.AddDays(1): pointertest.Entry("job-c", d.AddDays(1))}))
			if tc.refuse != errors.Is(err, pointer.ErrHandEdited) {
				t.Fatalf("publish: %v; want refused as a hand edit: %v", err, tc.refuse)
			}
			if !tc.refuse {
				if cur, _, err := s.Load(t.Context()); err != nil || cur.Generation != 3 || cur.Dates[d].JobID != "job-b" {
					t.Errorf("generation %d, %v: want 3 on top of the rolled-forward generation 2", cur.Generation, err)
				}
			}
		})
	}
}

// interruptedSecond publishes generation 1 (job-a, Day0) through s and
// leaves generation 2 (job-b) as an interrupted write does: its history
// copy in dir, pointer.json still at 1. It returns the copy's bytes.
func interruptedSecond(t *testing.T, dir string, s pointer.Store) []byte {
	t.Helper()
	d := pointertest.Day0
	p1, err := pointer.Publish(t.Context(), s, pointertest.Commit("job-a", map[dates.Date]pointer.DateEntry{d: pointertest.Entry("job-a", d)}))
	if err != nil {
		t.Fatal(err)
	}
	next := p1.Normalized()
	next.Generation, next.UpdatedByJobID = 2, "job-b"
	next.Parent = &pointer.Parent{Generation: 1, SHA256: p1.Digest}
	next.Dates = map[dates.Date]pointer.DateEntry{d: pointertest.Entry("job-b", d)}
	data, err := pointer.Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	backdoor{dir}.PutHistory(t, 2, data)
	return data
}

// finishesAfterStat is a bucket on which the writer of generation 2,
// whose history copy is written, replaces pointer.json once the copy's
// attributes have been read: the moment between Pending's checks and its
// answer.
type finishesAfterStat struct {
	storage.Bucket
	copyKey string
	data    []byte
	done    bool
}

func (b *finishesAfterStat) Stat(ctx context.Context, key string) (storage.Attrs, error) {
	a, err := b.Bucket.Stat(ctx, key)
	if key == b.copyKey && !b.done {
		b.done = true
		if _, perr := b.Bucket.Put(ctx, "pointer.json", b.data, storage.Cond{}); perr != nil {
			return a, perr
		}
	}
	return a, err
}

// TestPendingWriterFinished: history, which takes no lock, found
// generation 2's copy past pointer.json while its writer was between the
// copy and the replace, and called it an interrupted write (a monitor on
// pending_generation paged). A pointer.json that moved meanwhile is that
// writer's; Pending says nothing. Left as it is, the copy is pending.
func TestPendingWriterFinished(t *testing.T) {
	for _, finish := range []bool{false, true} {
		dir := t.TempDir()
		data := interruptedSecond(t, dir, newLocal(dir))
		b := &finishesAfterStat{Bucket: local.New(dir, local.Options{}), copyKey: "pointer-history/2.json", data: data, done: !finish}
		got, err := objstore.New(b).Pending(t.Context())
		switch {
		case err != nil:
			t.Fatalf("finish %v: %v", finish, err)
		case finish && got != nil:
			t.Errorf("the writer finished: Pending reports generation %d as interrupted", got.Generation)
		case !finish && (got == nil || got.Generation != 2):
			t.Errorf("nothing finished: Pending %v, want generation 2", got)
		}
	}
}
