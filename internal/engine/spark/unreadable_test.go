package spark_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // writes the broken file

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestFilesSparkCannotRead: a raw file Spark cannot read for a reason of
// its own, which DuckDB reads (so the hostile corpus, whose cases both
// engines judge alike, cannot hold it), is refused while the inputs are
// inspected: exit 1, naming the file and why, the pointer untouched.
func TestFilesSparkCannotRead(t *testing.T) {
	h := harness(t)
	cases := []struct {
		name string
		// broken breaks the raw file f and returns the path it now has.
		broken func(t *testing.T, f string) string
		want   string
	}{
		{"a colon in a local file's name", func(t *testing.T, f string) string {
			to := filepath.Join(filepath.Dir(f), "events-2026-03-02T01:00:00Z.parquet")
			if err := os.Rename(f, to); err != nil {
				t.Fatal(err)
			}
			return to
		}, "Spark cannot read a local file whose name holds ':'"},
		{"nanosecond timestamps", func(t *testing.T, f string) string {
			db, err := sql.Open("duckdb", "")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tmp := filepath.Join(t.TempDir(), "ns.parquet")
			if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * REPLACE (CAST(event_time AS TIMESTAMP_NS) AS event_time) FROM read_parquet('%s')) TO '%s' (FORMAT parquet)", f, tmp)); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return f
		}, "a column's Parquet type is one Spark cannot read (in any column of the file, used by the job or not: drop or retype it where the file is written, or, when the job does not read that column, publish with the duckdb engine): [PARQUET_TYPE_ILLEGAL]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, "")
			wh := t.TempDir()
			h.MustPublish(t, fx.Job(t, wh, "before", mon, tue))
			before := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))
			file := c.broken(t, filepath.Join(fx.Dir, "raw", "ingest_date="+mon, "part-0.parquet"))
			_, err := h.Publish(t, fx.Job(t, wh, "broken", mon, tue))
			if err == nil {
				t.Fatal("publish succeeded")
			}
			if msg := err.Error(); !strings.Contains(msg, "raw file "+file+": ") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q should name %s and say %q", msg, file, c.want)
			}
			if code := exitcode.Code(err); code != exitcode.Error {
				t.Errorf("exit %d, want %d", code, exitcode.Error)
			}
			if after := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json")); string(after) != string(before) {
				t.Errorf("pointer.json changed")
			}
		})
	}
}
