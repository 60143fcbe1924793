package inputs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// countingSource reads the files of one directory as publish does,
// counting their range reads in c.
func countingSource(c *readCounter) *Source {
	return NewSource(func(ctx context.Context, loc storage.Location) (storage.Bucket, error) {
		if c.Bucket != nil {
			return nil, fmt.Errorf("a second bucket (%s): the test reads one directory", loc)
		}
		b, err := open.Input(ctx, loc)
		c.Bucket = b
		return c, err
	})
}

// TestFooterReadOnce: every check before an engine opens a raw file (the
// magic, the raw footer's fields, the page counts, the rows) reads its
// footer from the magic check's one read of the file's end when that holds
// it; only a file longer than that read needs its head read apart, and
// only a footer longer than it is read again by the next check. With no
// room kept, each check reads the file again, and gives the same answer.
func TestFooterReadOnce(t *testing.T) {
	for _, tc := range []struct {
		name, query, opts string
		limit             int64
		reads             int32 // magic + fields + pages + rows
	}{
		{"small file", "SELECT i AS event_id FROM range(1000) t(i)", "", cacheBytes, 1},
		{"file longer than the read, small footer", "SELECT md5(i::VARCHAR) AS event_id FROM range(20000) t(i)", "", cacheBytes, 2},
		{"footer longer than the read", longFooter, longFooterOpts, cacheBytes, 2 + 2},
		{"no room: small file", "SELECT i AS event_id FROM range(1000) t(i)", "", 1, 1 + 3},
		{"no room: footer longer than the read", longFooter, longFooterOpts, 1, 2 + 3*2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeParquet(t, tc.query, tc.opts)
			f := fileAt(t, p)
			rows, err := Rows(t.Context(), local.New(filepath.Dir(p), local.Options{}), filepath.Base(p), f.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			c := &readCounter{}
			s := countingSource(c)
			s.footers.limit = tc.limit
			if err := s.CheckMagic(t.Context(), Listing{Raw: []RawFile{{File: f}}}); err != nil {
				t.Fatal(err)
			}
			fields, _, _, err := s.ProhibitedFields(t.Context(), []RawFile{{File: f}}, []string{"email"})
			if err != nil || len(fields) != 0 {
				t.Fatalf("prohibited fields %v, %v", fields, err)
			}
			keys, err := s.CheckPageChecksums(t.Context(), "raw", []File{f}, nil, false, nil)
			if err != nil || len(keys) != 1 || keys[0] == "" {
				t.Fatalf("schema keys %q, %v; want one", keys, err)
			}
			n, err := s.FileRows(t.Context(), "raw", f)
			if err != nil || n != rows {
				t.Fatalf("rows %d (%v), want %d", n, err, rows)
			}
			if got := c.reads.Load(); got != tc.reads {
				t.Errorf("%d range reads, want %d", got, tc.reads)
			}
		})
	}
}

// TestFooterKeptByListing: a footer is kept for the file as listed; the
// same path rewritten (another size) is read again, not answered from the
// old bytes.
func TestFooterKeptByListing(t *testing.T) {
	p := writeParquet(t, "SELECT i AS event_id FROM range(10) t(i)")
	before := fileAt(t, p)
	c := &readCounter{}
	s := countingSource(c)
	if err := s.CheckMagic(t.Context(), Listing{Raw: []RawFile{{File: before}}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(writeParquet(t, "SELECT i AS event_id FROM range(5000) t(i)"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	after := fileAt(t, p)
	if after.Bytes == before.Bytes {
		t.Fatal("the rewrite kept the size: not the case this is")
	}
	reads := c.reads.Load()
	n, err := s.FileRows(t.Context(), "raw", after)
	if err != nil || n != 5000 {
		t.Fatalf("rows %d (%v), want the rewritten file's 5000", n, err)
	}
	if c.reads.Load() == reads {
		t.Error("the rewritten file was not read")
	}
}
