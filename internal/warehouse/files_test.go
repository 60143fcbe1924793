package warehouse

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestCheckFilesInOrder: the files are stated a few at a time, and the
// mismatches come back in the listing's order (the first is the one an
// error names), whichever stat ends first.
func TestCheckFilesInOrder(t *testing.T) {
	dir := t.TempDir()
	var files []pointer.File
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("f%02d", i)
		files = append(files, pointer.File{Path: name, Bytes: 3})
		switch {
		case i%7 == 3:
			want = append(want, name+" is missing")
			continue
		case i%5 == 1:
			if err := os.WriteFile(filepath.Join(dir, name), []byte("four"), 0o644); err != nil {
				t.Fatal(err)
			}
			want = append(want, name+" holds 4 bytes, the pointer recorded 3")
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("abc"), 0o644); err != nil {
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
