package spark

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// TestSchemaReads: a file without a key is read alone; of each key the
// first file in order is read, and stands for the later ones.
func TestSchemaReads(t *testing.T) {
	files := []string{"a", "b", "c", "d", "e", "f"}
	for _, c := range []struct {
		name  string
		keys  map[string]string
		from  []int
		asked []int
	}{
		{"no keys", nil, []int{0, 1, 2, 3, 4, 5}, []int{0, 1, 2, 3, 4, 5}},
		{"one key", map[string]string{"a": "k", "b": "k", "c": "k", "d": "k", "e": "k", "f": "k"}, []int{0, 0, 0, 0, 0, 0}, []int{0}},
		{"two keys interleaved, one file without, one empty", map[string]string{"a": "k", "b": "j", "c": "k", "e": "j", "f": ""},
			[]int{0, 1, 0, 3, 1, 5}, []int{0, 1, 3, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			from, asked := schemaReads(files, c.keys)
			if !slices.Equal(from, c.from) || !slices.Equal(asked, c.asked) {
				t.Errorf("schemaReads: from %v asked %v, want from %v asked %v", from, asked, c.from, c.asked)
			}
		})
	}
}

// TestSchemasReadOncePerKey: on the cluster, with the keys the job's
// footer pass gives, Spark is asked for one schema a key, and every file
// is still judged: a file of another schema among copies of one is named
// by the check, as when every file was read.
func TestSchemasReadOncePerKey(t *testing.T) {
	remote := sparktest.Remote(t)
	ctx := context.Background()
	e, err := Open(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fixture := filepath.Join("..", "..", "..", "testdata", "fixture")
	good, err := os.ReadFile(filepath.Join(fixture, "raw", "ingest_date=2026-03-02", "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	lessons, err := os.ReadFile(filepath.Join(fixture, "lessons", "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		bad     int // the file written with the lessons' schema; -1: none
		keyless bool
		reads   int64
	}{
		{"one schema", -1, false, 1},
		{"another schema among them", 3, false, 2},
		{"no keys", 3, true, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var files []inputs.File
			for i := range 6 {
				b := good
				if i == c.bad {
					b = lessons
				}
				p := filepath.Join(dir, "part-"+string(rune('0'+i))+".parquet")
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, inputs.File{Path: p, Bytes: int64(len(b))})
			}
			keyOf, err := inputs.NewSource(open.Input).CheckPageChecksums(ctx, "raw", files, nil, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			paths, keys := make([]string, len(files)), map[string]string{}
			for i, f := range files {
				paths[i] = f.Path
				if !c.keyless {
					keys[f.Path] = keyOf[i]
				}
			}
			before := e.schemasRead.Load()
			union, err := e.checkColumns(ctx, "raw", paths, keys, rawColumns)
			if got := e.schemasRead.Load() - before; got != c.reads {
				t.Errorf("schemas read: %d, want %d", got, c.reads)
			}
			if c.bad < 0 {
				if err != nil || !slices.Contains(union, "event_id") {
					t.Fatalf("copies of one good file: columns %v, %v", union, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), paths[c.bad]+": missing required column") {
				t.Fatalf("err = %v, want the file of the lessons' schema named", err)
			}
		})
	}
}
