package inputs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
)

// checksummed is the fixture's 2026-03-03 raw partition as pyarrow writes
// it with a CRC in every page header, several pages a column, dictionary
// and Snappy pages among them (testdata/hostile/raw-page-checksum-mismatch/make.py).
var checksummed = filepath.Join("..", "..", "testdata", "hostile", "raw-page-checksums-intact", "part-0.parquet")

var rawColumns = []string{"event_id", "learner_key", "lesson_id", "course_id", "event_time"}

// TestPageChecksums: intact pages pass, a file without CRCs passes, the
// committed flipped bit fails naming the file and column, and a byte
// changed at the end of any read column's chunk (its last page) fails
// naming that column: every chunk is walked to its end. A column the job
// does not read is not checked.
func TestPageChecksums(t *testing.T) {
	ctx := context.Background()
	good, err := os.ReadFile(checksummed)
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, b []byte) File {
		p := filepath.Join(t.TempDir(), "part-0.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return fileAt(t, p)
	}
	check := func(f File) error { return src().CheckPageChecksums(ctx, "raw", []File{f}, rawColumns) }
	for _, p := range []string{checksummed, filepath.Join("..", "..", "testdata", "fixture", "raw", "ingest_date=2026-03-03", "part-0.parquet")} {
		if err := check(fileAt(t, p)); err != nil {
			t.Errorf("%s: %v, want no error", p, err)
		}
	}
	var bad *PageChecksumError
	flipped := filepath.Join("..", "..", "testdata", "hostile", "raw-page-checksum-mismatch", "part-0.parquet")
	if err := check(fileAt(t, flipped)); !errors.As(err, &bad) || bad.Column != "event_time" || bad.File != flipped {
		t.Errorf("the flipped event_time: %v, want a checksum error naming %s and event_time", err, flipped)
	}

	buf, err := footer(ctx, mustBucket(t, checksummed), filepath.Base(checksummed), int64(len(good)), checksummed)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := columnChunks(buf, int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range chunks {
		seen[c.column] = true
		t.Run(c.column, func(t *testing.T) {
			b := append([]byte(nil), good...)
			b[c.end-1] ^= 0x10
			err := check(write(t, b))
			read := false
			for _, col := range rawColumns {
				read = read || col == c.column
			}
			switch {
			case !read && err != nil:
				t.Errorf("a column the job does not read: %v", err)
			case read && (!errors.As(err, &bad) || bad.Column != c.column || bad.RowGroup != c.rowGroup):
				t.Errorf("the last byte of %s changed: %v, want a checksum error naming it", c.column, err)
			}
		})
	}
	for _, col := range append(rawColumns, "client_payload") {
		if !seen[col] {
			t.Errorf("no chunk of column %s found in the footer (found %v)", col, seen)
		}
	}
}

func mustBucket(t testing.TB, p string) storage.Bucket {
	t.Helper()
	b, _, err := src().object(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzPageStructures: the footer's chunk list and a page header are read
// from hostile bytes without a panic, and a chunk found lies inside the
// file. Seeds: the checksummed file's footer and its first page header.
func FuzzPageStructures(f *testing.F) {
	good, err := os.ReadFile(checksummed)
	if err != nil {
		f.Fatal(err)
	}
	buf, err := footer(context.Background(), mustBucket(f, checksummed), filepath.Base(checksummed), int64(len(good)), checksummed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(buf, int64(len(good)))
	f.Add(good[4:200], int64(len(good)))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		chunks, err := columnChunks(b, size)
		for _, c := range chunks {
			if err == nil && (c.start < 4 || c.end <= c.start || c.end > size) {
				t.Fatalf("chunk %+v outside a file of %d bytes", c, size)
			}
		}
		if h, err := pageHeader(b); err == nil && (h.headerLen <= 0 || h.headerLen > len(b)) {
			t.Fatalf("header length %d of %d bytes", h.headerLen, len(b))
		}
	})
}
