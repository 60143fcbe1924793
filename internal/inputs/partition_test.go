package inputs

import (
	"context"
	"testing"
)

// TestPartitionHolds: whether a landed partition's files may hold an
// event of their own date, by event_time's row group statistics, for the
// timestamp units and edges a producer writes; what the statistics cannot
// tell (a string column, no statistics) may hold it.
func TestPartitionHolds(t *testing.T) {
	// d3 is 2026-03-03; the files are written by DuckDB.
	ts := func(typ, v string) string {
		return "SELECT 'e' || i AS event_id, CAST(" + v + " AS " + typ + ") AS event_time FROM range(3) t(i)"
	}
	for _, tc := range []struct {
		name        string
		queries     []string
		opts        string
		rows, ofDay bool
	}{
		{"own date", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-03 10:00:00+00'")}, "", true, true},
		{"the day before only", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-02 10:00:00+00'")}, "", true, false},
		{"midnight is the date", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-03 00:00:00+00'")}, "", true, true},
		{"the last microsecond before", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-02 23:59:59.999999+00'")}, "", true, false},
		{"the next midnight", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-04 00:00:00+00'")}, "", true, false},
		{"milliseconds, before", []string{ts("TIMESTAMP_MS", "TIMESTAMP '2026-03-02 23:59:59.999'")}, "", true, false},
		{"milliseconds, own", []string{ts("TIMESTAMP_MS", "TIMESTAMP '2026-03-03 00:00:00'")}, "", true, true},
		{"nanoseconds, before", []string{ts("TIMESTAMP_NS", "TIMESTAMP '2026-03-02 12:00:00'")}, "", true, false},
		{"nanoseconds, own", []string{ts("TIMESTAMP_NS", "TIMESTAMP '2026-03-03 12:00:00'")}, "", true, true},
		{"a range around the date", []string{"SELECT CAST('2026-03-01' AS TIMESTAMPTZ) + INTERVAL (i) DAY AS event_time FROM range(5) t(i) WHERE i <> 2"}, "", true, true},
		{"every time null", []string{ts("TIMESTAMPTZ", "NULL")}, "", true, true},
		{"one time null", []string{"SELECT CASE WHEN i = 1 THEN NULL ELSE TIMESTAMPTZ '2026-03-02 10:00:00+00' END AS event_time FROM range(3) t(i)"}, "", true, true},
		{"no rows", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-03 10:00:00+00'") + " LIMIT 0"}, "", false, false},
		{"a string is not judged", []string{ts("VARCHAR", "'2026-03-02 10:00:00'")}, "", true, true},
		{"the second row group", []string{"SELECT CASE WHEN i < 2048 THEN TIMESTAMPTZ '2026-03-02 10:00:00+00' ELSE TIMESTAMPTZ '2026-03-03 10:00:00+00' END AS event_time FROM range(4096) t(i) ORDER BY i"}, ", ROW_GROUP_SIZE 2048", true, true},
		{"the second file", []string{ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-02 10:00:00+00'"), ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-03 10:00:00+00'")}, "", true, true},
		{"an empty file, then another date's", []string{ts("TIMESTAMPTZ", "NULL") + " LIMIT 0", ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-01 10:00:00+00'")}, "", true, false},
		{"EVENT_TIME in capitals", []string{"SELECT TIMESTAMPTZ '2026-03-02 10:00:00+00' AS EVENT_TIME"}, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw []RawFile
			for _, q := range tc.queries {
				raw = append(raw, RawFile{File: fileAt(t, writeParquet(t, q, tc.opts)), IngestDate: d3})
			}
			// A file of another partition is never looked at.
			raw = append(raw, RawFile{File: fileAt(t, writeParquet(t, ts("TIMESTAMPTZ", "TIMESTAMPTZ '2026-03-03 10:00:00+00'"))), IngestDate: d4})
			rows, ofDay, err := src().PartitionHolds(context.Background(), raw, d3)
			if err != nil || rows != tc.rows || ofDay != tc.ofDay {
				t.Errorf("PartitionHolds = %v, %v, %v; want %v, %v", rows, ofDay, err, tc.rows, tc.ofDay)
			}
		})
	}
}
