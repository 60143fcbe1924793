package duckdb

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestRawLayout: raw files of one schema are read without union_by_name
// (which holds every file's metadata at once: review CR), and a file of
// its columns in another order, of another type, or of a column more
// brings it back; the rows read are the same either way.
func TestRawLayout(t *testing.T) {
	e, write := threeRowFiles(t)
	cols := rawSelect
	a, b := write("a.parquet", cols), write("b.parquet", cols)
	for _, tc := range []struct {
		name string
		odd  string // the third file's select, "" for none
		same bool
	}{
		{"one schema", "", true},
		{"columns in another order", "SELECT 'l' AS learner_key, 'e' || i AS event_id, 'x' AS lesson_id, 'c' AS course_id, TIMESTAMPTZ '2026-03-02 10:00:00+00' AS event_time", false},
		{"another type", "SELECT 'e' || i AS event_id, 'l' AS learner_key, 'x' AS lesson_id, 'c' AS course_id, TIMESTAMP '2026-03-02 10:00:00' AS event_time", false},
		{"a column more", cols + ", 1 AS extra", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := []string{a, b}
			if tc.odd != "" {
				files = append(files, write(strings.ReplaceAll(tc.name, " ", "-")+".parquet", tc.odd))
			}
			rr, err := e.rawLayout(t.Context(), files)
			if err != nil {
				t.Fatal(err)
			}
			scan := rawScan(files, rr)
			if rr.same != tc.same || strings.Contains(scan, "union_by_name") == tc.same {
				t.Fatalf("same %v, scan %s; want same %v", rr.same, scan, tc.same)
			}
			var n int
			q := "SELECT count(*) FROM " + scan + " WHERE learner_key = 'l' AND event_id LIKE 'e%'"
			if err := e.conn.QueryRowContext(t.Context(), q).Scan(&n); err != nil || n != 3*len(files) {
				t.Errorf("%d rows of every column in its place (%v), want %d", n, err, 3*len(files))
			}
		})
	}
}

// rawSelect selects the five raw columns, with i the row (threeRowFiles).
const rawSelect = "SELECT 'e' || i AS event_id, 'l' AS learner_key, 'x' AS lesson_id, 'c' AS course_id, TIMESTAMPTZ '2026-03-02 10:00:00+00' AS event_time"

// threeRowFiles opens an engine, closed when the test ends, and returns
// it with write, which writes the three rows of sel over range(3) t(i) to
// a Parquet file name in a temporary directory and returns its path.
func threeRowFiles(t *testing.T) (*Engine, func(name, sel string) string) {
	t.Helper()
	e, err := Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	dir := t.TempDir()
	return e, func(name, sel string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if _, err := e.conn.ExecContext(t.Context(), fmt.Sprintf("COPY (%s FROM range(3) t(i)) TO '%s' (FORMAT parquet)", sel, p)); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
