package local

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestEntryGoneSinceRead removes one entry between the directory's read
// and its Lstat, as a concurrent gc does: the listing leaves it out and
// keeps the rest, in ListDir and in List (walk), instead of failing
// whole as "not found".
func TestEntryGoneSinceRead(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pointer-history")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1.json", "2.json", "3.json"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		list func(b *Bucket) ([]string, error)
	}{
		{"ListDir", func(b *Bucket) ([]string, error) {
			files, _, err := b.ListDir(context.Background(), "pointer-history")
			var keys []string
			for _, f := range files {
				keys = append(keys, f.Key)
			}
			return keys, err
		}},
		{"List", func(b *Bucket) ([]string, error) {
			objs, err := b.List(context.Background(), "pointer-history/")
			var keys []string
			for _, o := range objs {
				keys = append(keys, o.Key)
			}
			return keys, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := filepath.Join(dir, "1.json")
			if err := os.WriteFile(gone, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			lstat = func(p string) (os.FileInfo, error) {
				if p == gone {
					os.Remove(p)
				}
				return os.Lstat(p)
			}
			defer func() { lstat = os.Lstat }()
			keys, err := tc.list(New(root, Options{}))
			if err != nil {
				t.Fatalf("listing failed whole: %v", err)
			}
			if want := []string{"pointer-history/2.json", "pointer-history/3.json"}; !slices.Equal(keys, want) {
				t.Errorf("listed %v, want %v", keys, want)
			}
		})
	}
}
