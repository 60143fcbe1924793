package reader_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/reader"
)

func TestMissingWarehouse(t *testing.T) {
	where := filepath.Join(t.TempDir(), "warehouse-typo")
	w, err := reader.Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Current(context.Background())
	if !errors.Is(err, reader.ErrNoWarehouse) || !strings.Contains(err.Error(), where) {
		t.Fatalf("Current = %v, want ErrNoWarehouse naming %s", err, where)
	}
	if _, err := os.Stat(where); !os.IsNotExist(err) {
		t.Fatalf("reading a missing warehouse created it: %v", err)
	}
}

func TestDateAndRange(t *testing.T) {
	w, err := reader.Open(context.Background(), warehouse)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := w.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		date string
		want error
	}{{"2026-03-01", reader.ErrNotPublished}, {"2026-03-04", reader.ErrNotPublished}, {"2026-03-02", nil}} {
		if _, err := snap.Date(tc.date); !errors.Is(err, tc.want) {
			t.Errorf("Date(%s) = %v, want %v", tc.date, err, tc.want)
		}
	}
	if _, err := snap.Range("2026-02-01", "2026-02-28"); !errors.Is(err, reader.ErrNotPublished) {
		t.Errorf("empty range: %v, want ErrNotPublished", err)
	}
	if _, err := snap.Range("2026-03-03", "2026-03-02"); err == nil {
		t.Error("reversed range accepted")
	}
	if _, err := snap.Date("2026-3-2"); err == nil || errors.Is(err, reader.ErrNotPublished) {
		t.Errorf("malformed date: %v, want a parse error", err)
	}
	ds, err := snap.Range("2026-03-03", "2026-03-09")
	if err != nil || len(ds) != 1 || ds[0].Date != "2026-03-03" {
		t.Fatalf("Range = %+v, %v; want 2026-03-03 only", ds, err)
	}
	// Every URI is absolute and names a file that exists; the rows of the
	// listed fact files add up to the generator's fact_rows (expected.json).
	var rows int64
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		fs, err := ds[0].Files(table)
		if err != nil || len(fs) == 0 {
			t.Fatalf("%s files: %v, %v", table, fs, err)
		}
		for _, f := range fs {
			if !filepath.IsAbs(f.URI) || !strings.HasSuffix(f.URI, ".parquet") {
				t.Errorf("URI %q: want an absolute .parquet path", f.URI)
			}
			if st, err := os.Stat(f.URI); err != nil || st.Size() != f.Bytes {
				t.Errorf("%s: %v (bytes %d listed)", f.URI, err, f.Bytes)
			}
			if table == reader.FactTable {
				rows += f.Rows
			}
		}
	}
	if want := expectedInt(t, "2026-03-03", "fact_rows"); rows != want {
		t.Errorf("fact rows listed = %d, expected.json fact_rows = %d", rows, want)
	}
	if _, err := ds[0].Files("nope"); err == nil {
		t.Error("unknown table accepted")
	}
}

// TestS3 publishes to the shared S3 server and resolves the warehouse by
// its s3:// URL; without the server (AWS_* from /work/shared-env.sh) it
// fails.
func TestS3(t *testing.T) {
	where := s3test.Location(t).String()
	ctx := context.Background()
	w, err := reader.Open(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Current(ctx); !errors.Is(err, reader.ErrNoWarehouse) {
		t.Fatalf("before publish: %v, want ErrNoWarehouse", err)
	}
	if code := publish(where, "fixture-s3"); code != 0 {
		t.Fatalf("publish to %s: exit %d", where, code)
	}
	snap, err := w.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := snap.Date("2026-03-02")
	if err != nil {
		t.Fatal(err)
	}
	if want := expectedInt(t, "2026-03-02", "event_count"); d.EventCount != want || d.JobID != "fixture-s3" || snap.Generation() != 1 {
		t.Errorf("2026-03-02 = %+v at generation %d, want %d events of fixture-s3 at 1", d, snap.Generation(), want)
	}
	for _, f := range append(d.FactFiles, d.CourseDayFiles...) {
		if !strings.HasPrefix(f.URI, where+"/") {
			t.Errorf("URI %s not under %s", f.URI, where)
		}
	}
	if len(d.FactFiles) == 0 || len(d.CourseDayFiles) == 0 {
		t.Errorf("no files listed: %+v", d)
	}
}

// expectedInt reads one per-date figure of testdata/fixture/expected.json.
func expectedInt(t *testing.T, date, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(publishtest.Root(), "testdata", "fixture", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		ByDate map[string]map[string]int64 `json:"by_date"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	v, ok := exp.ByDate[date][key]
	if !ok {
		t.Fatalf("expected.json has no by_date[%s][%s]", date, key)
	}
	return v
}

// TestMissingPointer: history without pointer.json is no mistyped
// location (ErrNoWarehouse, which would send a reader to check the path).
// Generation 1 alone is a first publish stopped after its commit
// (ErrPending: the next publish rolls it forward); more is a damaged
// warehouse (ErrLost, saying which copy restores it).
func TestMissingPointer(t *testing.T) {
	for _, tc := range []struct {
		publishes int
		want      error
		says      string
	}{
		{1, reader.ErrPending, "rolls generation 1 forward"},
		{2, reader.ErrLost, "copy pointer-history/2.json over pointer.json"},
	} {
		t.Run(fmt.Sprint(tc.publishes), func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "warehouse")
			for i := 1; i <= tc.publishes; i++ {
				if code := publish(wh, fmt.Sprintf("missing-%d", i)); code != 0 {
					t.Fatalf("publish %d: exit %d", i, code)
				}
			}
			if err := os.Remove(filepath.Join(wh, "pointer.json")); err != nil {
				t.Fatal(err)
			}
			w, err := reader.Open(context.Background(), wh)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Current(context.Background())
			if !errors.Is(err, tc.want) || errors.Is(err, reader.ErrNoWarehouse) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Current = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}
