package duckdb_test

import (
	"context"
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
