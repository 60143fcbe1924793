package duckdb

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestSchemasReadSideBySide: the raw files' schemas are read a few at a
// time on connections of their own, and the checks still meet the files in
// listing order: of a file missing a column and a file DuckDB cannot read,
// the earlier is named, whichever read ends first; files past
// schemaReaders are read too.
func TestSchemasReadSideBySide(t *testing.T) {
	e, write := threeRowFiles(t)
	dir := t.TempDir()
	good := write("good.parquet", rawSelect)
	missing := write("missing.parquet", "SELECT 'e' || i AS event_id, 'l' AS learner_key, 'x' AS lesson_id, TIMESTAMPTZ '2026-03-02 10:00:00+00' AS event_time")
	damaged := filepath.Join(dir, "damaged.parquet")
	// The magics are right (the job checks them first); the footer is not.
	if err := os.WriteFile(damaged, []byte("PAR1"+strings.Repeat("x", 64)+"\x10\x00\x00\x00PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := func(n int, at map[int]string) []string {
		var out []string
		for i := range n {
			p := good
			if f, ok := at[i]; ok {
				p = f
			}
			out = append(out, p)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  string // the file the error names; "" for none
	}{
		{"all good, past the readers", files(3*schemaReaders, nil), ""},
		{"a missing column before a damaged footer", files(20, map[int]string{5: missing, 9: damaged}), missing + ": missing required column course_id"},
		{"a damaged footer before a missing column", files(20, map[int]string{5: damaged, 9: missing}), damaged + ": not a readable Parquet file"},
		{"the last file", files(20, map[int]string{19: missing}), missing + ": missing required column course_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			union, err := e.checkColumns(t.Context(), "raw", tc.files, rawColumns)
			if tc.want == "" {
				if err != nil || !slices.Equal(union, []string{"event_id", "learner_key", "lesson_id", "course_id", "event_time"}) {
					t.Fatalf("columns %v, %v; want the five", union, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "raw file "+tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReadersCopySessionSettings: a reader connection has the settings
// DuckDB keeps per connection as the engine's has them (httpfs's, such as
// s3_url_compatibility_mode, are of that kind; streaming_buffer_size is
// one that needs no extension).
func TestReadersCopySessionSettings(t *testing.T) {
	e, err := Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.set(t.Context(), "SET streaming_buffer_size = '3MB'"); err != nil {
		t.Fatal(err)
	}
	var want string
	if err := e.conn.QueryRowContext(t.Context(), "SELECT current_setting('streaming_buffer_size')").Scan(&want); err != nil {
		t.Fatal(err)
	}
	conns := e.readers(t.Context(), 3)
	defer func() {
		for _, c := range conns[1:] {
			c.Close()
		}
	}()
	if len(conns) != 3 || conns[0] != e.conn {
		t.Fatalf("%d readers, want the engine's and 2 more", len(conns))
	}
	for i, c := range conns[1:] {
		var got string
		if err := c.QueryRowContext(t.Context(), "SELECT current_setting('streaming_buffer_size')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("reader %d: streaming_buffer_size %q, want the engine's %q", i+1, got, want)
		}
	}
}

// TestSchemaReadAgainOnOwnConnection: a read that fails on a reader's
// connection is made again on the engine's own before it counts, with the
// reads it skipped. Here the readers lack a setting the engine's
// connection has (the URL mode that keeps a key's glob characters
// literal, dropped from what they are given), so every reader reads
// part-[0]*?.parquet on S3 as a pattern and fails; the check still passes
// on every file.
func TestSchemaReadAgainOnOwnConnection(t *testing.T) {
	b := s3test.Bucket(t)
	e, write := threeRowFiles(t)
	if err := e.EnableAWS(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.sets["s3_url_compatibility_mode"]; !ok {
		t.Fatal("the engine did not record its URL mode: not the case this is")
	}
	delete(e.sets, "s3_url_compatibility_mode")
	data, err := os.ReadFile(write("good.parquet", rawSelect))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range 2 * schemaReaders {
		key := fmt.Sprintf("part-%02d.parquet", i)
		if i%3 == 1 {
			key = fmt.Sprintf("part-[%d]*?.parquet", i)
		}
		if _, err := b.Put(t.Context(), key, data, storage.Cond{}); err != nil {
			t.Fatal(err)
		}
		files = append(files, b.Location().Join(key).String())
	}
	union, err := e.checkColumns(t.Context(), "raw", files, rawColumns)
	if err != nil || len(union) != 5 {
		t.Fatalf("columns %v, %v; want the five, every file read", union, err)
	}
}
