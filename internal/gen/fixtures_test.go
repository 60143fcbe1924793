package gen

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed fixtures under testdata/ (go test ./internal/gen -run TestCommittedFixtures -update)")

const regenerate = "go test ./internal/gen -run TestCommittedFixtures -update"

// shapes is the base fixture followed by every variant.
func shapes() []string { return append([]string{""}, Variants...) }

func shapeName(variant string) string {
	if variant == "" {
		return "base"
	}
	return variant
}

// committedDir is where a shape lives in the repository; other packages'
// tests read these directories, so they must match the generator exactly.
func committedDir(variant string) string {
	if variant == "" {
		return filepath.Join("..", "..", "testdata", "fixture")
	}
	return filepath.Join("..", "..", "testdata", "variants", variant)
}

func TestCommittedFixtures(t *testing.T) {
	for _, v := range shapes() {
		t.Run(shapeName(v), func(t *testing.T) {
			dir := committedDir(v)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if _, err := Generate(context.Background(), Options{Out: dir, Variant: v}); err != nil {
					t.Fatal(err)
				}
				return
			}
			fresh := t.TempDir()
			if _, err := Generate(context.Background(), Options{Out: fresh, Variant: v}); err != nil {
				t.Fatal(err)
			}
			if diff := compareTrees(dir, fresh); diff != "" {
				t.Fatalf("committed %s differs from a fresh generation: %s\nif the change is intended, run: %s", dir, diff, regenerate)
			}
		})
	}
}

// TestCommittedFixturesSize keeps the repository light: the fixtures are for
// unit tests, not for measuring anything at volume.
func TestCommittedFixturesSize(t *testing.T) {
	var total int64
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 1<<20 {
		t.Fatalf("testdata holds %d bytes, want well under 1 MiB", total)
	}
}

// compareTrees returns "" when both directories hold the same files with the
// same bytes, else a description of the first differences.
func compareTrees(want, got string) string {
	wf, err := listFiles(want)
	if err != nil {
		return err.Error()
	}
	gf, err := listFiles(got)
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(wf, gf) {
		return "file lists differ: want " + joinLines(wf) + " got " + joinLines(gf)
	}
	var diff []string
	for _, f := range wf {
		a, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			return err.Error()
		}
		b, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			return err.Error()
		}
		if !bytes.Equal(a, b) {
			diff = append(diff, f)
		}
	}
	if len(diff) > 0 {
		return "bytes differ in " + joinLines(diff)
	}
	return ""
}

func listFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func joinLines(s []string) string { return "[" + strings.Join(s, ", ") + "]" }
