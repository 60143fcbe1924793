package gc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gc"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

var (
	now  = time.Date(2026, 3, 10, 6, 0, 0, 0, time.UTC)
	old  = now.Add(-48 * time.Hour)
	day1 = dates.MustParse("2026-03-02")
)

// wh is a real local warehouse: pointer generations written by the local
// store, staging prefixes with attempt records, and the neighbours gc must
// never touch (raw kept inside the warehouse on purpose, rejections).
type wh struct {
	t      *testing.T
	dir    string
	bucket storage.Bucket
	store  *objstore.Store
}

func newWH(t *testing.T) *wh {
	t.Helper()
	w := &wh{t: t, dir: t.TempDir()}
	w.bucket = local.New(w.dir, local.Options{})
	w.store = objstore.New(w.bucket)
	w.file("raw/ingest_date=2026-03-02/part-0.parquet", "raw bytes", old)
	w.file("rejections/job_id=failed-old.json", `{"job_id":"failed-old"}`, old)
	return w
}

func (w *wh) file(rel, content string, mtime time.Time) {
	w.t.Helper()
	p := filepath.Join(w.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.touch(rel, mtime)
}

func (w *wh) touch(rel string, mtime time.Time) {
	w.t.Helper()
	if err := os.Chtimes(filepath.Join(w.dir, rel), mtime, mtime); err != nil {
		w.t.Fatal(err)
	}
}

// prefix writes a staging prefix as an attempt leaves it: the attempt
// record started at start, one staged file, everything last modified at
// mtime.
func (w *wh) prefix(id string, start, mtime time.Time) {
	w.t.Helper()
	rel := "staging/job_id=" + id
	b, _ := json.Marshal(map[string]any{"job_id": id, "started_at": start})
	w.file(rel+"/_attempt.json", string(b), mtime)
	w.file(rel+"/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", "staged "+id, mtime)
	for _, d := range []string{rel + "/fact_lesson_engagement/event_date=2026-03-02", rel + "/fact_lesson_engagement", rel} {
		w.touch(d, mtime)
	}
}

// publish moves the pointer to name job id for day1.
func (w *wh) publish(id string) {
	w.t.Helper()
	rel := "staging/job_id=" + id
	e := pointer.DateEntry{JobID: id, ManifestID: "m", EnrollmentSnapshotID: "e",
		FactFiles:      []pointer.File{{Path: rel + "/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", Bytes: 1, Rows: 1}},
		CourseDayFiles: []pointer.File{}, EventCount: 1, GateReport: rel + "/_gate.json"}
	if _, err := pointer.Publish(context.Background(), w.store, pointertest.Commit(id, map[dates.Date]pointer.DateEntry{day1: e})); err != nil {
		w.t.Fatal(err)
	}
	w.stamp(pointertest.WrittenAt)
}

// stamp sets the store's write time of pointer.json and of the current
// generation's copy to t, the writer's written_at: the tests' clock is
// simulated, and gc reads the store's times too.
func (w *wh) stamp(t time.Time) {
	w.t.Helper()
	cur, _, err := w.store.Load(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	w.touch("pointer.json", t)
	w.touch(fmt.Sprintf("pointer-history/%d.json", cur.Generation), t)
}

// tree hashes every entry under the warehouse; symlinks by their target.
func (w *wh) tree() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, lerr := os.Readlink(p)
			if lerr != nil {
				return lerr
			}
			out[rel] = "link:" + target
		case d.IsDir():
			out[rel+"/"] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(sum[:])
		}
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

func (w *wh) run(o gc.Options) (gc.Report, error) {
	o.Bucket, o.Store, o.Now = w.bucket, w.store, now
	if o.MinAge == 0 && !o.Force {
		o.MinAge = gc.DefaultMinAge
	}
	return gc.Run(context.Background(), o)
}

// populated builds the warehouse every verdict case lives in.
func populated(t *testing.T) (*wh, string) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.prefix("pub-2", old, old)
	w.publish("pub-1")
	w.publish("pub-2") // pub-1 is now named only by history generation 1
	w.prefix("failed-old", old, old)
	w.prefix("young", now.Add(-2*time.Hour), now.Add(-2*time.Hour))
	w.prefix("still-writing", old, old)
	w.file("staging/job_id=still-writing/course_day/event_date=2026-03-02/part-00000.parquet", "new", now.Add(-time.Minute))
	w.touch("staging/job_id=still-writing/course_day/event_date=2026-03-02", old)
	w.touch("staging/job_id=still-writing/course_day", old)
	w.touch("staging/job_id=still-writing", old)
	w.prefix("no-attempt", old, old)
	os.Remove(filepath.Join(w.dir, "staging/job_id=no-attempt/_attempt.json"))
	w.touch("staging/job_id=no-attempt", old)
	w.prefix("bad-attempt", old, old)
	w.file("staging/job_id=bad-attempt/_attempt.json", "{not json", old)
	w.prefix("other-attempt", old, old)
	w.file("staging/job_id=other-attempt/_attempt.json", `{"job_id":"someone-else","started_at":"2026-03-01T00:00:00Z"}`, old)
	w.prefix("future-start", now.Add(time.Hour), old) // a clock ahead of ours: young
	w.prefix("inner-link", old, old)
	if err := os.Symlink(filepath.Join(w.dir, "raw"), filepath.Join(w.dir, "staging/job_id=inner-link/raw-link")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	w.file("../"+filepath.Base(outside)+"/precious", "x", old)
	if err := os.Symlink(outside, filepath.Join(w.dir, "staging/job_id=escape")); err != nil {
		t.Fatal(err)
	}
	w.file("staging/notes.txt", "hands off", old)
	w.file("staging/scratch/file", "hands off", old)
	return w, outside
}

var wantVerdicts = []struct {
	path   string
	delete bool
	reason string
}{
	{"staging/job_id=bad-attempt", false, "does not record job_id"},
	{"staging/job_id=escape", false, "a symlink"},
	{"staging/job_id=failed-old", true, "named by no retained generation, idle 48h0m0s"},
	{"staging/job_id=future-start", false, "younger than --min-age"},
	{"staging/job_id=inner-link", false, "is a symlink"},
	{"staging/job_id=no-attempt", false, "no readable _attempt.json"},
	{"staging/job_id=other-attempt", false, "does not record job_id"},
	{"staging/job_id=pub-1", false, "named by history generation 1"},
	{"staging/job_id=pub-2", false, "named by the current pointer (generation 2)"},
	{"staging/job_id=still-writing", false, "last activity 1m0s ago"},
	{"staging/job_id=young", false, "last activity 2h0m0s ago, younger than --min-age 24h0m0s"},
	{"staging/notes.txt", false, "not a job_id=<id> staging prefix"},
	{"staging/scratch", false, "not a job_id=<id> staging prefix"},
}

func checkVerdicts(t *testing.T, rep gc.Report) {
	t.Helper()
	if len(rep.Verdicts) != len(wantVerdicts) {
		t.Fatalf("%d verdicts, want %d: %+v", len(rep.Verdicts), len(wantVerdicts), rep.Verdicts)
	}
	for i, want := range wantVerdicts {
		got := rep.Verdicts[i]
		if got.Path != want.path || got.Delete != want.delete || !strings.Contains(got.Reason, want.reason) {
			t.Errorf("verdict %d = %+v, want %s delete=%v reason ~%q", i, got, want.path, want.delete, want.reason)
		}
	}
	if rep.Generation != 2 {
		t.Errorf("judged against generation %d, want 2", rep.Generation)
	}
}

func TestGCDeletesOnlyOldUnreferencedPrefixes(t *testing.T) {
	w, outside := populated(t)
	before := w.tree()
	outsideBefore, _ := os.ReadFile(filepath.Join(outside, "precious"))

	rep, err := w.run(gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkVerdicts(t, rep)
	after := w.tree()
	for p, h := range before {
		gone := strings.HasPrefix(p, "staging/job_id=failed-old/")
		if _, ok := after[p]; ok == gone {
			t.Errorf("%s: present after gc = %v, want %v", p, ok, !gone)
		} else if ok && after[p] != h {
			t.Errorf("%s changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && p != "pointer.lock" && !strings.HasPrefix(p, "pointer-expiry/") {
			t.Errorf("gc created %s", p)
		}
	}
	checkStagingRecorded(t, w.bucket, "failed-old")
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != string(outsideBefore) {
		t.Errorf("the symlink's target outside staging changed: %q %v", b, err)
	}
	if d := rep.Deleted(); len(d) != 1 || d[0].Bytes != int64(len("staged failed-old")+len(`{"job_id":"failed-old","started_at":"2026-03-08T06:00:00Z"}`)) {
		t.Errorf("deleted %+v", d)
	}

	// A second run finds nothing more to delete.
	rep, err = w.run(gc.Options{})
	if err != nil || len(rep.Deleted()) != 0 {
		t.Errorf("second run: %v, deleted %+v", err, rep.Deleted())
	}
}

// TestGCProbes: a conditional-write probe a killed publish left (each
// publish deletes its own a moment after writing it) was never removed:
// gc deletes one idle over --min-age, keeps a young one (its publish may
// be running), and nothing else of the warehouse.
func TestGCProbes(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.file(".engagement-probe/job_id=killed.17a2", "probe\n", old)
	w.file(".engagement-probe/job_id=running.9f31", "probe\n", now.Add(-time.Minute))
	before := w.tree()
	rep, err := w.run(gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range rep.Verdicts {
		if strings.HasPrefix(v.Path, ".engagement-probe/") {
			got = append(got, fmt.Sprintf("%s delete=%v done=%v", v.Path, v.Delete, v.Done))
		}
	}
	if want := []string{".engagement-probe/job_id=killed.17a2 delete=true done=true", ".engagement-probe/job_id=running.9f31 delete=false done=false"}; !slices.Equal(got, want) {
		t.Errorf("probe verdicts %q, want %q", got, want)
	}
	after := w.tree()
	for p, h := range before {
		if _, ok := after[p]; ok == (p == ".engagement-probe/job_id=killed.17a2") || ok && after[p] != h {
			t.Errorf("%s: present after gc = %v, changed = %v", p, ok, ok && after[p] != h)
		}
	}
}

func TestGCDryRunDeletesNothing(t *testing.T) {
	w, _ := populated(t)
	before := w.tree()
	rep, err := w.run(gc.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	checkVerdicts(t, rep)
	sameTree(t, "dry run", before, w.tree())
}

// sameTree reports every entry added, removed or changed between two
// trees; pointer.lock, which gc may create to hold the pointer still, aside.
func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed or removed %s", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && p != "pointer.lock" {
			t.Errorf("%s created %s", what, p)
		}
	}
}

func TestGCFinishesAnInterruptedDelete(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.file("staging/.gc-deleting-job_id=gone/fact_lesson_engagement/x.parquet", "half", old)
	rep, err := w.run(gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Deleted(); len(d) != 1 || d[0].Path != "staging/.gc-deleting-job_id=gone" {
		t.Fatalf("deleted %+v", d)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/.gc-deleting-job_id=gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("leftover still there: %v", err)
	}
}

// A gc killed after marking a prefix and deleting part of it leaves the
// marker; the next gc finishes the prefix (named by nothing, idle, its
// attempt record already gone) and removes the marker with it.
func TestGCFinishesAMarkedPrefix(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("half", old, old)
	os.Remove(filepath.Join(w.dir, "staging/job_id=half/_attempt.json")) // deleted before the kill
	w.file("staging/.gc-deleting-job_id=half", "staging/job_id=half\n", old)
	rep, err := w.run(gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, v := range rep.Deleted() {
		paths = append(paths, v.Path)
	}
	if strings.Join(paths, ",") != "staging/.gc-deleting-job_id=half,staging/job_id=half" {
		t.Fatalf("deleted %v", paths)
	}
	for _, p := range []string{"staging/job_id=half", "staging/.gc-deleting-job_id=half"} {
		if _, err := os.Stat(filepath.Join(w.dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/job_id=pub-1/_attempt.json")); err != nil {
		t.Errorf("the published prefix was touched: %v", err)
	}
}

// TestGCMarkerOutlivesAStop: a second gc that stops before the marked
// prefix (here a delete between them fails, as a signal makes it) keeps
// the marker, which sorts first: deleted on its own, it left the prefix
// with neither marker nor _attempt.json, kept by every later gc as
// "inspect by hand". The next gc then finishes both.
func TestGCMarkerOutlivesAStop(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("half", old, old)
	os.Remove(filepath.Join(w.dir, "staging/job_id=half/_attempt.json"))
	w.file("staging/.gc-deleting-job_id=half", "staging/job_id=half\n", old)
	w.prefix("a-old", old, old) // sorts between the marker and its prefix
	real := w.bucket
	w.bucket = failingDeletes{Bucket: real, prefix: "job_id=a-old"}
	rep, err := w.run(gc.Options{})
	if err == nil {
		t.Fatal("the failing delete was not reported")
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/.gc-deleting-job_id=half")); err != nil {
		t.Fatalf("the marker was deleted before its prefix: %v", err)
	}
	for _, v := range rep.Verdicts {
		if v.Path == "staging/.gc-deleting-job_id=half" && v.Done {
			t.Error("the marker is reported deleted")
		}
	}
	w.bucket = real
	if _, err := w.run(gc.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"staging/job_id=half", "staging/.gc-deleting-job_id=half", "staging/job_id=a-old"} {
		if _, err := os.Stat(filepath.Join(w.dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after the next gc: %v", p, err)
		}
	}
}

// TestGCRacesARollback: a rollback that recorded a prefix while gc was
// deleting it (after gc's last look at the records) names deleted files
// once it lands; gc says so, exit 1, instead of exit 0.
func TestGCRacesARollback(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("a-old", old, old)
	// The rollback records the prefix while gc deletes it.
	w.bucket = failingDeletes{Bucket: w.bucket, prefix: "job_id=a-old", before: func() error {
		rec, _ := json.Marshal(history.Record{JobID: "back", ToGeneration: 1, Prefixes: []string{"staging/job_id=a-old"}})
		w.file("rollbacks/job_id=back.json", string(rec), now)
		return nil
	}}
	_, err := w.run(gc.Options{})
	if err == nil || !strings.Contains(err.Error(), "a rollback raced gc") || !strings.Contains(err.Error(), "staging/job_id=a-old") {
		t.Fatalf("error %v, want the race named", err)
	}
}

// TestGCNotesBesideRollbacks: an operator's fresh file in rollbacks/ (an
// incident's notes) is no record: gc and its dry run read it as one and
// exited 1 on every run until it aged past --min-age.
func TestGCNotesBesideRollbacks(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.file("rollbacks/NOTES.txt", "incident 42 notes", now)
	for _, o := range []gc.Options{{DryRun: true}, {}, {DryRun: true, RetainGenerations: 5}, {RetainGenerations: 5}} {
		rep, err := w.run(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if o.RetainGenerations == 0 {
			continue // records are judged with a retention rule only
		}
		found := false
		for _, v := range rep.Verdicts {
			if v.Path == "rollbacks/NOTES.txt" {
				found = !v.Delete && strings.Contains(v.Reason, "not a job_id=<id>.json record")
			}
		}
		if !found {
			t.Errorf("%+v: the notes are not reported kept as no record: %+v", o, rep.Verdicts)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "rollbacks/NOTES.txt")); err != nil {
		t.Errorf("the notes are gone: %v", err)
	}
}

// TestGCMarkersBypassNoRule: a .gc-deleting- name, whether an interrupted
// gc's or planted by hand, deletes nothing but itself; the prefix it names
// is judged by every rule (named, idle, a job_id= name), so a marker never
// takes published files or a running attempt with it.
func TestGCMarkersBypassNoRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *wh)
		kept  []string // must survive
		gone  []string // must be deleted
	}{
		{"a marker of the published prefix", func(w *wh) {
			w.file("staging/.gc-deleting-job_id=pub-1", "staging/job_id=pub-1\n", old)
		}, []string{"staging/job_id=pub-1/_attempt.json", "staging/.gc-deleting-job_id=pub-1"}, nil},
		{"an old gc's renamed directory named like the published prefix", func(w *wh) {
			w.file("staging/.gc-deleting-job_id=pub-1/x", "half", old)
		}, []string{"staging/job_id=pub-1/_attempt.json"}, []string{"staging/.gc-deleting-job_id=pub-1"}},
		{"a marker of a running attempt (a reused job id)", func(w *wh) {
			w.prefix("again", now.Add(-time.Minute), now.Add(-time.Minute))
			w.file("staging/.gc-deleting-job_id=again", "staging/job_id=again\n", old)
		}, []string{"staging/job_id=again/_attempt.json", "staging/.gc-deleting-job_id=again"}, nil},
		{"a marker of a prefix still being written, its record gone", func(w *wh) {
			w.prefix("busy", old, now.Add(-time.Minute))
			os.Remove(filepath.Join(w.dir, "staging/job_id=busy/_attempt.json"))
			w.file("staging/.gc-deleting-job_id=busy", "staging/job_id=busy\n", old)
		}, []string{"staging/job_id=busy", "staging/.gc-deleting-job_id=busy"}, nil},
		{"an operator's names", func(w *wh) {
			w.file("staging/.gc-deleting-keepme", "x", old)
			w.file("staging/keepme/notes", "x", old)
			w.file("staging/.gc-deleting-", "x", old)
			w.file("staging/.gc-deleting-..", "x", old)
		}, []string{"staging/keepme/notes", "staging/.gc-deleting-keepme", "staging/.gc-deleting-", "staging/.gc-deleting-.."}, nil},
		{"a marker whose prefix is gone", func(w *wh) {
			w.file("staging/.gc-deleting-job_id=done", "staging/job_id=done\n", old)
		}, nil, []string{"staging/.gc-deleting-job_id=done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWH(t)
			w.prefix("pub-1", old, old)
			w.publish("pub-1")
			tc.setup(w)
			if _, err := w.run(gc.Options{}); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.kept {
				if _, err := os.Stat(filepath.Join(w.dir, p)); err != nil {
					t.Errorf("%s: %v, want it kept", p, err)
				}
			}
			for _, p := range tc.gone {
				if _, err := os.Stat(filepath.Join(w.dir, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %v, want it deleted", p, err)
				}
			}
		})
	}
}

func TestGCRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *wh)
		opts  gc.Options
		usage bool
		want  string
	}{
		{"no pointer: maybe the wrong --warehouse", func(w *wh) {}, gc.Options{}, true, "has no pointer.json"},
		{"min-age below the floor", func(w *wh) { w.publish("pub-1") }, gc.Options{MinAge: 59 * time.Minute}, true, "below the floor 1h0m0s"},
		{"negative min-age", func(w *wh) { w.publish("pub-1") }, gc.Options{MinAge: -time.Hour, Force: true}, true, "must not be negative"},
		{"staging is a symlink", func(w *wh) {
			w.publish("pub-1")
			os.RemoveAll(filepath.Join(w.dir, "staging"))
			if err := os.Symlink(filepath.Join(w.dir, "raw"), filepath.Join(w.dir, "staging")); err != nil {
				w.t.Fatal(err)
			}
		}, gc.Options{}, false, "is a symlink"},
		{"unreadable history generation", func(w *wh) {
			w.publish("pub-1")
			w.publish("pub-2")
			w.file("pointer-history/1.json", "{", old)
		}, gc.Options{}, false, "read history generation 1"},
		// Publish and rollback refuse both; gc expired the history the
		// operator would check pointer.json against.
		{"current copy missing", func(w *wh) {
			w.publish("pub-1")
			w.publish("pub-2")
			os.Remove(filepath.Join(w.dir, "pointer-history", "2.json"))
		}, gc.Options{RetainGenerations: 1}, false, "pointer-history/2.json, the copy written with pointer.json (generation 2), is missing"},
		{"pointer.json edited in place", func(w *wh) {
			w.publish("pub-1")
			w.publish("pub-2")
			b, err := os.ReadFile(filepath.Join(w.dir, "pointer.json"))
			if err != nil {
				w.t.Fatal(err)
			}
			w.file("pointer.json", strings.Replace(string(b), `"event_count": 1`, `"event_count": 7`, 1), old)
		}, gc.Options{RetainGenerations: 1}, false, "one of the two was edited in place"},
		{"pointer.json put back by hand", func(w *wh) {
			w.publish("pub-1")
			w.publish("pub-2")
			w.publish("pub-3")
			b, err := os.ReadFile(filepath.Join(w.dir, "pointer-history", "1.json"))
			if err != nil {
				w.t.Fatal(err)
			}
			w.file("pointer.json", string(b), old)
		}, gc.Options{RetainGenerations: 1}, false, "pointer.json was replaced by hand or lost; nothing was changed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWH(t)
			w.prefix("failed-old", old, old)
			tc.setup(w)
			before := w.tree()
			_, err := w.run(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if got := errors.Is(err, exitcode.ErrUsage); got != tc.usage {
				t.Errorf("usage error = %v, want %v (%v)", got, tc.usage, err)
			}
			sameTree(t, "a refused run", before, w.tree())
		})
	}
}

func TestGCForcedShortMinAge(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("just-failed", now.Add(-time.Minute), now.Add(-time.Minute))
	rep, err := w.run(gc.Options{MinAge: 0, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Deleted(); len(d) != 1 || d[0].Path != "staging/job_id=just-failed" {
		t.Fatalf("deleted %+v", d)
	}
}

// racingStore publishes a generation naming victim the third time the
// pointer is loaded (gc loads it to check it against its copy, to judge,
// and to re-check), as a publisher finishing between gc's read and its
// re-check would. It hides the local store's Lock, as a store without one.
type racingStore struct {
	pointer.Store
	w      *wh
	victim string
	loads  int
}

func (s *racingStore) Load(ctx context.Context) (pointer.Pointer, pointer.Version, error) {
	s.loads++
	if s.loads == 3 {
		s.w.publish(s.victim)
	}
	return s.Store.Load(ctx)
}

func TestGCReportsARacingPublisher(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("slow-1", old, old)
	rs := &racingStore{Store: w.store, w: w, victim: "slow-1"}
	_, err := gc.Run(context.Background(), gc.Options{Bucket: w.bucket, Store: rs, Now: now, MinAge: gc.DefaultMinAge})
	if err == nil || !strings.Contains(err.Error(), "staging/job_id=slow-1 was deleted but the current pointer (generation 2) now names it") {
		t.Fatalf("err = %v", err)
	}
}

// gc decides and deletes under the pointer's writer lock, so a Swap cannot
// land in between; a dry run deletes nothing and does not wait for it.
func TestGCHoldsThePointerLock(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("failed-old", old, old)
	_, unlock, err := w.store.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts := gc.Options{Bucket: w.bucket, Store: w.store, Now: now, MinAge: gc.DefaultMinAge}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := gc.Run(ctx, opts); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gc while a writer holds the lock: err = %v, want it to wait until the deadline", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/job_id=failed-old")); err != nil {
		t.Fatalf("gc deleted without the lock: %v", err)
	}
	dry := opts
	dry.DryRun = true
	if rep, err := gc.Run(context.Background(), dry); err != nil || len(rep.Deleted()) != 1 {
		t.Fatalf("dry run under a held lock: %v %+v", err, rep.Deleted())
	}
	unlock()
	if rep, err := gc.Run(context.Background(), opts); err != nil || len(rep.Deleted()) != 1 {
		t.Fatalf("gc after the lock was released: %v %+v", err, rep.Deleted())
	}
}

// TestGCOnS3 keeps the safety rules on an S3 warehouse, where modification
// times are the server's: what the pointer or its history names, raw and
// rejections are never touched, nor a prefix without a readable attempt
// record for its id, nor one younger than the minimum age (by its objects or
// its recorded start); an old unreferenced prefix is deleted whole.
func TestGCOnS3(t *testing.T) {
	ctx := context.Background()
	b := s3test.Bucket(t)
	store := objstore.New(b)
	put := func(key, content string) {
		t.Helper()
		if _, err := b.Put(ctx, key, []byte(content), storage.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	serverNow := time.Now()
	prefix := func(id string, start time.Time) {
		rel := "staging/job_id=" + id
		a, _ := json.Marshal(map[string]any{"job_id": id, "started_at": start})
		put(rel+"/_attempt.json", string(a))
		put(rel+"/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", "staged "+id)
	}
	put("raw/ingest_date=2026-03-02/part-0.parquet", "raw bytes")
	put("rejections/job_id=failed-old.json", `{"job_id":"failed-old"}`)
	for _, id := range []string{"pub-1", "pub-2"} {
		prefix(id, serverNow.Add(-time.Hour))
		rel := "staging/job_id=" + id
		e := pointer.DateEntry{JobID: id, ManifestID: "m", EnrollmentSnapshotID: "e",
			FactFiles:      []pointer.File{{Path: rel + "/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", Bytes: 1, Rows: 1}},
			CourseDayFiles: []pointer.File{}, EventCount: 1, GateReport: rel + "/_gate.json"}
		if _, err := pointer.Publish(ctx, store, pointertest.Commit(id, map[dates.Date]pointer.DateEntry{day1: e})); err != nil {
			t.Fatal(err)
		}
	}
	prefix("failed-old", serverNow.Add(-time.Hour))
	prefix("future-start", serverNow.Add(72*time.Hour))
	prefix("no-attempt", serverNow.Add(-time.Hour))
	if err := b.Delete(ctx, "staging/job_id=no-attempt/_attempt.json"); err != nil {
		t.Fatal(err)
	}
	prefix("other-attempt", serverNow.Add(-time.Hour))
	put("staging/job_id=other-attempt/_attempt.json", `{"job_id":"someone-else","started_at":"2026-03-01T00:00:00Z"}`)
	put("staging/notes.txt", "hands off")

	tree := func() map[string]string {
		objs, err := b.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, o := range objs {
			out[o.Key] = o.Version
		}
		return out
	}
	before := tree()
	run := func(now time.Time) gc.Report {
		t.Helper()
		rep, err := gc.Run(ctx, gc.Options{Bucket: b, Store: store, Now: now, MinAge: gc.DefaultMinAge})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// Now: every object was just written, so every prefix is young.
	if d := run(time.Now()).Deleted(); len(d) != 0 {
		t.Fatalf("deleted %+v although every object is minutes old", d)
	}
	rep := run(time.Now().Add(48 * time.Hour))
	want := map[string]string{
		"staging/job_id=failed-old":    "named by no retained generation",
		"staging/job_id=future-start":  "younger than --min-age",
		"staging/job_id=no-attempt":    "no readable _attempt.json",
		"staging/job_id=other-attempt": "does not record job_id",
		"staging/job_id=pub-1":         "named by history generation 1",
		"staging/job_id=pub-2":         "named by the current pointer (generation 2)",
		"staging/notes.txt":            "not a job_id=<id> staging prefix",
	}
	if len(rep.Verdicts) != len(want) {
		t.Errorf("%d verdicts, want %d: %+v", len(rep.Verdicts), len(want), rep.Verdicts)
	}
	for _, v := range rep.Verdicts {
		if !strings.Contains(v.Reason, want[v.Path]) || want[v.Path] == "" || v.Delete != (v.Path == "staging/job_id=failed-old") {
			t.Errorf("verdict %+v, want reason ~%q", v, want[v.Path])
		}
	}
	after := tree()
	for k, v := range before {
		gone := strings.HasPrefix(k, "staging/job_id=failed-old/")
		if a, ok := after[k]; ok == gone || (ok && a != v) {
			t.Errorf("%s: present %v (version %q, was %q), want present %v and unchanged", k, ok, a, v, !gone)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && k != "pointer-expiry/2.json" {
			t.Errorf("gc created %s", k)
		}
	}
	checkStagingRecorded(t, b, "failed-old")

	// Retention on S3: generation 1 expires, then pub-1's prefix and the old
	// rejection record go; the current generation and what it names stay.
	rep, err := gc.Run(ctx, gc.Options{Bucket: b, Store: store, Now: time.Now().Add(48 * time.Hour), MinAge: gc.DefaultMinAge, RetainGenerations: 1})
	if err != nil {
		t.Fatal(err)
	}
	if gens, err := store.Generations(ctx); err != nil || len(gens) != 1 || gens[0] != 2 || len(rep.Expired) != 1 {
		t.Errorf("after retention: history %v (%v), expired %v; want [2] and [1]", gens, err, rep.Expired)
	}
	final := tree()
	for _, gone := range []string{"staging/job_id=pub-1/_attempt.json", "rejections/job_id=failed-old.json", "pointer-history/1.json"} {
		if _, ok := final[gone]; ok {
			t.Errorf("%s survived retention", gone)
		}
	}
	for _, kept := range []string{"staging/job_id=pub-2/_attempt.json", "pointer.json", "pointer-history/2.json", "pointer-expiry/1.json", "raw/ingest_date=2026-03-02/part-0.parquet"} {
		if _, ok := final[kept]; !ok {
			t.Errorf("%s is gone after retention", kept)
		}
	}
}

// refusingMarks is a real local bucket that refuses gc's deletion marker
// for one prefix, as a store denying writes part way would.
type refusingMarks struct {
	storage.Bucket
	prefix string
}

func (b refusingMarks) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if strings.Contains(key, b.prefix) {
		return storage.Attrs{}, fmt.Errorf("write %s: access denied: %w", key, storage.ErrRefused)
	}
	return b.Bucket.Put(ctx, key, data, c)
}

// TestGCStoppedPartWay: a run that fails part way says which deletions it
// made (Done) and which it had not reached, which are still there.
func TestGCStoppedPartWay(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("a-old", old, old)
	w.prefix("b-old", old, old)
	w.bucket = refusingMarks{Bucket: w.bucket, prefix: "job_id=b-old"}
	rep, err := w.run(gc.Options{})
	if !errors.Is(err, storage.ErrRefused) {
		t.Fatalf("gc: %v, want the refused mark", err)
	}
	done := map[string]bool{}
	for _, v := range rep.Deleted() {
		done[v.Path] = v.Done
	}
	if !done["staging/job_id=a-old"] {
		t.Errorf("a-old not reported done: %+v", rep.Deleted())
	}
	if d, ok := done["staging/job_id=b-old"]; !ok || d {
		t.Errorf("b-old: to delete %v, done %v; want to delete, not done: %+v", ok, d, rep.Deleted())
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/job_id=b-old/_attempt.json")); err != nil {
		t.Errorf("b-old: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/job_id=a-old")); !os.IsNotExist(err) {
		t.Errorf("a-old still there: %v", err)
	}
}

// keptMarks is a real local bucket whose deletes of gc's markers fail, as
// a signal after a prefix's delete would make them.
type keptMarks struct{ storage.Bucket }

func (b keptMarks) Delete(ctx context.Context, key string) error {
	if strings.Contains(key, ".gc-deleting-") {
		return fmt.Errorf("delete %s: %w", key, context.Canceled)
	}
	return b.Bucket.Delete(ctx, key)
}

// TestGCStoppedAfterADelete: a prefix deleted before the run failed (its
// marker not removed) is reported done, not "not deleted".
func TestGCStoppedAfterADelete(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("a-old", old, old)
	w.bucket = keptMarks{Bucket: w.bucket}
	rep, err := w.run(gc.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("gc: %v, want the failed unmark", err)
	}
	if d := rep.Deleted(); len(d) != 1 || d[0].Path != "staging/job_id=a-old" || !d[0].Done {
		t.Errorf("deleted %+v, want staging/job_id=a-old done", d)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/job_id=a-old")); !os.IsNotExist(err) {
		t.Errorf("a-old still there: %v", err)
	}
}

// checkStagingRecorded: the job id of a staging prefix gc deleted is in an
// expiry record, so the id stays taken (history.CheckRecords refuses it).
func checkStagingRecorded(t *testing.T, b storage.Bucket, jobID string) {
	t.Helper()
	exps, err := history.Expiries(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exps {
		if slices.Contains(e.RecordJobIDs, jobID) {
			if err := history.CheckRecords(context.Background(), b, jobID); exitcode.Code(err) != exitcode.Usage {
				t.Errorf("CheckRecords(%s) = %v, want exit 2", jobID, err)
			}
			return
		}
	}
	t.Errorf("no expiry record lists %s, whose staging gc deleted: %+v", jobID, exps)
}

// TestGCAgainMergesItsRecord: a second gc that frees job ids while the
// current generation is the same merges them into the first run's expiry
// record, under the pointer lock it holds. The merge's conditional write
// took that lock again and waited on its own holder until the lock
// timeout (exit 1 on every gc until the next publish).
func TestGCAgainMergesItsRecord(t *testing.T) {
	w := newWH(t)
	w.bucket = local.New(w.dir, local.Options{LockTimeout: 2 * time.Second})
	w.store = objstore.New(w.bucket)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	for _, id := range []string{"crashed-a", "crashed-b"} {
		w.prefix(id, old, old)
		if _, err := w.run(gc.Options{}); err != nil {
			t.Fatalf("gc after %s: %v", id, err)
		}
	}
	exps, err := history.Expiries(context.Background(), w.bucket)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range exps {
		ids = append(ids, e.RecordJobIDs...)
	}
	if len(exps) != 1 || !slices.Contains(ids, "crashed-a") || !slices.Contains(ids, "crashed-b") {
		t.Errorf("expiry records %+v, want one listing crashed-a and crashed-b", exps)
	}
}

// TestGCMarkerAbortsUploads: a gc stopped between deleting a prefix's
// objects and aborting its multipart uploads (S3's DeletePrefix aborts
// them last) leaves only its marker. The next gc deletes the marker and
// aborts the uploads under the prefix it names, which nothing would list
// again (they and their stored parts stayed for ever).
func TestGCMarkerAbortsUploads(t *testing.T) {
	ctx := context.Background()
	loc := s3test.Location(t)
	_, c, err := open.S3(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := s3.New(c, loc)
	store := objstore.New(b)
	e := pointer.DateEntry{JobID: "pub-1", ManifestID: "m", EnrollmentSnapshotID: "e", FactFiles: []pointer.File{}, CourseDayFiles: []pointer.File{}}
	if _, err := pointer.Publish(ctx, store, pointertest.Commit("pub-1", map[dates.Date]pointer.DateEntry{day1: e})); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "staging/.gc-deleting-job_id=z", []byte("staging/job_id=z\n"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	key := loc.Key + "/staging/job_id=z/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"
	up, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String(loc.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String(loc.Bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("PAR1 part")}); err != nil {
		t.Fatal(err)
	}
	rep, err := gc.Run(ctx, gc.Options{Bucket: b, Store: store, Now: time.Now().Add(48 * time.Hour), MinAge: gc.DefaultMinAge})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Deleted(); len(d) != 1 || d[0].Path != "staging/.gc-deleting-job_id=z" {
		t.Fatalf("deleted %+v, want the marker", d)
	}
	out, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String(loc.Bucket), Prefix: aws.String(loc.Key + "/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 0 {
		t.Errorf("%d uploads left under the warehouse, first %s", len(out.Uploads), aws.ToString(out.Uploads[0].Key))
	}
}

// TestGCHistoryNotFoundForAMoment: a listed history copy that the store
// answers "not found" for once, while an older generation is retained, is
// no expired generation (gc expires the oldest first): gc stops before
// deleting anything. It skipped it, deleted the staging only that
// generation named, and blamed a publisher race; a rollback to it then
// failed. A copy older than every readable one that is gone (a gc that
// expired it since the listing) is still skipped.
func TestGCHistoryNotFoundForAMoment(t *testing.T) {
	ctx := context.Background()
	loc := s3test.Location(t)
	proxy := s3test.StartProxy(t)
	_, c, err := open.S3(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts := c.Options()
	opts.BaseEndpoint = aws.String(proxy.URL)
	b := s3.New(awss3.New(opts), loc)
	store := objstore.New(b)
	start := time.Now().Add(-time.Hour)
	for _, id := range []string{"pub-1", "pub-2", "pub-3", "pub-4"} {
		rel := "staging/job_id=" + id
		a, _ := json.Marshal(map[string]any{"job_id": id, "started_at": start})
		if _, err := b.Put(ctx, rel+"/_attempt.json", a, storage.Cond{}); err != nil {
			t.Fatal(err)
		}
		f := rel + "/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"
		if _, err := b.Put(ctx, f, []byte("staged "+id), storage.Cond{}); err != nil {
			t.Fatal(err)
		}
		e := pointer.DateEntry{JobID: id, ManifestID: "m", EnrollmentSnapshotID: "e",
			FactFiles: []pointer.File{{Path: f, Bytes: 1, Rows: 1}}, CourseDayFiles: []pointer.File{}, EventCount: 1, GateReport: rel + "/_gate.json"}
		if _, err := pointer.Publish(ctx, store, pointertest.Commit(id, map[dates.Date]pointer.DateEntry{day1: e})); err != nil {
			t.Fatal(err)
		}
	}
	// missing answers "not found" to the reads of history copy gen given
	// by their number (1: the first read of it).
	type missing map[string][]int
	for _, tc := range []struct {
		name    string
		missing missing
		faults  int // how many of them the run meets
		refused bool
		deleted []string
	}{
		// Asked again, it is there: nothing is deleted that it names.
		{"generation 2 for a moment", missing{"2": {1}}, 1, false, nil},
		// Generation 1 is retained: 2 was not expired.
		{"generation 2 twice", missing{"2": {1, 2}}, 2, true, nil},
		// The oldest, gone since the listing, as a gc's expiry leaves it.
		{"generation 1", missing{"1": {1}}, 1, false, []string{"staging/job_id=pub-1"}},
		// Another gc (no lock on S3) expired 1 and then 2 while this one
		// read them: 1 is gone when read again. What 1 named when it was
		// read stays kept.
		{"generations 1 and 2 expired by another gc", missing{"2": {1, 2}, "1": {2}}, 3, false, []string{"staging/job_id=pub-2"}},
		// Another gc expiring 1 says nothing of 3 while 2, read just
		// before it, is still there (1 is not asked again).
		{"generation 3 gone and 1 expired", missing{"3": {1, 2}, "1": {2}}, 2, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			reads, injected := map[string]int{}, 0
			proxy.SetRule(func(r s3test.Request) s3test.Fault {
				mu.Lock()
				defer mu.Unlock()
				for gen, which := range tc.missing {
					if r.Method == "GET" && strings.HasSuffix(r.Key, "/pointer-history/"+gen+".json") {
						reads[gen]++
						if slices.Contains(which, reads[gen]) {
							injected++
							return s3test.NotFound
						}
					}
				}
				return s3test.Pass
			})
			rep, err := gc.Run(ctx, gc.Options{Bucket: b, Store: store, Now: time.Now().Add(48 * time.Hour), MinAge: gc.DefaultMinAge, DryRun: true})
			if injected != tc.faults {
				t.Fatalf("%d faults injected, want %d: the test did not test", injected, tc.faults)
			}
			if tc.refused {
				want := "was listed but reads as not found while the older generation"
				if err == nil || !strings.Contains(err.Error(), want) || exitcode.Code(err) != exitcode.Error {
					t.Fatalf("gc: %v (exit %d), want exit 1 saying %q", err, exitcode.Code(err), want)
				}
				return
			}
			if err != nil {
				t.Fatalf("gc: %v", err)
			}
			var got []string
			for _, v := range rep.Deleted() {
				got = append(got, v.Path)
			}
			if !slices.Equal(got, tc.deleted) {
				t.Errorf("would delete %v, want %v (named by the generations gone)", got, tc.deleted)
			}
		})
	}
}

// failingDeletes is a real local bucket whose prefix deletes under prefix
// fail part way, as a signal during the delete makes them; with before,
// they run it first instead, and fail only with its error (another
// process acting during the delete).
type failingDeletes struct {
	storage.Bucket
	prefix string
	before func() error
}

func (b failingDeletes) DeletePrefix(ctx context.Context, p string) error {
	if strings.Contains(p, b.prefix) {
		if b.before == nil {
			return fmt.Errorf("delete %s: %w", p, context.Canceled)
		}
		if err := b.before(); err != nil {
			return err
		}
	}
	return b.Bucket.DeletePrefix(ctx, p)
}

// TestGCStoppedWhileDeleting: a prefix whose delete began (its marker
// written) and did not end is reported Marked, neither done nor "not
// deleted": it may be partly gone, and the next gc finishes it.
func TestGCStoppedWhileDeleting(t *testing.T) {
	w := newWH(t)
	w.prefix("pub-1", old, old)
	w.publish("pub-1")
	w.prefix("a-old", old, old)
	w.bucket = failingDeletes{Bucket: w.bucket, prefix: "job_id=a-old"}
	rep, err := w.run(gc.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("gc: %v, want the cancelled delete", err)
	}
	for _, v := range rep.Deleted() {
		if v.Path == "staging/job_id=a-old" && (v.Done || !v.Marked) {
			t.Errorf("a-old: done %t, marked %t; want marked, not done", v.Done, v.Marked)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "staging/.gc-deleting-job_id=a-old")); err != nil {
		t.Errorf("the marker: %v", err)
	}
}
