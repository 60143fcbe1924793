package warehouse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestCheckFilesInOrder: the files are checked a few at a time, and the
// mismatches come back in the listing's order (the first is the one an
// error names), whichever check ends first. Of the recorded size, the
// footer's row count is checked too: a file replaced by another of its
// size showed other rows with exit 0.
func TestCheckFilesInOrder(t *testing.T) {
	dir := t.TempDir()
	good := pointertest.ParquetLike(3, 5)
	var files []pointer.File
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("f%02d", i)
		files = append(files, pointer.File{Path: name, Bytes: int64(len(good)), Rows: 5})
		data := good
		switch {
		case i%7 == 3:
			want = append(want, name+" is missing")
			continue
		case i%5 == 1:
			data = pointertest.ParquetLike(4, 5)
			want = append(want, fmt.Sprintf("%s holds %d bytes, the pointer recorded %d", name, len(data), len(good)))
		case i%6 == 2:
			data = pointertest.ParquetLike(3, 6)
			want = append(want, name+" holds 6 rows, the pointer recorded 5, though its size is the one published")
		case i == 39:
			data = slices.Clone(good)
			data[len(data)-5] = 0x7f // a footer length past the file's start
			want = append(want, name+" has no Parquet footer to read (not a readable Parquet footer: footer length 2130706435 in a file of 18 bytes), though its size is the one published")
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad, err := CheckFiles(t.Context(), local.New(dir, local.Options{}), files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range bad {
		got = append(got, m.File.Path+" "+m.Why())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mismatches\n%q\nwant\n%q", got, want)
	}
}

// vanishing removes each file as its footer is read: after its stat, as
// a gc or a lifecycle rule would.
type vanishing struct{ storage.Bucket }

func (v vanishing) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := v.Delete(ctx, key); err != nil {
		return nil, err
	}
	return v.Bucket.ReadRange(ctx, key, off, n)
}

// TestCheckFilesVanished: a file gone between its stat and its footer's
// read is missing, with the advice that goes with it, not an error of
// the read (review CT).
func TestCheckFilesVanished(t *testing.T) {
	dir := t.TempDir()
	data := pointertest.ParquetLike(3, 5)
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := CheckFiles(t.Context(), vanishing{local.New(dir, local.Options{})}, []pointer.File{{Path: "f", Bytes: int64(len(data)), Rows: 5}})
	if err != nil || len(bad) != 1 || !bad[0].Missing {
		t.Fatalf("mismatches %+v, %v; want f missing", bad, err)
	}
}
