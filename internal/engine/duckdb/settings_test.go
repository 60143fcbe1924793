package duckdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
)

// TestOpenRefusesSettings: a duckdb.* key the engine would override or that
// changes what is published is refused naming the key, in DuckDB's own
// spelling too; a mistyped name says what it is.
func TestOpenRefusesSettings(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{"timezone", "America/New_York", "duckdb.timezone: not settable: the engine forces UTC"},
		{"TimeZone", "America/New_York", "duckdb.TimeZone: not settable: the engine forces UTC"},
		{"default_collation", "nocase", "duckdb.default_collation: not settable"},
		// ICU's date casts follow it: every date was published as 0 events.
		{"calendar", "japanese", "duckdb.calendar: not settable: an event's date is the Gregorian UTC date"},
		// A binary learner_key published as if a string (Spark refuses it).
		{"binary_as_string", "true", "duckdb.binary_as_string: not settable: an unannotated binary key column"},
		// The longest title's tie went to the larger lesson_id.
		{"default_order", "desc", "duckdb.default_order: not settable"},
		{"default_null_order", "nulls_first", "duckdb.default_null_order: not settable"},
		{"null_order", "nulls_first", "duckdb.null_order: not settable"}, // its other name
		{"errors_as_json", "true", "duckdb.errors_as_json: not settable"},
		{"Threads", "2", "duckdb.Threads: not a DuckDB setting name: write it in lower case (duckdb.threads)"},
		{"memory-limit", "1GB", "duckdb.memory-limit: not a DuckDB setting name"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			e, err := duckdb.Open(context.Background(), map[string]string{tc.key: tc.value})
			if err == nil {
				e.Close()
				t.Fatalf("Open accepted duckdb.%s = %s", tc.key, tc.value)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestMemoryErrorNamesKeys: DuckDB's out-of-memory error loses its advice in
// SET statements and names the config keys instead, saying when one is not
// set; the DuckDB error stays reachable.
func TestMemoryErrorNamesKeys(t *testing.T) {
	duck := errors.New("build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)")
	tests := []struct {
		limit, threads, want string
	}{
		{"8MB", "2", "build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used): DuckDB reached its memory limit (duckdb.memory_limit 8MB; duckdb.threads 2): raise duckdb.memory_limit or lower duckdb.threads in the config"},
		{"", "", "build fact_lesson_engagement: Out of Memory Error: failed to pin block (7.5 MiB/7.6 MiB used): DuckDB reached its memory limit (duckdb.memory_limit not set, DuckDB's default of 80% of the RAM; duckdb.threads not set, one a core): raise duckdb.memory_limit or lower duckdb.threads in the config"},
	}
	for _, tc := range tests {
		err := error(&duckdb.MemoryError{Limit: tc.limit, Threads: tc.threads, Err: duck})
		if err.Error() != tc.want {
			t.Errorf("limit %q threads %q:\n got %q\nwant %q", tc.limit, tc.threads, err, tc.want)
		}
		if !errors.Is(err, duck) {
			t.Errorf("limit %q: the DuckDB error is not wrapped", tc.limit)
		}
	}
}
