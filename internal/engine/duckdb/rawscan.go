package duckdb

import (
	"context"
	"fmt"
)

// zonelessNanos is DuckDB's type of a zoneless nanosecond timestamp: what
// pandas writes for its naive datetime64[ns].
const zonelessNanos = "TIMESTAMP_NS"

// rawScan is the FROM item that reads raw's five columns and each row's
// file. read_parquet with union_by_name gives a column one type across
// the files, and a zoneless nanosecond event_time in one file made it
// TIMESTAMP_NS for all: another file's microsecond time outside 1677..2262
// (an event stamped 2999, the zero time) then failed the read, exit 1 on
// every retry, naming that file, which the contract accepts. The files of
// that type are then read apart, each side's event_time cast to
// TIMESTAMPTZ (as every statement takes it: a zoneless time as UTC
// wall-clock), and the two sides put together.
func rawScan(files []string, nanos map[string]bool) string {
	read := func(fs []string) string {
		return fmt.Sprintf("read_parquet(%s, union_by_name=true, hive_partitioning=false, filename=%s)", FileList(fs), quote(sourceFileColumn))
	}
	var ns, other []string
	for _, f := range files {
		if nanos[f] {
			ns = append(ns, f)
		} else {
			other = append(other, f)
		}
	}
	if len(ns) == 0 || len(other) == 0 {
		return read(files)
	}
	side := func(fs []string) string {
		return fmt.Sprintf("SELECT event_id, learner_key, lesson_id, course_id, CAST(event_time AS TIMESTAMPTZ) AS event_time, %s FROM %s",
			sourceFileColumn, read(fs))
	}
	return "(" + side(other) + "\n  UNION ALL\n  " + side(ns) + ")"
}

// nanosFiles are the raw files whose event_time is a zoneless nanosecond
// timestamp, from the types Inspect read (a file it did not read is
// described now).
func (e *Engine) nanosFiles(ctx context.Context, files []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range files {
		e.typesMu.Lock()
		typ, ok := e.eventTimeTypes[f]
		e.typesMu.Unlock()
		if !ok {
			types, _, err := e.schema(ctx, "raw", f)
			if err != nil {
				return nil, err
			}
			typ = types["event_time"]
		}
		if typ == zonelessNanos {
			out[f] = true
		}
	}
	return out, nil
}
