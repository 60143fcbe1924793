package duckdb

import (
	"context"
	"fmt"
)

// zonelessNanos is DuckDB's type of a zoneless nanosecond timestamp: what
// pandas writes for its naive datetime64[ns].
const zonelessNanos = "TIMESTAMP_NS"

// rawRead is how rawScan reads a list of raw files.
type rawRead struct {
	// nanos are the files whose event_time is a zoneless nanosecond
	// timestamp, read apart.
	nanos map[string]bool
	// same: every file has one schema, the same names and types in the
	// same order, as Inspect described them. read_parquet then binds them
	// all by the first, without union_by_name, which holds every file's
	// metadata at once: 7,500 small files took 379 MB with it against
	// 180 MB without (review CR).
	same bool
}

// rawScan is the FROM item that reads raw's five columns and each row's
// file. read_parquet with union_by_name gives a column one type across
// the files, and a zoneless nanosecond event_time in one file made it
// TIMESTAMP_NS for all: another file's microsecond time outside 1677..2262
// (an event stamped 2999, the zero time) then failed the read, exit 1 on
// every retry, naming that file, which the contract accepts. The files of
// that type are then read apart, each side's event_time cast to
// TIMESTAMPTZ (as every statement takes it: a zoneless time as UTC
// wall-clock), and the two sides put together.
func rawScan(files []string, rr rawRead) string {
	union := "union_by_name=true, "
	if rr.same {
		union = ""
	}
	read := func(fs []string) string {
		return fmt.Sprintf("read_parquet(%s, %shive_partitioning=false, filename=%s)", FileList(fs), union, quote(sourceFileColumn))
	}
	var ns, other []string
	for _, f := range files {
		if rr.nanos[f] {
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

// rawLayout is how rawScan reads files: which are of a zoneless
// nanosecond event_time, and whether all share one schema, from what
// Inspect described (a file it did not describe is described now).
func (e *Engine) rawLayout(ctx context.Context, files []string) (rawRead, error) {
	rr := rawRead{nanos: map[string]bool{}, same: true}
	first := ""
	for i, f := range files {
		e.typesMu.Lock()
		typ, ok := e.eventTimeTypes[f]
		sig := e.rawSchemas[f]
		e.typesMu.Unlock()
		if !ok || sig == "" {
			if _, _, err := e.schema(ctx, e.conn, "raw", f); err != nil {
				return rawRead{}, err
			}
			e.typesMu.Lock()
			typ, sig = e.eventTimeTypes[f], e.rawSchemas[f]
			e.typesMu.Unlock()
		}
		if typ == zonelessNanos {
			rr.nanos[f] = true
		}
		if i == 0 {
			first = sig
		}
		if sig == "" || sig != first {
			rr.same = false
		}
	}
	return rr, nil
}
