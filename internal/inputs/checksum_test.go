package inputs

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	check := func(f File) error { return checkPages(ctx, src(), "raw", []File{f}, rawColumns, true, nil) }
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
	// Without crc (an engine that verifies them) only the counts.
	if err := checkPages(ctx, src(), "raw", []File{fileAt(t, flipped)}, rawColumns, false, nil); err != nil {
		t.Errorf("the flipped event_time without crc: %v, want it left to the engine", err)
	}

	// Several files, read side by side: the first damaged one in the
	// listing's order is named, whichever finishes first.
	nocrc := filepath.Join("..", "..", "testdata", "fixture", "raw", "ingest_date=2026-03-03", "part-0.parquet")
	many := []File{fileAt(t, checksummed), fileAt(t, nocrc), fileAt(t, checksummed), fileAt(t, flipped), fileAt(t, nocrc), fileAt(t, flipped)}
	if err := checkPages(ctx, src(), "raw", many, rawColumns, true, nil); !errors.As(err, &bad) || bad.File != flipped {
		t.Errorf("six files, two damaged: %v, want the first damaged one named", err)
	}

	chunks := checksummedChunks(t, good)
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

// checksummedChunks are the column chunks of the checksummed file, whose
// bytes are good.
func checksummedChunks(t *testing.T, _ []byte) []chunk {
	t.Helper()
	return chunksAt(t, checksummed)
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

// TestPageHeaderDamage: damage the CRC does not cover, in a page header.
// A flipped bit in a data page's num_values made DuckDB read the row group
// short, with no error: the pages' values must add up to what the row
// group states. A row group whose first page has no CRC (a merge of files
// written with and without them) does not excuse the next row group's.
func TestPageHeaderDamage(t *testing.T) {
	ctx := context.Background()
	good, err := os.ReadFile(checksummed)
	if err != nil {
		t.Fatal(err)
	}
	chunks := checksummedChunks(t, good)
	var times []chunk
	for _, c := range chunks {
		if c.column == "event_time" {
			times = append(times, c)
		}
	}
	if len(times) < 2 {
		t.Fatalf("%d row groups of event_time, want several (make.py writes 300 rows a group)", len(times))
	}
	check := func(t *testing.T, b []byte) error {
		p := filepath.Join(t.TempDir(), "part-0.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return checkPages(ctx, src(), "raw", []File{fileAt(t, p)}, rawColumns, true, nil)
	}
	// edit finds, in the first page header of c, the one-byte change that
	// makes the header read as want says, keeping its length.
	edit := func(t *testing.T, c chunk, change func(byte) byte, want func(before, after header) bool) []byte {
		t.Helper()
		before, err := pageHeader(good[c.start:c.end])
		if err != nil {
			t.Fatal(err)
		}
		for i := c.start; i < c.start+int64(before.headerLen); i++ {
			b := append([]byte(nil), good...)
			b[i] = change(b[i])
			after, err := pageHeader(b[c.start:c.end])
			if err == nil && after.headerLen == before.headerLen && want(before, after) {
				return b
			}
		}
		t.Fatalf("no one-byte change of the header at %d reads as wanted", c.start)
		return nil
	}
	var bad *PageChecksumError
	t.Run("NumValues", func(t *testing.T) {
		b := edit(t, times[0], func(x byte) byte { return x ^ 0x02 }, func(before, after header) bool {
			return after.values != before.values && after.size == before.size && after.crc == before.crc && after.hasCRC
		})
		if err := check(t, b); !errors.As(err, &bad) || bad.Column != "event_time" || bad.Stated == bad.Values {
			t.Errorf("num_values changed: %v, want the values counted against the row group's", err)
		}
	})
	t.Run("MixedRowGroups", func(t *testing.T) {
		// Row group 0's first read page (event_id's) loses its CRC: its
		// field retyped from i32 to i64, which a reader skips.
		var first chunk
		for _, c := range chunks {
			if c.rowGroup == 0 && slices.Contains(rawColumns, c.column) {
				first = c
				break
			}
		}
		b := edit(t, first, func(x byte) byte {
			if x&0x0f == ctI32 {
				return x&0xf0 | ctI64
			}
			return x
		}, func(before, after header) bool { return before.hasCRC && !after.hasCRC && after.size == before.size })
		if err := check(t, b); err != nil {
			t.Fatalf("a row group without CRCs: %v, want it passed", err)
		}
		// A flipped bit in the last row group's event_time data.
		last := times[len(times)-1]
		b[last.end-1] ^= 0x10
		if err := check(t, b); !errors.As(err, &bad) || bad.RowGroup != last.rowGroup {
			t.Errorf("a flipped bit in row group %d after one without CRCs: %v, want it found", last.rowGroup, err)
		}
	})
}

// TestCountsWithoutChecksums: in a file without page CRCs (the fixture's,
// as DuckDB writes it), one flipped bit in a count a reader trusts, a page
// header's num_values or a row group's num_rows in the footer, makes
// DuckDB and pyarrow read the row group short with exit 0; both are
// caught. A list column, whose values outnumber its rows, is not a
// damaged one.
func TestCountsWithoutChecksums(t *testing.T) {
	ctx := context.Background()
	nocrc := filepath.Join("..", "..", "testdata", "fixture", "raw", "ingest_date=2026-03-03", "part-0.parquet")
	good, err := os.ReadFile(nocrc)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(good))
	footerOf := func(b []byte) []byte {
		n := int64(binary.LittleEndian.Uint32(b[size-8:]))
		return b[size-8-n : size-8]
	}
	chunksOf := func(b []byte) []chunk {
		c, err := columnChunks(footerOf(b), size)
		if err != nil {
			return nil
		}
		return c
	}
	before := chunksOf(good)
	if len(before) == 0 || before[0].rows <= 0 {
		t.Fatalf("the fixture file's chunks: %+v", before)
	}
	for _, c := range before {
		if slices.Contains(rawColumns, c.column) && (!c.flat || c.values != c.rows) {
			t.Fatalf("intact chunk %+v: want flat, values = rows", c)
		}
	}
	check := func(t *testing.T, b []byte) error {
		p := filepath.Join(t.TempDir(), "part-0.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return checkPages(ctx, src(), "raw", []File{fileAt(t, p)}, rawColumns, true, nil)
	}
	if err := check(t, good); err != nil {
		t.Fatalf("intact: %v", err)
	}
	var bad *PageChecksumError
	t.Run("RowGroupNumRows", func(t *testing.T) {
		// The footer byte whose low bit flips row group 0's num_rows
		// and nothing else this reader sees.
		start := size - 8 - int64(len(footerOf(good)))
		for i := start; i < size-8; i++ {
			b := append([]byte(nil), good...)
			b[i] ^= 0x01
			after := chunksOf(b)
			if len(after) != len(before) || after[0].rows < 0 || after[0].rows == before[0].rows || after[0].values != before[0].values {
				continue
			}
			if err := check(t, b); !errors.As(err, &bad) || !bad.Rows || bad.Stated != after[0].rows || !strings.Contains(err.Error(), "row group 0") {
				t.Fatalf("num_rows %d -> %d: %v, want the chunk's values counted against the row group's rows", before[0].rows, after[0].rows, err)
			}
			return
		}
		t.Fatal("no one-bit change of the footer changes num_rows alone")
	})
	t.Run("PageNumValues", func(t *testing.T) {
		var times chunk
		for _, c := range before {
			if c.column == "event_time" {
				times = c
			}
		}
		h, err := pageHeader(good[times.start:times.end])
		if err != nil || h.hasCRC {
			t.Fatalf("event_time's first page: %+v, %v; want a header without a CRC", h, err)
		}
		for i := times.start; i < times.start+int64(h.headerLen); i++ {
			b := append([]byte(nil), good...)
			b[i] ^= 0x01
			after, err := pageHeader(b[times.start:times.end])
			if err != nil || after.headerLen != h.headerLen || after.size != h.size || after.values == h.values {
				continue
			}
			if err := check(t, b); !errors.As(err, &bad) || bad.Column != "event_time" || bad.Rows || bad.Values == bad.Stated {
				t.Fatalf("num_values %d -> %d: %v, want the pages' values counted against the chunk's", h.values, after.values, err)
			}
			// For an engine that verifies CRCs itself the counts are
			// still checked: no CRC covers a header.
			p := filepath.Join(t.TempDir(), "part-0.parquet")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkPages(ctx, src(), "raw", []File{fileAt(t, p)}, rawColumns, false, nil); !errors.As(err, &bad) || bad.Values == bad.Stated {
				t.Fatalf("num_values %d -> %d without crc: %v, want the count error", h.values, after.values, err)
			}
			return
		}
		t.Fatal("no one-bit change of the header changes num_values alone")
	})
	t.Run("ListColumn", func(t *testing.T) {
		p := writeParquet(t, `SELECT 'e' || i AS event_id, [i, i + 1, i + 2] AS event_time FROM range(1000) t(i)`)
		chunks := chunksAt(t, p)
		for _, c := range chunks {
			if c.column == "event_time" && (c.flat || c.values <= c.rows) {
				t.Errorf("list chunk %+v: want not flat, more values than rows", c)
			}
		}
		if err := checkPages(ctx, src(), "raw", []File{fileAt(t, p)}, rawColumns, true, nil); err != nil {
			t.Errorf("a list column: %v, want no count error", err)
		}
	})
}

func chunksAt(t *testing.T, p string) []chunk {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := footer(context.Background(), mustBucket(t, p), filepath.Base(p), int64(len(b)), p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := columnChunks(buf, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFlatTopLevel: a top-level column is flat (one value a row, so its
// chunk's values must equal the row group's rows) only as a leaf that is
// not repeated: a legacy repeated primitive (no LIST group around it, its
// path one name long) and a group's subtree are not, and the walk finds
// the top-level columns after a nested group.
func TestFlatTopLevel(t *testing.T) {
	elems := []element{
		{name: "schema", children: 5},
		{name: "event_id"},
		{name: "tags", repeated: true}, // repeated binary tags
		{name: "context", children: 2},
		{name: "device", children: 1},
		{name: "model"},
		{name: "ip"},
		{name: "items", children: 1, repeated: false},
		{name: "list", children: 1, repeated: true},
		{name: "element"},
		{name: "event_time"},
	}
	got := flatTopLevel(elems)
	want := map[string]bool{"event_id": true, "tags": false, "context": false, "items": false, "event_time": true}
	if !maps.Equal(got, want) {
		t.Errorf("flatTopLevel = %v, want %v", got, want)
	}
}

// checkPages is CheckPageChecksums without the schema keys.
func checkPages(ctx context.Context, s *Source, what string, files []File, columns []string, crc bool, unreadable map[string]string) error {
	_, err := s.CheckPageChecksums(ctx, what, files, columns, crc, unreadable)
	return err
}
