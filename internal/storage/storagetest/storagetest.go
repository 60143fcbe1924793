// Package storagetest is the suite every storage.Bucket must pass: what
// the pointer store, the job, gc and the inputs rely on of a backend,
// above all that a conditional Put is atomic and a failed one writes
// nothing.
package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Run runs the suite; newBucket returns a new, empty bucket for every call.
func Run(t *testing.T, newBucket func(t *testing.T) storage.Bucket) {
	t.Run("MissingObject", func(t *testing.T) { testMissing(t, newBucket(t)) })
	t.Run("PutGetStat", func(t *testing.T) { testPutGet(t, newBucket(t)) })
	t.Run("IfAbsent", func(t *testing.T) { testIfAbsent(t, newBucket(t)) })
	t.Run("IfAbsentOverADirectory", func(t *testing.T) { testIfAbsentOverDir(t, newBucket(t)) })
	t.Run("PutUnderAnObject", func(t *testing.T) { testPutUnderObject(t, newBucket(t)) })
	t.Run("IfMatch", func(t *testing.T) { testIfMatch(t, newBucket(t)) })
	t.Run("ConcurrentIfAbsentOneWins", func(t *testing.T) { testConcurrentCond(t, newBucket(t), false) })
	t.Run("ConcurrentIfMatchOneWins", func(t *testing.T) { testConcurrentCond(t, newBucket(t), true) })
	t.Run("ListAndListDir", func(t *testing.T) { testList(t, newBucket(t)) })
	t.Run("ReadRange", func(t *testing.T) { testReadRange(t, newBucket(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newBucket(t)) })
	t.Run("WriteURIAndSeal", func(t *testing.T) { testSeal(t, newBucket(t)) })
	t.Run("KeysWithOddCharacters", func(t *testing.T) { testOddKeys(t, newBucket(t)) })
}

func put(t *testing.T, b storage.Bucket, key, data string) storage.Attrs {
	t.Helper()
	a, err := b.Put(t.Context(), key, []byte(data), storage.Cond{})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return a
}

func get(t *testing.T, b storage.Bucket, key string) (string, storage.Attrs) {
	t.Helper()
	data, a, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return string(data), a
}

func testMissing(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	// A key under an object is missing too, as on S3, where keys are
	// names and not paths: on disk the open meets a file where a directory
	// would be (ENOTDIR), which once refused a publish up front on disk
	// (exit 1) that S3 let through.
	put(t, b, "stray", "x")
	for _, key := range []string{"no/such.json", "stray/under.json"} {
		if _, _, err := b.Get(ctx, key); !storage.IsNotExist(err) {
			t.Errorf("Get of %s: %v, want fs.ErrNotExist", key, err)
		}
		if _, err := b.Stat(ctx, key); !storage.IsNotExist(err) {
			t.Errorf("Stat of %s: %v, want fs.ErrNotExist", key, err)
		}
		if _, err := b.ReadRange(ctx, key, 0, 4); !storage.IsNotExist(err) {
			t.Errorf("ReadRange of %s: %v, want fs.ErrNotExist", key, err)
		}
		if err := b.Delete(ctx, key); err != nil {
			t.Errorf("Delete of %s: %v", key, err)
		}
	}
	for _, prefix := range []string{"no/", "stray/", "stray/under/"} {
		if objs, err := b.List(ctx, prefix); err != nil || len(objs) != 0 {
			t.Errorf("List of %s, an empty prefix: %v, %v", prefix, objs, err)
		}
	}
}

func testPutGet(t *testing.T, b storage.Bucket) {
	a := put(t, b, "dir/a.json", `{"a":1}`)
	if a.Size != 7 || a.Version == "" {
		t.Errorf("Put attrs %+v, want size 7 and a version", a)
	}
	data, got := get(t, b, "dir/a.json")
	if data != `{"a":1}` || got.Version != a.Version || got.Size != 7 {
		t.Errorf("Get = %q %+v, want the bytes and the Put's version", data, got)
	}
	st, err := b.Stat(t.Context(), "dir/a.json")
	if err != nil || st.Version != a.Version || st.Size != 7 {
		t.Errorf("Stat = %+v, %v", st, err)
	}
	b2 := put(t, b, "dir/a.json", `{"a":22}`)
	if b2.Version == a.Version {
		t.Errorf("an overwrite kept the version %s", a.Version)
	}
	if data, _ := get(t, b, "dir/a.json"); data != `{"a":22}` {
		t.Errorf("after overwrite: %q", data)
	}
}

func testIfAbsent(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	if _, err := b.Put(ctx, "h/1.json", []byte("first"), storage.Cond{IfAbsent: true}); err != nil {
		t.Fatalf("IfAbsent on a new key: %v", err)
	}
	_, err := b.Put(ctx, "h/1.json", []byte("second"), storage.Cond{IfAbsent: true})
	if !errors.Is(err, storage.ErrPrecondition) {
		t.Fatalf("IfAbsent on an existing key: %v, want ErrPrecondition", err)
	}
	if data, _ := get(t, b, "h/1.json"); data != "first" {
		t.Errorf("a refused IfAbsent wrote %q", data)
	}
}

// testPutUnderObject: a Put of a key under an object (a file, on a file
// system or a file-backed server) either succeeds (an object store keeps
// both) or is refused for good, a usage error naming the stray object:
// never a precondition failure, which a writer would blame on another
// attempt, and the same exit code on every backend.
func testPutUnderObject(t *testing.T, b storage.Bucket) {
	put(t, b, "stray", "x")
	for _, c := range []storage.Cond{{}, {IfAbsent: true}} {
		_, err := b.Put(t.Context(), "stray/under.json", []byte("{}"), c)
		switch {
		case err == nil:
			if data, _ := get(t, b, "stray/under.json"); data != "{}" {
				t.Errorf("put under an object (%+v): written, but reads %q", c, data)
			}
		case errors.Is(err, storage.ErrPrecondition):
			t.Errorf("put under an object (%+v): %v, a precondition failure", c, err)
		case !errors.Is(err, storage.ErrRefused) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "stray"):
			t.Errorf("put under an object (%+v): %v, want a refusal naming it, exit %d", c, err, exitcode.Usage)
		}
	}
}

// testIfAbsentOverDir: a create (storage.Create) where keys under key/ exist (a directory
// on a file system, where a server like versitygw keeps its objects)
// either succeeds (an object store keeps both) or is refused at once as
// a directory in the object's place; it is never a precondition failure,
// which a writer would take for another writer's object and retry.
func testIfAbsentOverDir(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	put(t, b, "d/pointer.json/x", "under")
	err := storage.Create(ctx, b, "d/pointer.json", []byte("p"))
	t.Logf("create over a directory: %v", err)
	switch {
	case err == nil:
		if data, _ := get(t, b, "d/pointer.json"); data != "p" {
			t.Errorf("created, but reads %q", data)
		}
	case errors.Is(err, storage.ErrPrecondition):
		t.Errorf("create over a directory: %v, a precondition failure", err)
	case !errors.Is(err, storage.ErrRefused) || !errors.Is(err, storage.ErrNotObject):
		t.Errorf("create over a directory: %v, want refused as ErrNotObject", err)
	}
}

func testIfMatch(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	v1 := put(t, b, "p.json", "one")
	v2, err := b.Put(ctx, "p.json", []byte("two"), storage.Cond{IfMatch: v1.Version})
	if err != nil {
		t.Fatalf("IfMatch with the current version: %v", err)
	}
	if _, err := b.Put(ctx, "p.json", []byte("stale"), storage.Cond{IfMatch: v1.Version}); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("IfMatch with a stale version: %v, want ErrPrecondition", err)
	}
	if data, a := get(t, b, "p.json"); data != "two" || a.Version != v2.Version {
		t.Errorf("after a refused IfMatch: %q %s, want two %s", data, a.Version, v2.Version)
	}
	if _, err := b.Put(ctx, "missing.json", []byte("x"), storage.Cond{IfMatch: v1.Version}); !errors.Is(err, storage.ErrPrecondition) {
		t.Errorf("IfMatch on a missing object: %v, want ErrPrecondition", err)
	}
	if _, _, err := b.Get(ctx, "missing.json"); !storage.IsNotExist(err) {
		t.Errorf("a refused IfMatch created the object: %v", err)
	}
}

// race runs n writers at once and returns which succeeded.
func race(n int, write func(i int) error) ([]int, []error) {
	var mu sync.Mutex
	var won []int
	var errs []error
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			err := write(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, i)
			case !errors.Is(err, storage.ErrPrecondition):
				errs = append(errs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return won, errs
}

// testConcurrentCond races 16 writers on one key with the same condition:
// create-if-absent, or replace-if-match from one version. Exactly one wins,
// and the object holds the winner's bytes.
func testConcurrentCond(t *testing.T, b storage.Bucket, replace bool) {
	key, cond := "gen/2.json", storage.Cond{IfAbsent: true}
	if replace {
		key = "pointer.json"
		cond = storage.Cond{IfMatch: put(t, b, key, "base").Version}
	}
	won, errs := race(16, func(i int) error {
		_, err := b.Put(t.Context(), key, []byte(fmt.Sprintf("writer %d", i)), cond)
		return err
	})
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if len(won) != 1 {
		t.Fatalf("%d writers wrote %s under %+v, want exactly 1", len(won), key, cond)
	}
	if data, _ := get(t, b, key); data != fmt.Sprintf("writer %d", won[0]) {
		t.Errorf("the object holds %q, not the winner %d's bytes", data, won[0])
	}
}

func testList(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	for _, k := range []string{"staging/job_id=a/x.parquet", "staging/job_id=a/t/event_date=2026-03-02/p.parquet", "staging/job_id=b/_attempt.json", "staging/readme", "pointer.json"} {
		put(t, b, k, k)
	}
	objs, err := b.List(ctx, "staging/job_id=a/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
		if o.Size != int64(len(o.Key)) {
			t.Errorf("%s: size %d, want %d", o.Key, o.Size, len(o.Key))
		}
	}
	if want := []string{"staging/job_id=a/t/event_date=2026-03-02/p.parquet", "staging/job_id=a/x.parquet"}; !slices.Equal(keys, want) {
		t.Errorf("List = %v, want %v", keys, want)
	}
	files, dirs, err := b.ListDir(ctx, "staging")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Key != "staging/readme" || !slices.Equal(dirs, []string{"job_id=a", "job_id=b"}) {
		t.Errorf("ListDir(staging) = %v %v", files, dirs)
	}
	files, dirs, err = b.ListDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var rootFiles []string
	for _, f := range files {
		if !strings.HasPrefix(f.Key, ".") && f.Key != "pointer.lock" {
			rootFiles = append(rootFiles, f.Key)
		}
	}
	if !slices.Equal(rootFiles, []string{"pointer.json"}) || !slices.Equal(dirs, []string{"staging"}) {
		t.Errorf("ListDir(root) = %v %v", rootFiles, dirs)
	}
}

func testReadRange(t *testing.T, b storage.Bucket) {
	put(t, b, "f.parquet", "PAR1-body-footer-PAR1")
	for _, tc := range []struct {
		off, n int64
		want   string
	}{{0, 4, "PAR1"}, {17, 4, "PAR1"}, {-4, 4, "PAR1"}, {5, 4, "body"}} {
		got, err := b.ReadRange(t.Context(), "f.parquet", tc.off, tc.n)
		if err != nil || string(got) != tc.want {
			t.Errorf("ReadRange(%d, %d) = %q, %v; want %q", tc.off, tc.n, got, err, tc.want)
		}
	}
}

func testDelete(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	for _, k := range []string{"staging/job_id=x/a", "staging/job_id=x/d/b", "staging/job_id=xy/c", "staging/job_id=y/d"} {
		put(t, b, k, "x")
	}
	if err := b.Delete(ctx, "staging/job_id=y/d"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "staging/job_id=y/d"); !storage.IsNotExist(err) {
		t.Errorf("deleted object still readable: %v", err)
	}
	if err := b.DeletePrefix(ctx, "staging/job_id=x/"); err != nil {
		t.Fatal(err)
	}
	objs, err := b.List(ctx, "staging/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Key != "staging/job_id=xy/c" {
		t.Errorf("after DeletePrefix(staging/job_id=x/): %v, want only the neighbour job_id=xy", objs)
	}
}

func testSeal(t *testing.T, b storage.Bucket) {
	ctx := t.Context()
	uri, err := b.WriteURI(ctx, "staging/job_id=s/fact/event_date=2026-03-02")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(uri, "staging/job_id=s/fact/event_date=2026-03-02") {
		t.Errorf("WriteURI = %s", uri)
	}
	put(t, b, "staging/job_id=s/fact/event_date=2026-03-02/part-0.parquet", "abc")
	objs, err := b.Seal(ctx, "staging/job_id=s/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Key != "staging/job_id=s/fact/event_date=2026-03-02/part-0.parquet" || objs[0].Size != 3 {
		t.Errorf("Seal = %+v", objs)
	}
}

func testOddKeys(t *testing.T, b storage.Bucket) {
	for _, k := range []string{"raw?/ingest_date=2026-03-02/part-[0]*?{a,b}.parquet", "with space/é.json", "a=b/c+d.json"} {
		put(t, b, k, k)
		data, a := get(t, b, k)
		if data != k || a.Size != int64(len(k)) {
			t.Errorf("%s read back as %q", k, data)
		}
		objs, err := b.List(t.Context(), k)
		if err != nil || len(objs) != 1 || objs[0].Key != k {
			t.Errorf("List(%s) = %v, %v", k, objs, err)
		}
	}
}
