package publishtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// Backend is where a suite run keeps its warehouses and inputs: the same
// tests run on local disk and on an S3 server, and every helper below reads
// and writes through the storage seam, so a test never knows which.
type Backend struct {
	Name string
	// root returns a fresh, empty root: a temp dir or an s3:// prefix.
	root func(t *testing.T) string
}

// Local keeps everything in the test's temp dirs.
var Local = Backend{Name: "local", root: func(t *testing.T) string { return t.TempDir() }}

// S3 keeps everything under fresh prefixes of the test S3 server's bucket
// (s3test: a missing server fails the test).
var S3 = Backend{Name: "s3", root: func(t *testing.T) string { return s3test.Location(t).String() }}

// OnS3 reports whether the backend is S3.
func (b Backend) OnS3() bool { return b.Name == S3.Name }

// Root returns a fresh, empty root on the backend.
func (b Backend) Root(t *testing.T) string {
	if b.root == nil {
		return Local.root(t)
	}
	return b.root(t)
}

// NewWarehouse returns a fresh, empty warehouse location on the harness's
// backend.
func (h Harness) NewWarehouse(t *testing.T) string {
	t.Helper()
	return h.Backend.Root(t)
}

// LoadFixture copies a committed fixture (LoadFixture) and, on S3, uploads
// it, so the job reads its inputs from the harness's backend. Fixture.Dir
// stays the local copy; Fixture.Root is where the job reads.
func (h Harness) LoadFixture(t *testing.T, name string) Fixture {
	t.Helper()
	fx := LoadFixture(t, name)
	if h.Backend.OnS3() {
		fx.Root = h.Backend.Root(t)
		Upload(t, fx.Dir, fx.Root)
		if h.NoLocalCopy {
			DropLocalCopy(t, &fx)
		}
	}
	return fx
}

// DropLocalCopy deletes the local copy of an uploaded fixture, so nothing
// under the test's temp directory holds an input any more.
func DropLocalCopy(t *testing.T, fx *Fixture) {
	t.Helper()
	if fx.Root == "" {
		t.Fatal("DropLocalCopy: the fixture was not uploaded")
	}
	if err := os.RemoveAll(fx.Dir); err != nil {
		t.Fatal(err)
	}
	fx.Dir = ""
}

// Join names rel (slash-separated) under root, a path or an s3:// URL.
func Join(t *testing.T, root, rel string) string {
	t.Helper()
	loc, err := storage.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	return loc.Join(rel).String()
}

// Bucket opens root (a path or an s3:// URL) for the test's reads and
// writes, through the same openers the tool uses.
func Bucket(t *testing.T, root string) storage.Bucket {
	t.Helper()
	loc, err := storage.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open.Input(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Upload copies every file under the local dir to root.
func Upload(t *testing.T, dir, root string) {
	t.Helper()
	b := Bucket(t, root)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		_, err = b.Put(context.Background(), filepath.ToSlash(rel), data, storage.Cond{})
		return err
	})
	if err != nil {
		t.Fatalf("upload %s to %s: %v", dir, root, err)
	}
}

// Get returns the object key under root, nil when absent.
func Get(t *testing.T, root, key string) []byte {
	t.Helper()
	data, _, err := Bucket(t, root).Get(context.Background(), key)
	if storage.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Put writes data to key under root.
func Put(t *testing.T, root, key string, data []byte) {
	t.Helper()
	if _, err := Bucket(t, root).Put(context.Background(), key, data, storage.Cond{}); err != nil {
		t.Fatal(err)
	}
}

// Hash hashes every object under prefix of root (keys and bytes).
func Hash(t *testing.T, root, prefix string) string {
	t.Helper()
	b := Bucket(t, root)
	objs, err := b.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, o := range objs {
		data, _, err := b.Get(context.Background(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(o.Key + "\x00"))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DBFor is DB, able to read where: with httpfs and the S3 secret when
// where is an s3:// URL.
func DBFor(t *testing.T, where string) *sql.DB {
	t.Helper()
	db := DB(t)
	if loc, err := storage.Parse(where); err != nil || !loc.IsS3() {
		return db
	}
	exec := func(q string) error { _, err := db.Exec(q); return err }
	if err := duckdb.EnableAWS(context.Background(), exec, ""); err != nil {
		t.Fatal(err)
	}
	// The tests' own reads may glob (an appended directory's *.parquet).
	if err := exec("SET s3_url_compatibility_mode = false"); err != nil {
		t.Fatal(err)
	}
	return db
}
