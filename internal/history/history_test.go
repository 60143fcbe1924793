package history_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/internal/storage/storagetest"
)

var (
	mon = dates.MustParse("2026-03-02")
	tue = dates.MustParse("2026-03-03")
	at  = time.Date(2026, 3, 5, 6, 0, 0, 0, time.UTC)
)

// wh is a local warehouse whose generations name real files.
type wh struct {
	t      *testing.T
	dir    string
	bucket storage.Bucket
	store  *objstore.Store
}

func newWH(t *testing.T) *wh {
	dir := t.TempDir()
	b := local.New(dir, local.Options{})
	return &wh{t: t, dir: dir, bucket: b, store: objstore.New(b)}
}

// entry writes job's staged file for d (size bytes) and its gate report.
func (w *wh) entry(job string, d dates.Date, size int) pointer.DateEntry {
	w.t.Helper()
	rel := "staging/job_id=" + job + "/fact_lesson_engagement/event_date=" + d.String() + "/part-00000.parquet"
	data := pointertest.ParquetLike(size, 1)
	w.write(rel, string(data))
	w.write("staging/job_id="+job+"/_gate.json", "{}")
	return pointer.DateEntry{JobID: job, ManifestID: "m-" + job, EnrollmentSnapshotID: "e", EventCount: int64(size),
		FactFiles: []pointer.File{{Path: rel, Bytes: int64(len(data)), Rows: 1}}, CourseDayFiles: []pointer.File{},
		GateReport: "staging/job_id=" + job + "/_gate.json"}
}

func (w *wh) write(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wh) publish(job string, ds ...dates.Date) {
	w.t.Helper()
	es := map[dates.Date]pointer.DateEntry{}
	for i, d := range ds {
		es[d] = w.entry(job, d, 10+i+len(job))
	}
	if _, err := pointer.Publish(w.t.Context(), w.store, pointertest.Commit(job, es)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wh) rollback(job string, to int64, ds ...dates.Date) error {
	_, err := history.Rollback{Bucket: w.bucket, Store: w.store, Dates: ds, To: to, JobID: job, Now: at, WriterVersion: "test"}.Run(w.t.Context())
	return err
}

func (w *wh) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(w.dir, rel))
	return err == nil
}

func (w *wh) pointerBytes() []byte {
	b, _ := os.ReadFile(filepath.Join(w.dir, "pointer.json"))
	return b
}

// TestList: each retained generation lists the dates it changed, a
// rollback says where it came from, --date filters, expiry is recorded.
func TestList(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue) // 1: mon, tue
	w.publish("b", mon)      // 2: mon
	w.publish("c", tue)      // 3: tue
	if err := w.rollback("back", 1, mon); err != nil {
		t.Fatal(err) // 4: mon back to a
	}
	log, err := history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		gen  int64
		date dates.Date
		job  string
		op   string
		src  int64
	}
	var got []row
	for _, c := range log.Changes {
		got = append(got, row{c.Generation, c.Date, c.JobID, c.Operation, c.SourceGeneration})
	}
	want := []row{
		{4, mon, "a", pointer.OpRollback, 1},
		{3, tue, "c", pointer.OpPublish, 0},
		{2, mon, "b", pointer.OpPublish, 0},
		{1, mon, "a", pointer.OpPublish, 0},
		{1, tue, "a", pointer.OpPublish, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if log.Current != 4 || !log.Changes[0].Current || log.Changes[1].Current {
		t.Errorf("current generation %d, flags %v %v; want 4 on the first row only", log.Current, log.Changes[0].Current, log.Changes[1].Current)
	}
	if c := log.Changes[0]; c.Files != 1 || c.Bytes != int64(10+1+15) || c.ManifestID != "m-a" || c.UpdatedByJobID != "back" {
		t.Errorf("rollback row %+v: want a's one file of 26 bytes, manifest m-a, updated by back", c)
	}
	only, err := history.List(t.Context(), w.store, w.bucket, &tue)
	if err != nil || len(only.Changes) != 2 || only.Changes[0].Generation != 3 || only.Changes[1].Generation != 1 {
		t.Errorf("--date %s: %+v, %v; want generations 3 and 1", tue, only.Changes, err)
	}

	// Expire 1 and 2: generation 3 becomes the oldest retained and lists
	// every date it holds, the expiry is in the log.
	for _, g := range []int64{1, 2} {
		if err := w.store.Expire(t.Context(), g); err != nil {
			t.Fatal(err)
		}
	}
	if err := history.RecordExpiry(t.Context(), w.bucket, history.Expiry{Generations: []int64{1, 2}, At: at, Reason: "beyond --retain-generations 2", WriterVersion: "test"}, 4); err != nil {
		t.Fatal(err)
	}
	log, err = history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(log.Changes); n != 3 || !log.Changes[1].Oldest || !log.Changes[2].Oldest || log.Changes[0].Oldest {
		t.Errorf("after expiry: %d changes %+v; want generation 4's mon and the oldest retained (3) with both dates", n, log.Changes)
	}
	if len(log.Expiries) != 1 || len(log.Expiries[0].Generations) != 2 || !log.Expiries[0].At.Equal(at) {
		t.Errorf("expiries %+v, want one record of generations 1 and 2", log.Expiries)
	}
	if err := w.rollback("too-old", 1, mon); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "not retained") {
		t.Errorf("rollback to an expired generation: %v, want exit 2 saying not retained", err)
	}
}

// TestRollbackChecksFiles: a file the generation names that is missing or
// has another size, a history copy changed since it was written, or a job
// id a publish attempt took, is refused before anything moves, naming it.
// TestListTellsDamage: a history file removed by hand is a gap, not a
// second oldest generation, and is reported; the whole history removed
// leaves the current generation reported missing; an expiry record whose
// gc stopped before expiring says which generations are still retained.
func TestListTellsDamage(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	w.publish("c", tue)
	w.publish("d", mon)
	if err := os.Remove(filepath.Join(w.dir, "pointer-history", "2.json")); err != nil {
		t.Fatal(err)
	}
	if err := history.RecordExpiry(t.Context(), w.bucket, history.Expiry{Generations: []int64{1}, At: at, Reason: "beyond --retain-generations 3"}, 4); err != nil {
		t.Fatal(err)
	}
	log, err := history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[int64][2]bool{}
	for _, c := range log.Changes {
		flags[c.Generation] = [2]bool{c.Oldest, c.AfterGap}
	}
	if flags[1] != [2]bool{true, false} || flags[3] != [2]bool{false, true} || flags[4] != [2]bool{false, false} {
		t.Errorf("(oldest, after gap) by generation %v, want 1 oldest, 3 after a gap, 4 neither", flags)
	}
	if !slices.Equal(log.Missing, []int64{2}) {
		t.Errorf("missing %v, want [2]", log.Missing)
	}
	if warned := strings.Join(log.Warnings(), "\n"); !strings.Contains(warned, "lacks generations 2, up to the current 4") || strings.Contains(warned, "is missing") {
		t.Errorf("warnings %q, want the gap at 2 alone", warned)
	}
	if len(log.Expiries) != 1 || !slices.Equal(log.Expiries[0].StillRetained, []int64{1}) {
		t.Errorf("expiries %+v, want generation 1 still retained", log.Expiries)
	}
	if err := os.RemoveAll(filepath.Join(w.dir, "pointer-history")); err != nil {
		t.Fatal(err)
	}
	if log, err = history.List(t.Context(), w.store, w.bucket, nil); err != nil || !slices.Equal(log.Missing, []int64{4}) {
		t.Errorf("without pointer-history/: missing %v (%v), want the current generation 4", log.Missing, err)
	}
	// The current copy missing: no generation after it lists its dates,
	// and every write refuses; the warning says both, not "after each gap".
	if warned := strings.Join(log.Warnings(), "\n"); !strings.Contains(warned, "pointer-history/4.json, the copy written with pointer.json (generation 4), is missing") ||
		!strings.Contains(warned, "publish, rollback and gc refuse") || strings.Contains(warned, "lacks generations") {
		t.Errorf("without pointer-history/: warnings %q", warned)
	}
}

// expiringStore is the warehouse's store with a gc at work: the history
// copies in expire go right after the history is listed.
type expiringStore struct {
	*objstore.Store
	w      *wh
	expire []int64
}

func (s expiringStore) Generations(ctx context.Context) ([]int64, error) {
	gens, err := s.Store.Generations(ctx)
	for _, g := range s.expire {
		if err := os.Remove(filepath.Join(s.w.dir, "pointer-history", strconv.FormatInt(g, 10)+".json")); err != nil {
			s.w.t.Fatal(err)
		}
	}
	return gens, err
}

// TestListWhileGCExpires: generations a running gc expires between the
// listing and their reads are no gap, the first one read is the oldest, and
// the running gc's record is not said to have stopped (history showed
// "after a gap" and "that gc stopped before expiring them" during a gc
// that then exited 0).
func TestListWhileGCExpires(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	w.publish("c", tue)
	w.publish("d", mon)
	if err := history.RecordExpiry(t.Context(), w.bucket, history.Expiry{Generations: []int64{1, 2}, At: at, Reason: "beyond --retain-generations 2"}, 4); err != nil {
		t.Fatal(err)
	}
	log, err := history.List(t.Context(), expiringStore{Store: w.store, w: w, expire: []int64{1, 2}}, w.bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range log.Changes {
		if c.Generation < 3 || c.AfterGap || c.Oldest != (c.Generation == 3) {
			t.Errorf("generation %d: oldest %t, after a gap %t; want 3 the oldest, no gap", c.Generation, c.Oldest, c.AfterGap)
		}
	}
	if len(log.Missing) != 0 || len(log.Expiries) != 1 || len(log.Expiries[0].StillRetained) != 0 {
		t.Errorf("missing %v, expiries %+v; want none missing, none still retained", log.Missing, log.Expiries)
	}
}

// TestListTellsHandCopiedPointer: a history copy put back over
// pointer.json by hand leaves the history past it, which the next publish
// or rollback refuses, not rolls forward; history says so, and does not
// call it an interrupted write.
func TestListTellsHandCopiedPointer(t *testing.T) {
	for _, tc := range []struct {
		name string
		back int64 // the generation copied over pointer.json
		says string
	}{
		{"one back", 2, "put back by hand"},
		{"two back", 1, "pointer-history goes up to generation 3 but pointer.json is at generation 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWH(t)
			w.publish("a", mon, tue)
			w.publish("b", mon)
			w.publish("c", tue)
			b, err := os.ReadFile(filepath.Join(w.dir, "pointer-history", fmt.Sprintf("%d.json", tc.back)))
			if err != nil {
				t.Fatal(err)
			}
			ptr := filepath.Join(w.dir, "pointer.json")
			if err := os.WriteFile(ptr, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// Written after the copies past it, as a hand's copy is.
			later := time.Now().Add(time.Minute)
			if err := os.Chtimes(ptr, later, later); err != nil {
				t.Fatal(err)
			}
			log, err := history.List(t.Context(), w.store, w.bucket, nil)
			if err != nil {
				t.Fatal(err)
			}
			if log.Pending != 0 || !strings.Contains(log.Refused, tc.says) {
				t.Errorf("pending %d, refused %q; want no pending generation and a refusal saying %q", log.Pending, log.Refused, tc.says)
			}
			warned := strings.Join(log.Warnings(), "\n")
			if !strings.Contains(warned, "the next publish or rollback will refuse to move pointer.json") || strings.Contains(warned, "is committed past pointer.json") {
				t.Errorf("warnings %q; want the refusal, not an interrupted write", warned)
			}
			// What history says is what the next publish then meets.
			c := pointertest.Commit("d", map[dates.Date]pointer.DateEntry{mon: w.entry("d", mon, 40)})
			if _, err := pointer.Publish(t.Context(), w.store, c); !errors.Is(err, pointer.ErrBrokenChain) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("publish: %v; want the refusal history named", err)
			}
		})
	}
}

// TestListTellsAlteredCopies: a history copy edited after it was written
// (a figure changed) is named, since its successor recorded another digest
// for it; so is a pointer.json edited in place. Untouched, neither is.
func TestListTellsAlteredCopies(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	w.publish("c", tue)
	log, err := history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil || len(log.Altered) != 0 || log.CurrentDiffers {
		t.Fatalf("untouched: altered %v, current differs %v (%v)", log.Altered, log.CurrentDiffers, err)
	}
	edit := func(name string) {
		p := filepath.Join(w.dir, filepath.FromSlash(name))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// One byte of a figure, the JSON still valid.
		i := bytes.Index(b, []byte(`"event_count": `))
		if i < 0 {
			t.Fatalf("%s has no event_count: %s", name, b)
		}
		i += len(`"event_count": `)
		if b[i] == '9' {
			b[i] = '8'
		} else {
			b[i]++
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("pointer-history/1.json")
	if log, err = history.List(t.Context(), w.store, w.bucket, nil); err != nil || !slices.Equal(log.Altered, []int64{1}) || log.CurrentDiffers {
		t.Errorf("generation 1 edited: altered %v, current differs %v (%v), want [1] and false", log.Altered, log.CurrentDiffers, err)
	}
	// Generation 2's parent field edited: its own link and the one above
	// break. Generation 2 is named, not 1 below it, which is as written
	// (nor 1 again for its earlier edit: 2 can no longer vouch for it).
	w.zeroParent("pointer-history/2.json")
	if log, err = history.List(t.Context(), w.store, w.bucket, nil); err != nil || !slices.Equal(log.Altered, []int64{2}) {
		t.Errorf("generation 2's parent edited: altered %v (%v), want [2]", log.Altered, err)
	}
	edit("pointer.json")
	if log, err = history.List(t.Context(), w.store, w.bucket, nil); err != nil || !log.CurrentDiffers {
		t.Errorf("pointer.json edited: current differs %v (%v), want true", log.CurrentDiffers, err)
	}
}

// TestListCurrentEditUnblamed: a figure edited in pointer.json, or in the
// copy written with it, looks the same from either side (both still name
// the copy below as their parent): history says the two differ and blames
// neither. It blamed the copy either way, while publish blamed pointer.json.
func TestListCurrentEditUnblamed(t *testing.T) {
	for _, name := range []string{"pointer.json", "pointer-history/3.json"} {
		t.Run(name, func(t *testing.T) {
			w := newWH(t)
			w.publish("a", mon, tue)
			w.publish("b", mon)
			w.publish("c", tue)
			p := filepath.Join(w.dir, filepath.FromSlash(name))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := regexp.MustCompile(`"event_count": (\d)`).ReplaceAllFunc(b, func(m []byte) []byte {
				out := slices.Clone(m)
				out[len(out)-1] = '0' + (out[len(out)-1]-'0'+1)%10
				return out
			})
			if bytes.Equal(edited, b) {
				t.Fatalf("%s has no event_count: %s", name, b)
			}
			if err := os.WriteFile(p, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			log, err := history.List(t.Context(), w.store, w.bucket, nil)
			if err != nil || len(log.Altered) != 0 || !log.CurrentDiffers {
				t.Errorf("altered %v, current differs %v (%v); want none and true", log.Altered, log.CurrentDiffers, err)
			}
		})
	}
}

// zeroParent edits the parent record of the pointer document at rel (in
// the warehouse) to name a digest no copy has.
func (w *wh) zeroParent(rel string) {
	w.t.Helper()
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		w.t.Fatal(err)
	}
	var doc struct {
		Parent struct{ SHA256 string } `json:"parent"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Parent.SHA256 == "" {
		w.t.Fatalf("%s parent: %v", rel, err)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(doc.Parent.SHA256), []byte(strings.Repeat("0", 64)), 1), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// TestListBlamesTheNewestCopy: the newest history copy's own parent field
// edited breaks its link to the copy below, and pointer.json, written with
// it, still names that copy as its parent: the newest copy is the one
// changed. history blamed the intact copy below, and restoring it as told
// changed nothing.
func TestListBlamesTheNewestCopy(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	w.publish("c", tue)
	w.zeroParent("pointer-history/3.json")
	log, err := history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil || !slices.Equal(log.Altered, []int64{3}) || !log.CurrentDiffers {
		t.Fatalf("altered %v, current differs %v (%v); want [3] and true", log.Altered, log.CurrentDiffers, err)
	}
	if warned := strings.Join(log.Warnings(), "\n"); strings.Contains(warned, "pointer-history/2.json") || !strings.Contains(warned, "pointer-history/3.json was changed after it was written (pointer.json records its parent as written") {
		t.Errorf("warnings:\n%s", warned)
	}
	// And the writers' refusal tells to restore the copy from pointer.json:
	// it told to copy the edited copy over pointer.json, publishing it.
	cur, _, err := w.store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := pointer.OwnCopy(t.Context(), w.store, cur, nil); err == nil || !strings.Contains(err.Error(), "copy it over pointer-history/3.json") || strings.Contains(err.Error(), "back over pointer.json") {
		t.Errorf("OwnCopy: %v; want the history copy named as edited, restored from pointer.json", err)
	}
}

// TestListBlamesAnEditedPointer: pointer.json's own parent record edited,
// while the copy written with it still names the copy below: history
// names pointer.json as the edited one, as publish does (it said only
// that one of them was edited; review CM), and blames no copy.
func TestListBlamesAnEditedPointer(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	w.publish("c", tue)
	w.zeroParent("pointer.json")
	log, err := history.List(t.Context(), w.store, w.bucket, nil)
	if err != nil || len(log.Altered) != 0 || !log.CurrentDiffers {
		t.Fatalf("altered %v, current differs %v (%v); want none and true", log.Altered, log.CurrentDiffers, err)
	}
	if warned := strings.Join(log.Warnings(), "\n"); !strings.Contains(warned, "pointer.json was edited in place (its parent record no longer names generation 2 as written, while the copy's agrees)") {
		t.Errorf("warnings:\n%s", warned)
	}
}

// TestRecordExpiryMerges: a gc run again after one that stopped part way
// names its record as the first did; the record is merged into, so the
// first run's generations and job ids stay recorded (and those ids taken).
func TestRecordExpiryMerges(t *testing.T) {
	w := newWH(t)
	first := history.Expiry{Generations: []int64{1, 2, 3, 4}, JobIDs: []string{"j1", "j2", "j3", "j4"}, At: at, Reason: "beyond --retain-generations 1"}
	// j3 rolled back: it wrote generation 3 and left a record, both gone.
	again := history.Expiry{Generations: []int64{3, 4}, JobIDs: []string{"j3", "j4"}, RecordJobIDs: []string{"rej", "j3"}, At: at.Add(time.Hour), Reason: "beyond --retain-generations 1"}
	for _, e := range []history.Expiry{first, again} {
		if err := history.RecordExpiry(t.Context(), w.bucket, e, 5); err != nil {
			t.Fatal(err)
		}
	}
	exps, err := history.Expiries(t.Context(), w.bucket)
	if err != nil {
		t.Fatal(err)
	}
	if len(exps) != 1 || !slices.Equal(exps[0].Generations, first.Generations) || !slices.Equal(exps[0].JobIDs, first.JobIDs) || !slices.Equal(exps[0].RecordJobIDs, []string{"j3", "rej"}) {
		t.Fatalf("records %+v, want one holding generations 1-4, jobs j1-j4 and the record of rej", exps)
	}
	// A record that lost what it names (valid JSON all the same) is damaged,
	// not a record of nothing: its ids would be free again.
	w.write("pointer-expiry/9.json", "{}")
	if _, err := history.Expiries(t.Context(), w.bucket); err == nil || !strings.Contains(err.Error(), "names no generation and no record") {
		t.Errorf("an expiry record of {}: %v, want it refused as damaged", err)
	}
	if err := os.Remove(filepath.Join(w.dir, "pointer-expiry", "9.json")); err != nil {
		t.Fatal(err)
	}
	// A rollback's id stays exit 4 once its generation and record are gone,
	// as while they were retained (it was exit 2).
	for id, code := range map[string]int{"j1": exitcode.AlreadyPublished, "j3": exitcode.AlreadyPublished, "rej": exitcode.Usage, "fresh": exitcode.OK} {
		if got := exitcode.Code(history.CheckRecords(t.Context(), w.bucket, id)); got != code {
			t.Errorf("job id %s: exit %d, want %d", id, got, code)
		}
	}
}

// TestRecordExpiryConcurrent: gc runs at once (cron overlapping on an S3
// warehouse, which has no lock) merging into one record each keep their
// job ids: an unconditional read-merge-write lost one run's, and those
// ids, their last trace deleted, published again. A run that expired no
// generation records an empty list, never null.
func TestRecordExpiryConcurrent(t *testing.T) {
	for name, newBucket := range map[string]func(t *testing.T) storage.Bucket{
		"local": func(t *testing.T) storage.Bucket { return local.New(t.TempDir(), local.Options{}) },
		"s3":    func(t *testing.T) storage.Bucket { return s3test.Bucket(t) },
	} {
		t.Run(name, func(t *testing.T) {
			b := newBucket(t)
			const runs = 6
			var want []string
			errs := make(chan error, runs)
			start := make(chan struct{})
			for i := range runs {
				id := fmt.Sprintf("crashed-%d", i)
				want = append(want, id)
				go func() {
					<-start
					errs <- history.RecordExpiry(t.Context(), b, history.Expiry{RecordJobIDs: []string{id}, At: at, Reason: "idle"}, 7)
				}()
			}
			close(start)
			for range runs {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			data, _, err := b.Get(t.Context(), "pointer-expiry/7.json")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(`"generations": []`)) {
				t.Errorf("record %s: want \"generations\": [] for a run that expired none", data)
			}
			exps, err := history.Expiries(t.Context(), b)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			if len(exps) != 1 || !slices.Equal(exps[0].RecordJobIDs, want) {
				t.Fatalf("records %+v, want one listing %v", exps, want)
			}
		})
	}
}

func TestRollbackChecksFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		break_  func(w *wh)
		mention string
	}{
		{"Missing", func(w *wh) {
			os.Remove(filepath.Join(w.dir, "staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"))
		}, "part-00000.parquet: missing"},
		{"SizeDiffers", func(w *wh) {
			w.write("staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", "short")
		}, "5 bytes, generation 1 recorded 26"},
		// Its size kept, another row count in its footer: readers would
		// see other rows than generation 1 published.
		{"RowsDiffer", func(w *wh) {
			w.write("staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", string(pointertest.ParquetLike(11, 7)))
		}, "holds 7 rows, generation 1 recorded 1"},
		{"FooterDamaged", func(w *wh) {
			data := pointertest.ParquetLike(11, 1)
			copy(data[len(data)-8:], []byte{0xff, 0xff, 0, 0})
			w.write("staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", string(data))
		}, "no Parquet footer to read (not a readable Parquet footer: footer length 65535"},
		{"GateReportMissing", func(w *wh) { os.Remove(filepath.Join(w.dir, "staging/job_id=a/_gate.json")) }, "_gate.json: missing"},
		// The history copy edited after generation 2 was written on it
		// (a figure changed; the same holds for a file path): its digest
		// no longer is the parent generation 2 recorded.
		{"HistoryEdited", func(w *wh) {
			p := filepath.Join(w.dir, "pointer-history/1.json")
			b, err := os.ReadFile(p)
			if err != nil {
				w.t.Fatal(err)
			}
			edited := strings.Replace(string(b), `"event_count": 11`, `"event_count": 1`, 1)
			if edited == string(b) {
				w.t.Fatalf("no event_count 11 in %s", b)
			}
			w.write("pointer-history/1.json", edited)
		}, "pointer-history/1.json is not the generation 2 was written on"},
		// A job id a publish attempt took, in flight or rejected.
		{"JobIDHasStaging", func(w *wh) { w.write("staging/job_id=back/_attempt.json", "{}") }, "job id back was taken by a publish attempt"},
		{"JobIDRejected", func(w *wh) { w.write("rejections/job_id=back.json", "{}") }, "job id back was taken by a rejected publish attempt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWH(t)
			w.publish("a", mon)
			w.publish("b", mon)
			tc.break_(w)
			before := w.pointerBytes()
			err := w.rollback("back", 1, mon)
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want exit 2 mentioning %q", err, tc.mention)
			}
			if string(w.pointerBytes()) != string(before) {
				t.Errorf("a refused rollback moved the pointer")
			}
			// Refused after its record was written (the file checks): the
			// error says the id is spent, which the rerun then finds.
			if recorded := w.exists("rollbacks/job_id=back.json"); recorded != strings.Contains(err.Error(), "job id back is now taken by its record") {
				t.Errorf("record written: %v; error %v: want it to say the id is taken exactly when it is", recorded, err)
			} else if recorded {
				if err := w.rollback("back", 1, mon); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "taken by a rollback") {
					t.Errorf("the same job id again: %v, want exit 2, taken by a rollback", err)
				}
			}
		})
	}
}

// TestRollbackChecksTheWholeChain: a rollback to generation 1 checks every
// link from the current generation down, not only 2's record of 1. A copy
// edited together with its successor's parent field passed a check of one
// link and was published (an edited figure, exit 0); an edited parent
// field blamed the intact copy below it. Each is refused, naming the file
// that was changed.
func TestRollbackChecksTheWholeChain(t *testing.T) {
	edit := func(w *wh, name, from, to string) string {
		p := filepath.Join(w.dir, "pointer-history", name)
		b, err := os.ReadFile(p)
		if err != nil {
			w.t.Fatal(err)
		}
		edited := strings.Replace(string(b), from, to, 1)
		if edited == string(b) {
			w.t.Fatalf("no %q in %s", from, name)
		}
		w.write("pointer-history/"+name, edited)
		return edited
	}
	digest := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	parentOf := func(w *wh, name string) string {
		b, err := os.ReadFile(filepath.Join(w.dir, "pointer-history", name))
		if err != nil {
			w.t.Fatal(err)
		}
		var p struct {
			Parent struct{ SHA256 string } `json:"parent"`
		}
		if err := json.Unmarshal(b, &p); err != nil || p.Parent.SHA256 == "" {
			w.t.Fatalf("%s: parent %+v, %v", name, p, err)
		}
		return p.Parent.SHA256
	}
	for _, tc := range []struct {
		name    string
		break_  func(w *wh)
		mention string
	}{
		{"CopyAndSuccessorEdited", func(w *wh) {
			edited := edit(w, "1.json", `"event_count": 11`, `"event_count": 1100`)
			edit(w, "2.json", parentOf(w, "2.json"), digest(edited))
		}, "pointer-history/2.json is not the generation 3 was written on"},
		{"ParentFieldEdited", func(w *wh) {
			edit(w, "2.json", parentOf(w, "2.json"), strings.Repeat("0", 64))
		}, "pointer-history/2.json is not the generation 3 was written on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWH(t)
			w.publish("a", mon)
			w.publish("b", mon)
			w.publish("c", mon)
			tc.break_(w)
			before := w.pointerBytes()
			err := w.rollback("back", 1, mon)
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want exit 2 mentioning %q", err, tc.mention)
			}
			if strings.Contains(err.Error(), "pointer-history/1.json") {
				t.Errorf("error %v blames pointer-history/1.json", err)
			}
			if string(w.pointerBytes()) != string(before) {
				t.Errorf("a refused rollback moved the pointer")
			}
		})
	}
}

// racer is a store whose first Swap lets another operation land first, the
// way a concurrent process would between this one's read and its write.
type racer struct {
	*objstore.Store
	first atomic.Bool
	other func()
}

func (r *racer) Swap(ctx context.Context, v pointer.Version, next pointer.Pointer) error {
	if !r.first.Swap(true) {
		r.other()
	}
	return r.Store.Swap(ctx, v, next)
}

// diesAfterTheCommit runs write as if its process died between the history
// copy (the commit) and the pointer.json replace, as a kill there would.
func diesAfterTheCommit(write func()) {
	remove := failpoint.SetHook(failpoint.MidPointer, func() { panic("killed") })
	defer remove()
	defer func() { _ = recover() }()
	write()
}

// TestRollbackRacesGC: on S3 no lock keeps gc out, and a gc that read no
// record of the rollback yet deleted the target's files between the
// rollback's check and its swap: the pointer named deleted files, both
// exit 0. The rollback now looks again once it landed, and says so.
func TestRollbackRacesGC(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon)
	w.publish("b", mon)
	gone := "staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"
	r := &racer{Store: w.store, other: func() { os.Remove(filepath.Join(w.dir, gone)) }}
	_, err := history.Rollback{Bucket: w.bucket, Store: r, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at, WriterVersion: "t"}.Run(t.Context())
	if err == nil || exitcode.Code(err) != exitcode.Error || !strings.Contains(err.Error(), "landed as generation 3") || !strings.Contains(err.Error(), gone+": missing") {
		t.Fatalf("error %v (exit %d), want exit 1 saying it landed and naming the missing file", err, exitcode.Code(err))
	}
}

// TestRollbackRacesPublish: a rollback and a publish of the same date,
// either landing first: exactly one wins, the other gets ErrRaced and
// writes nothing.
func TestRollbackRacesPublish(t *testing.T) {
	t.Run("PublishFirst", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon)
		w.publish("b", mon)
		r := &racer{Store: w.store, other: func() { w.publish("c", mon) }}
		_, err := history.Rollback{Bucket: w.bucket, Store: r, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at, WriterVersion: "t"}.Run(t.Context())
		if !errors.Is(err, pointer.ErrRaced) || exitcode.Code(err) != exitcode.Raced || !strings.Contains(err.Error(), "date 2026-03-02 changed") {
			t.Fatalf("rollback raced by a publish: %v, want ErrRaced naming the date", err)
		}
		cur, _, _ := w.store.Load(t.Context())
		if cur.Generation != 3 || cur.Dates[mon].JobID != "c" {
			t.Errorf("pointer at generation %d naming %s, want 3 naming the publish c", cur.Generation, cur.Dates[mon].JobID)
		}
	})
	t.Run("RollbackFirst", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon, tue)
		w.publish("b", mon)
		base, _, _ := w.store.Load(t.Context())
		r := &racer{Store: w.store, other: func() {
			if err := w.rollback("back", 1, mon); err != nil {
				t.Error(err)
			}
		}}
		c := pointertest.Commit("c", map[dates.Date]pointer.DateEntry{mon: w.entry("c", mon, 30), tue: w.entry("c", tue, 31)})
		c.Check = pointer.NoRollbackSince(t.Context(), r, base.Generation, []dates.Date{mon, tue})
		_, err := pointer.Publish(t.Context(), r, c)
		if !errors.Is(err, pointer.ErrRaced) || exitcode.Code(err) != exitcode.Raced || !strings.Contains(err.Error(), "rolled 2026-03-02 back to generation 1") {
			t.Fatalf("publish raced by a rollback: %v, want ErrRaced naming the rollback", err)
		}
		cur, _, _ := w.store.Load(t.Context())
		if cur.Generation != 3 || cur.UpdatedByJobID != "back" || cur.Dates[mon].JobID != "a" {
			t.Errorf("pointer at generation %d by %s naming %s for mon, want the rollback (3, back, a)", cur.Generation, cur.UpdatedByJobID, cur.Dates[mon].JobID)
		}
	})
	// A rollback that died after its history copy (the commit) and before
	// pointer.json had landed before the publish read the pointer: the
	// publish goes on top of it (rolling it forward), not refused as raced.
	t.Run("RollbackCommittedBeforeTheRead", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon, tue)
		w.publish("b", mon)
		diesAfterTheCommit(func() { _ = w.rollback("back", 1, mon) })
		if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 2 {
			t.Fatalf("pointer.json at generation %d, want 2 (the rollback's copy 3 not rolled forward yet)", cur.Generation)
		}
		// history names the committed copy readers do not see yet.
		if log, err := history.List(t.Context(), w.store, w.bucket, nil); err != nil || log.Current != 2 || log.Pending != 3 || log.PendingJobID != "back" {
			t.Errorf("history: current %d, pending %d by %q (%v); want 2, and 3 by back", log.Current, log.Pending, log.PendingJobID, err)
		}
		// A rollback to the committed generation is refused as current,
		// saying readers see generation 2 (status says 2).
		if err := w.rollback("again", 3, mon); exitcode.Code(err) != exitcode.Usage ||
			!strings.Contains(err.Error(), "is the current generation (committed by an interrupted write; readers see generation 2") {
			t.Errorf("rollback to the committed generation: %v, want exit 2 saying readers see generation 2", err)
		}
		base, _, _ := w.store.Load(t.Context())
		c := pointertest.Commit("c", map[dates.Date]pointer.DateEntry{mon: w.entry("c", mon, 30)})
		c.Check = pointer.NoRollbackSince(t.Context(), w.store, pointer.Committed(t.Context(), w.store, base), []dates.Date{mon})
		if _, err := pointer.Publish(t.Context(), w.store, c); err != nil {
			t.Fatalf("a publish begun after the rollback committed: %v", err)
		}
		cur, _, _ := w.store.Load(t.Context())
		if cur.Generation != 4 || cur.Dates[mon].JobID != "c" || cur.Dates[tue].JobID != "a" {
			t.Errorf("generation %d: mon %s, tue %s; want 4: c, a", cur.Generation, cur.Dates[mon].JobID, cur.Dates[tue].JobID)
		}
		if log, _ := history.List(t.Context(), w.store, w.bucket, nil); log.Pending != 0 {
			t.Errorf("history after the roll-forward: pending %d, want none", log.Pending)
		}
	})
	// A publish given the rollback's job id lands between the rollback's
	// checks and its swap: one id, one operation; the rollback is refused
	// as a job id already published and writes nothing.
	t.Run("PublishTookTheJobID", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon, tue)
		w.publish("b", mon)
		r := &racer{Store: w.store, other: func() { w.publish("back", tue) }}
		_, err := history.Rollback{Bucket: w.bucket, Store: r, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at, WriterVersion: "t"}.Run(t.Context())
		if exitcode.Code(err) != exitcode.AlreadyPublished || !strings.Contains(err.Error(), "job id back was taken by generation 3 (a publish)") {
			t.Fatalf("rollback whose job id a publish took: %v, want exit 4 naming generation 3", err)
		}
		if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 3 || cur.Dates[mon].JobID != "b" {
			t.Errorf("pointer at generation %d naming %s for mon, want 3 naming b", cur.Generation, cur.Dates[mon].JobID)
		}
	})
	// The other way round: a publish died after its history copy; a
	// rollback begun then starts from that committed generation, not from
	// pointer.json's, and is not refused as raced by it.
	t.Run("PublishCommittedBeforeTheRollback", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon, tue)
		w.publish("b", mon)
		diesAfterTheCommit(func() { w.publish("c", mon) })
		if err := w.rollback("back", 2, mon); err != nil {
			t.Fatalf("a rollback begun after a publish committed: %v", err)
		}
		cur, _, _ := w.store.Load(t.Context())
		if cur.Generation != 4 || cur.Dates[mon].JobID != "b" || cur.Operation != pointer.OpRollback {
			t.Errorf("generation %d (%s): mon %s; want 4, a rollback to b", cur.Generation, cur.Operation, cur.Dates[mon].JobID)
		}
	})
	t.Run("OtherDateBothLand", func(t *testing.T) {
		w := newWH(t)
		w.publish("a", mon, tue)
		w.publish("b", mon)
		base, _, _ := w.store.Load(t.Context())
		r := &racer{Store: w.store, other: func() {
			if err := w.rollback("back", 1, mon); err != nil {
				t.Error(err)
			}
		}}
		c := pointertest.Commit("c", map[dates.Date]pointer.DateEntry{tue: w.entry("c", tue, 31)})
		c.Check = pointer.NoRollbackSince(t.Context(), r, base.Generation, []dates.Date{tue})
		if _, err := pointer.Publish(t.Context(), r, c); err != nil {
			t.Fatalf("a publish of another date than the rollback's: %v", err)
		}
		cur, _, _ := w.store.Load(t.Context())
		if cur.Generation != 4 || cur.Dates[mon].JobID != "a" || cur.Dates[tue].JobID != "c" {
			t.Errorf("generation %d: mon %s, tue %s; want 4: a, c", cur.Generation, cur.Dates[mon].JobID, cur.Dates[tue].JobID)
		}
	})
}

// TestRollbackWrittenAt: a rollback's generation is dated when it is built,
// after the file checks (Clock), not when the command started (Now), which
// its record keeps as started_at.
func TestRollbackWrittenAt(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	later := at.Add(5 * time.Minute)
	if _, err := (history.Rollback{Bucket: w.bucket, Store: w.store, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at,
		Clock: func() time.Time { return later }, WriterVersion: "test"}).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	cur, _, err := w.store.Load(t.Context())
	if err != nil || !cur.WrittenAt.Equal(later) {
		t.Errorf("written_at %s (%v), want the clock's %s", cur.WrittenAt, err, later)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "rollbacks", "job_id=back.json"))
	if err != nil || !bytes.Contains(b, []byte(`"started_at": "`+at.UTC().Format(time.RFC3339Nano))) {
		t.Errorf("rollback record %s (%v), want started_at %s", b, err, at.UTC().Format(time.RFC3339Nano))
	}
}

// TestRollbackAgainAfterItsCommit: a rollback killed after its history
// copy and before pointer.json, run again with a new job id as the
// runbook says, makes the rolled-back entries visible (rolling the
// interrupted write forward): it was refused as "nothing to roll back"
// while readers still saw the data being rolled back.
func TestRollbackAgainAfterItsCommit(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon)
	diesAfterTheCommit(func() { _ = w.rollback("back", 1, mon) })
	if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 2 || cur.Dates[mon].JobID != "b" {
		t.Fatalf("pointer.json at generation %d naming %s, want 2 naming b (the rollback not visible yet)", cur.Generation, cur.Dates[mon].JobID)
	}
	// Again with its own job id: exit 4, saying its write stopped after
	// the commit (it was only "already named", while readers saw b).
	if err := w.rollback("back", 1, mon); exitcode.Code(err) != exitcode.AlreadyPublished || !strings.Contains(fmt.Sprint(err), "already written as generation 3 (pointer-history/3.json), which pointer.json does not show yet") {
		t.Errorf("the rollback run again with its job id: %v, want exit 4 saying generation 3 is not shown yet", err)
	}
	if err := w.rollback("back-2", 1, mon); err != nil {
		t.Fatalf("the rollback run again: %v", err)
	}
	cur, _, _ := w.store.Load(t.Context())
	if cur.Dates[mon].JobID != "a" || cur.Dates[tue].JobID != "a" || cur.Generation != 4 {
		t.Errorf("generation %d: mon %s, tue %s; want 4 (3 rolled forward, then the rerun): a, a", cur.Generation, cur.Dates[mon].JobID, cur.Dates[tue].JobID)
	}
	// Visible and the same already: nothing to do, as before.
	if err := w.rollback("back-3", 1, mon); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "nothing to roll back") {
		t.Errorf("a third rollback to the visible entries: %v, want exit 2, nothing to roll back", err)
	}

	// Readers see the entries already, and the interrupted write (another
	// date's publish) keeps them: still nothing to roll back, and no
	// generation written.
	w = newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", tue)
	diesAfterTheCommit(func() { w.publish("c", tue) })
	if err := w.rollback("r", 1, mon); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "nothing to roll back") {
		t.Errorf("rollback of a date readers see at the target already: %v, want exit 2, nothing to roll back", err)
	}
	if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 2 {
		t.Errorf("pointer.json at generation %d, want 2 (nothing written)", cur.Generation)
	}
}

// TestRollbackSuccessorGone: a history copy moved out (a damaged one, as
// the runbook says) takes the generation before it with it as a rollback
// target, since only it recorded that one's digest: refused (exit 2),
// saying what to restore, nothing changed.
func TestRollbackSuccessorGone(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon)
	w.publish("b", mon)
	w.publish("c", mon)
	if err := os.Remove(filepath.Join(w.dir, "pointer-history", "2.json")); err != nil {
		t.Fatal(err)
	}
	err := w.rollback("back", 1, mon)
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "restore it from a backup to roll back to 1") {
		t.Fatalf("rollback to 1 with 2 gone: exit %d (%v), want 2 saying to restore pointer-history/2.json", exitcode.Code(err), err)
	}
	if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 3 {
		t.Errorf("pointer at generation %d, want 3", cur.Generation)
	}
}

// TestRollbackFailedSaysItsIDIsTaken: a rollback that fails after its
// record was written (here on a committed generation pointer.json cannot
// be replaced with) says its job id is spent, so the operator's rerun
// takes a new one instead of meeting a refusal for the id.
func TestRollbackFailedSaysItsIDIsTaken(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon)
	w.publish("b", mon)
	stuck := objstore.New(storagetest.RefusePut{Bucket: w.bucket, Key: "pointer.json"})
	// Generation 3 committed, not shown: every later write meets it.
	if _, err := pointer.Publish(t.Context(), stuck, pointertest.Commit("c", map[dates.Date]pointer.DateEntry{mon: w.entry("c", mon, 30)})); err == nil {
		t.Fatal("a publish whose pointer.json replace was refused reported success")
	}
	_, err := history.Rollback{Bucket: w.bucket, Store: stuck, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at, WriterVersion: "t"}.Run(t.Context())
	if !errors.Is(err, pointer.ErrStuck) {
		t.Errorf("rollback: %v, want ErrStuck", err)
	}
	if err == nil || !strings.Contains(err.Error(), "job id back stays taken by its record") {
		t.Fatalf("rollback with pointer.json not replaceable: %v, want it to say its job id stays taken", err)
	}
	if !w.exists("rollbacks/job_id=back.json") {
		t.Error("no rollback record: the message would be false")
	}
}

// TestRollbackRefusedAtThePointer: the store refuses the pointer write's
// credentials (rotated since the rollback's record): exit 1, not the
// refusal's usage code 2, "fix the command; nothing was published", with
// the generation maybe committed (review CM).
func TestRollbackRefusedAtThePointer(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon)
	w.publish("b", mon)
	refused := exitcode.UsageError(storage.Refused(errors.New("put pointer.json: access denied (SignatureDoesNotMatch): refused by the store")))
	_, err := history.Rollback{Bucket: w.bucket, Store: pointertest.FailingSwap{Store: w.store, Err: refused}, Dates: []dates.Date{mon}, To: 1, JobID: "back", Now: at, WriterVersion: "t"}.Run(t.Context())
	if code := exitcode.Code(err); code != exitcode.Error || !errors.Is(err, storage.ErrRefused) {
		t.Errorf("rollback: exit %d (%v), want 1 wrapping the refusal", code, err)
	}
}

// unreadableGen fails every read of one history generation, as a server's
// 500s would.
type unreadableGen struct {
	*objstore.Store
	gen int64
}

func (u unreadableGen) LoadGeneration(ctx context.Context, g int64) (pointer.Pointer, error) {
	if g == u.gen {
		return pointer.Pointer{}, fmt.Errorf("get pointer-history/%d.json: StatusCode: 500, InternalError", g)
	}
	return u.Store.LoadGeneration(ctx, g)
}

// TestRollbackOfAnotherDateAndAReadError: a publish of Tuesday meets a
// rollback of Monday alone, and the rollback's parent cannot be read: a
// failure to retry (exit 1), not a race lost to a rollback of Tuesday
// (exit 6, which the DAG does not retry and which would name Tuesday).
func TestRollbackOfAnotherDateAndAReadError(t *testing.T) {
	w := newWH(t)
	w.publish("a", mon, tue)
	w.publish("b", mon, tue)
	if err := w.rollback("rb-mon", 1, mon); err != nil {
		t.Fatal(err)
	}
	s := unreadableGen{w.store, 2}
	c := pointertest.Commit("c", map[dates.Date]pointer.DateEntry{tue: w.entry("c", tue, 31)})
	c.Check = pointer.NoRollbackSince(t.Context(), s, 2, []dates.Date{tue})
	_, err := pointer.Publish(t.Context(), s, c)
	if err == nil || exitcode.Code(err) != exitcode.Error || errors.Is(err, pointer.ErrRaced) {
		t.Fatalf("publish: exit %d (%v), want 1, not a race", exitcode.Code(err), err)
	}
	if cur, _, _ := w.store.Load(t.Context()); cur.Generation != 3 {
		t.Errorf("pointer at generation %d, want the rollback's 3", cur.Generation)
	}
}

// TestExpirySummary: an expiry record of a gc older than the job ids in
// them (review CS) says those ids are free again, where this build's
// records keep them taken.
func TestExpirySummary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		e      history.Expiry
		want   string
		unsaid string
	}{
		{"ThisBuild", history.Expiry{Generations: []int64{1, 2}, JobIDs: []string{"a", "b"}, At: at, Reason: "retain-generations 3"},
			"generations 1-2 expired at 2026-03-05T06:00:00Z by gc (retain-generations 3)", "not recorded"},
		{"OlderBuild", history.Expiry{Generations: []int64{1, 2}, At: at, Reason: "retain-generations 3"},
			"generations 1-2 expired at 2026-03-05T06:00:00Z by gc (retain-generations 3); the job ids that wrote them are not recorded (a gc of an older build), so a publish or rollback may take one again", ""},
		{"RecordsOnly", history.Expiry{RecordJobIDs: []string{"x"}, At: at, Reason: "idle"},
			"the records or staging of jobs x deleted at 2026-03-05T06:00:00Z by gc (idle)", "not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.Summary()
			if !strings.Contains(got, tc.want) || (tc.unsaid != "" && strings.Contains(got, tc.unsaid)) {
				t.Errorf("summary %q, want %q without %q", got, tc.want, tc.unsaid)
			}
		})
	}
}
