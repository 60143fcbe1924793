package inputs

import (
	"context"
	"testing"
)

// TestPartitionRows: whether a landed partition's files hold a row, from
// their footers; a file of another partition is never looked at.
func TestPartitionRows(t *testing.T) {
	q := "SELECT 'e' || i AS event_id, TIMESTAMPTZ '2026-03-03 10:00:00+00' AS event_time FROM range(3) t(i)"
	for _, tc := range []struct {
		name    string
		queries []string
		rows    bool
	}{
		{"rows", []string{q}, true},
		{"no rows", []string{q + " LIMIT 0"}, false},
		{"an empty file, then rows", []string{q + " LIMIT 0", q}, true},
		{"no file", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw []RawFile
			for _, s := range tc.queries {
				raw = append(raw, RawFile{File: fileAt(t, writeParquet(t, s)), IngestDate: d3})
			}
			raw = append(raw, RawFile{File: fileAt(t, writeParquet(t, q)), IngestDate: d4})
			rows, err := src().PartitionRows(context.Background(), raw, d3)
			if err != nil || rows != tc.rows {
				t.Errorf("PartitionRows = %v, %v; want %v", rows, err, tc.rows)
			}
		})
	}
}
