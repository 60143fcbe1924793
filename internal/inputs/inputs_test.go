package inputs

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// src reads local inputs as publish does.
func src() *Source { return NewSource(open.Input) }

func loc(p string) storage.Location { return storage.MustParse(p) }

// fileAt is a listed File for the local file p.
func fileAt(t *testing.T, p string) File {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return File{Path: p, Bytes: fi.Size(), ModTime: fi.ModTime()}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

var (
	d1 = dates.MustParse("2026-03-01")
	d2 = dates.MustParse("2026-03-02")
	d3 = dates.MustParse("2026-03-03")
	d4 = dates.MustParse("2026-03-04")
)

func TestListRaw(t *testing.T) {
	root := t.TempDir()
	p3 := filepath.Join(root, "ingest_date=2026-03-03")
	// Every non-hidden file is data, whatever its name (Hive's 000000_0,
	// .PARQUET, .parq); hidden names are bookkeeping, even a hidden
	// directory holding Parquet.
	for _, name := range []string{"part-1.parquet", "part-0.parquet", "000000_0", "x.PARQUET", "y.parq", "_SUCCESS", ".part-0.parquet.crc", "_temporary/0/part-9.parquet"} {
		touch(t, filepath.Join(p3, filepath.FromSlash(name)))
	}
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "part-0.parquet"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-04", "_SUCCESS")) // landed nothing
	touch(t, filepath.Join(root, "_SUCCESS"))
	// Outside the read window a partition is only looked at, not judged:
	// what a read of it would refuse is named, for the unsettled check.
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "hour=23", "part-1.parquet"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "part-7.parquet._COPYING_"))
	touch(t, filepath.Join(root, "ingest_date=2026-02-28", "hour=01", "part-0.parquet"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "part-0.parquet._COPYING_")) // beside its file: a finished copy's
	if err := os.Symlink(filepath.Join(root, "gone"), filepath.Join(root, "ingest_date=2026-03-01", "part-8.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "ingest_date=2026-03-02"), 0o755); err != nil {
		t.Fatal(err)
	}
	ingest, files, all, err := src().ListRawAll(t.Context(), loc(root), d2, d4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := all[d1].Unreadable, []string{"hour=23/", "part-7.parquet._COPYING_", "part-8.parquet"}; !slices.Equal(got, want) {
		t.Errorf("2026-03-01's unread entries %q, want %q", got, want)
	}
	// A partition holding only a directory is not landed, but named.
	if p, ok := all[dates.MustParse("2026-02-28")]; !ok || !slices.Equal(p.Unreadable, []string{"hour=01/"}) || len(p.Files) != 0 {
		t.Errorf("2026-02-28: %+v (listed %v), want only hour=01/ named", p, ok)
	}
	if _, ok := all[d4]; ok {
		t.Errorf("2026-03-04 (only _SUCCESS) listed: %+v", all[d4])
	}
	if len(all[d1].Files) != 1 || len(all[d3].Files) != 5 || all[d3].Unreadable != nil {
		t.Errorf("partitions %+v: want 2026-03-01's one file and 2026-03-03's five, nothing unread in the window", all)
	}
	if !slices.Equal(ingest, []dates.Date{d1, d3}) {
		t.Errorf("landed partitions %v, want 2026-03-01 and 2026-03-03", ingest)
	}
	var got []string
	for _, f := range files {
		if f.IngestDate != d3 || f.Bytes != 1 || f.ModTime.IsZero() {
			t.Errorf("file %+v: want ingest date %s, 1 byte and a modification time", f, d3)
		}
		got = append(got, filepath.Base(f.Path))
	}
	if want := []string{"000000_0", "part-0.parquet", "part-1.parquet", "x.PARQUET", "y.parq"}; !slices.Equal(got, want) {
		t.Errorf("window files %v, want %v", got, want)
	}
}

// TestListRawDanglingLinks: a symlink to nothing with a hidden name (a
// .crc or _SUCCESS a producer's tool left dangling) is passed over like
// any hidden name, in and out of the read window and in the raw root, as
// is a hidden link to itself; a data file's or a partition's name pointing
// at nothing is refused, naming it, inside the window only. Each failed
// every listing before.
func TestListRawDanglingLinks(t *testing.T) {
	root := t.TempDir()
	link := func(rel string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "gone"), p); err != nil {
			t.Fatal(err)
		}
	}
	touch(t, filepath.Join(root, "ingest_date=2026-03-03", "part-0.parquet"))
	link("ingest_date=2026-03-03/.part-0.parquet.crc")
	link("ingest_date=2026-03-03/_SUCCESS")
	link("ingest_date=2026-03-01/.part-0.parquet.crc")
	link("_SUCCESS")
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "part-0.parquet"))
	link("ingest_date=2026-03-01/part-1.parquet") // outside the window
	link("ingest_date=2026-01-01")                // a partition, outside the window
	loop := func(rel string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.Symlink(p, p); err != nil {
			t.Fatal(err)
		}
	}
	loop("ingest_date=2026-03-03/.loop")
	loop(".l")
	_, files, err := src().ListRaw(t.Context(), loc(root), d2, d4)
	if err != nil || len(files) != 1 || filepath.Base(files[0].Path) != "part-0.parquet" {
		t.Fatalf("ListRaw = %v, %v; want the one data file of 2026-03-03", files, err)
	}
	link("ingest_date=2026-03-02")
	if _, _, err := src().ListRaw(t.Context(), loc(root), d2, d4); err == nil || !strings.Contains(err.Error(), "ingest_date=2026-03-02 is a symbolic link that cannot be followed") {
		t.Errorf("a dangling partition in the window: %v, want it named", err)
	}
	if err := os.Remove(filepath.Join(root, "ingest_date=2026-03-02")); err != nil {
		t.Fatal(err)
	}
	link("ingest_date=2026-03-03/part-1.parquet")
	if _, _, err := src().ListRaw(t.Context(), loc(root), d2, d4); err == nil || !strings.Contains(err.Error(), "part-1.parquet is a symbolic link that cannot be followed") {
		t.Errorf("a dangling data file in the window: %v, want it named", err)
	}
}

func TestListRawRefusesStrangers(t *testing.T) {
	cases := []struct{ entry, want string }{
		{"ingest_date=2026-02-30/part-0.parquet", "ingest_date=2026-02-30"},
		{"event_date=2026-03-01/part-0.parquet", "event_date=2026-03-01"},
		{"stray.parquet", "stray.parquet"},
		{"ingest_date=2026-03-02/hour=23/part-1.parquet", "hour=23 is a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.entry, func(t *testing.T) {
			root := t.TempDir()
			touch(t, filepath.Join(root, filepath.FromSlash(tc.entry)))
			_, _, err := src().ListRaw(t.Context(), loc(root), d2, d3)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, _, err := src().ListRaw(t.Context(), loc(filepath.Join(t.TempDir(), "missing")), d2, d3); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing root: err %v", err)
	}
}

func TestListPath(t *testing.T) {
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "_SUCCESS"))
	if _, err := src().ListPath(t.Context(), "lessons", loc(dir)); !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), dir) {
		t.Errorf("dir with only hidden files: err %v, want ErrNoData naming %s", err, dir)
	}
	touch(t, filepath.Join(dir, "b.parquet"))
	touch(t, filepath.Join(dir, "a"))
	files, err := src().ListPath(t.Context(), "lessons", loc(dir))
	if err != nil || len(files) != 2 || filepath.Base(files[0].Path) != "a" || filepath.Base(files[1].Path) != "b.parquet" {
		t.Errorf("files %v err %v", files, err)
	}
	one := filepath.Join(dir, "b.parquet")
	if files, err := src().ListPath(t.Context(), "lessons", loc(one)); err != nil || len(files) != 1 || files[0].Path != one || files[0].Bytes != 1 {
		t.Errorf("single file: %v %v", files, err)
	}
	// A name a directory's listing passes over, given alone: Spark does
	// not read a hidden one (DuckDB published it), and a copy in flight is
	// half-written (review CP).
	for name, want := range map[string]string{
		"_lessons.parquet":    "a name beginning with _ or . is bookkeeping",
		".enr.parquet":        "a name beginning with _ or . is bookkeeping",
		"b.parquet._COPYING_": "a copy still in flight",
	} {
		touch(t, filepath.Join(dir, "single", name))
		if _, err := src().ListPath(t.Context(), "lessons", loc(filepath.Join(dir, "single", name))); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s given alone: err %v, want it refused saying %q", name, err, want)
		}
	}
	os.RemoveAll(filepath.Join(dir, "single"))
	touch(t, filepath.Join(dir, "nested", "c.parquet"))
	if _, err := src().ListPath(t.Context(), "lessons", loc(dir)); err == nil || !strings.Contains(err.Error(), "nested is a directory") {
		t.Errorf("nested directory: err %v", err)
	}
	if _, err := src().ListPath(t.Context(), "enrollments", loc(filepath.Join(dir, "missing"))); err == nil || !strings.Contains(err.Error(), "enrollments") {
		t.Errorf("missing path: err %v", err)
	}
}

// Verify fails an attempt whose inputs changed after it listed them, naming
// the file and what happened to it.
func TestVerify(t *testing.T) {
	later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string // "" means unchanged
	}{
		{"Unchanged", func(*testing.T, string) {}, ""},
		{"AddedInWindow", func(t *testing.T, dir string) {
			touch(t, filepath.Join(dir, "raw", "ingest_date=2026-03-02", "late.parquet"))
		}, filepath.Join("ingest_date=2026-03-02", "late.parquet") + " was added"},
		{"NewPartitionInWindow", func(t *testing.T, dir string) {
			touch(t, filepath.Join(dir, "raw", "ingest_date=2026-03-03", "p.parquet"))
		}, "was added"},
		{"AddedOutsideWindow", func(t *testing.T, dir string) {
			touch(t, filepath.Join(dir, "raw", "ingest_date=2026-03-09", "p.parquet"))
		}, ""},
		{"Removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw", "ingest_date=2026-03-02", "part-0.parquet"))
		}, "part-0.parquet was removed"},
		{"Rewritten", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "raw", "ingest_date=2026-03-02", "part-0.parquet"), []byte("xy"), 0o644)
		}, "part-0.parquet changed after the attempt listed it (1 bytes"},
		{"Touched", func(t *testing.T, dir string) {
			os.Chtimes(filepath.Join(dir, "raw", "ingest_date=2026-03-02", "part-0.parquet"), later, later)
		}, "now 1 bytes modified 2030-01-01T00:00:00Z"},
		{"PinChanged", func(t *testing.T, dir string) { touch(t, filepath.Join(dir, "enrollments", "part-1.parquet")) }, "enrollments file"},
		{"NestedDirectoryAppeared", func(t *testing.T, dir string) {
			touch(t, filepath.Join(dir, "raw", "ingest_date=2026-03-02", "hour=1", "p.parquet"))
		}, "list again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			req, l := listed(t, dir)
			tc.change(t, dir)
			err := src().Verify(t.Context(), req, l)
			if tc.want == "" {
				if err != nil {
					t.Errorf("Verify: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify error %v, want ErrChanged mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCheckMagic(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string // want "" accepts
	}{
		{"smallest", "PAR1\x00\x00\x00\x00PAR1", ""},
		{"empty", "", "0 bytes, too small"},
		{"eleven bytes", "PAR1abcPAR1", "11 bytes, too small"},
		{"leading", "PAR0\x00\x00\x00\x00PAR1", `leading magic bytes "PAR0"`},
		{"trailing", "PAR1\x00\x00\x00\x00\x00PAR", `trailing magic bytes "\x00PAR"`},
		{"text", "event_id,learner_key\n", `leading magic bytes "even"`},
	} {
		p := filepath.Join(dir, tc.name+".parquet")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := src().checkMagic(t.Context(), "raw", fileAt(t, p))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "raw file "+p)):
			t.Errorf("%s: err = %v, want it to name the file and %q", tc.name, err, tc.want)
		}
	}
	if err := src().checkMagic(t.Context(), "raw", File{Path: filepath.Join(dir, "missing.parquet"), Bytes: 100}); err == nil {
		t.Error("a missing file passed")
	}
}

// downStore is a real local bucket whose store goes down after the
// attempt's listing: every list fails as a refused connection does.
type downStore struct{ storage.Bucket }

func (downStore) ListDir(ctx context.Context, dir string) ([]storage.Object, []string, error) {
	return nil, nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
}

func (d downStore) List(ctx context.Context, prefix string) ([]storage.Object, error) {
	_, _, err := d.ListDir(ctx, prefix)
	return nil, err
}

// listed lays out one raw partition and both pins under dir and returns
// the request over them and the attempt's listing of it.
func listed(t *testing.T, dir string) (Request, Listing) {
	t.Helper()
	touch(t, filepath.Join(dir, "raw", "ingest_date=2026-03-02", "part-0.parquet"))
	touch(t, filepath.Join(dir, "lessons", "part-0.parquet"))
	touch(t, filepath.Join(dir, "enrollments", "part-0.parquet"))
	req := Request{Raw: loc(filepath.Join(dir, "raw")), Lessons: loc(filepath.Join(dir, "lessons")), Enrollments: loc(filepath.Join(dir, "enrollments")), From: d2, To: d3}
	l, err := src().List(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return req, l
}

// TestVerifyStoreDown: a store that does not answer the second listing is
// a storage error, not "input changed", which sends the person on call
// to ingestion.
func TestVerifyStoreDown(t *testing.T) {
	req, l := listed(t, t.TempDir())
	down := NewSource(func(_ context.Context, l storage.Location) (storage.Bucket, error) {
		return downStore{local.New(l.Path, local.Options{})}, nil
	})
	err := down.Verify(t.Context(), req, l)
	if err == nil || errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Verify: %v, want the store's error, not ErrChanged", err)
	}
}

// TestVerifyStoreRefused: a store that refuses the second listing (access
// denied, an expired session token: storage.ErrRefused, which the S3
// backend marks) is the store's answer, not "input changed".
func TestVerifyStoreRefused(t *testing.T) {
	req, l := listed(t, t.TempDir())
	denied := NewSource(func(_ context.Context, l storage.Location) (storage.Bucket, error) {
		return deniedStore{local.New(l.Path, local.Options{})}, nil
	})
	err := denied.Verify(t.Context(), req, l)
	if err == nil || errors.Is(err, ErrChanged) || !errors.Is(err, storage.ErrRefused) {
		t.Errorf("Verify: %v, want the store's refusal, not ErrChanged", err)
	}
}

// deniedStore is a real local bucket whose store refuses every listing
// after the attempt's, as S3 does when the credentials expired.
type deniedStore struct{ storage.Bucket }

func (deniedStore) ListDir(ctx context.Context, dir string) ([]storage.Object, []string, error) {
	return nil, nil, storage.Refused(errors.New("access denied (AccessDenied)"))
}

func (d deniedStore) List(ctx context.Context, prefix string) ([]storage.Object, error) {
	_, _, err := d.ListDir(ctx, prefix)
	return nil, err
}

// TestVerifyCancelled: a run cancelled (a signal) during the second
// listing is not "input changed", which sent the person on call to
// ingestion.
func TestVerifyCancelled(t *testing.T) {
	req, l := listed(t, t.TempDir())
	src := NewSource(func(_ context.Context, l storage.Location) (storage.Bucket, error) {
		return local.New(l.Path, local.Options{}), nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := src.Verify(ctx, req, l)
	if err == nil || errors.Is(err, ErrChanged) || !errors.Is(err, context.Canceled) {
		t.Errorf("Verify: %v, want the cancellation, not ErrChanged", err)
	}
}
