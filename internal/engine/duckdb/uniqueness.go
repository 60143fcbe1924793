package duckdb

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// The uniqueness checks (event ids, enrollment pairs) count repeated 64-bit
// hashes of a key, exactly only when a hash repeats. They count them one of
// two ways, equal in result and different in cost:
//
//   - in Go (keyset.go): the statement hands every hash to keepHashFunc and
//     Go counts the repeats in cache-sized tables. While the hashes fit in
//     memory this is the cheaper way: on the 60M design day at memory_limit
//     6GB, 3.1 to 3.3 s for the statement handing the hashes over and 0.65 s
//     in Go, 1.1 GB, against 6.0 s and 2.5 GB for DuckDB's sort (lead()
//     over the hashes in order, the way before it); read as vectors since
//     (vectors.go), the hand-over costs about 0.4 s of that where row by
//     row it cost about 2.4;
//   - by DuckDB's hash table: count(DISTINCT h). It spills in pieces once
//     the keys outgrow memory: the ten-date backfill's 300M events at 4GB.
//
// keptFit decides between them from the files' row count (their footers)
// and the memory limit.
const (
	// keptBytesPerRow is what Go holds a hash with: the vector it came in
	// and its place in the partitioned copy the repeats are counted from.
	keptBytesPerRow = 16
	// keptShare of memory_limit the kept hashes may take: Go's memory is
	// outside DuckDB's limit, so it stays well inside what the limit
	// leaves a publish.
	keptShare = 2
)

// uniqueBy forces one way (tests); "" lets keptFit decide.
type uniqueBy string

const (
	uniqueAuto uniqueBy = ""
	uniqueKept uniqueBy = "kept"
	uniqueHash uniqueBy = "hash"
)

// keptFit reports whether the hashes of one row per row of files fit the
// connection's memory limit (keptShare of it) when kept in Go.
func (e *Engine) keptFit(ctx context.Context, files []string) (bool, error) {
	switch e.uniqueBy {
	case uniqueKept:
		return true, nil
	case uniqueHash:
		return false, nil
	}
	if len(files) == 0 {
		return true, nil
	}
	var rows int64
	if err := e.conn.QueryRowContext(ctx, "SELECT coalesce(sum(num_rows), 0)::BIGINT FROM parquet_file_metadata("+FileList(files)+")").Scan(&rows); err != nil {
		return false, fmt.Errorf("read row counts: %w", firstLine(err))
	}
	var setting string
	if err := e.conn.QueryRowContext(ctx, "SELECT current_setting('memory_limit')").Scan(&setting); err != nil {
		return false, fmt.Errorf("read DuckDB's memory_limit: %w", firstLine(err))
	}
	limit, ok := parseBytes(setting)
	if !ok {
		// Both ways are exact: a limit this code cannot read takes the
		// one that works at any size rather than failing the publish.
		return false, nil
	}
	return keptFits(rows, limit), nil
}

func keptFits(rows, memoryLimit int64) bool { return rows*keptBytesPerRow <= memoryLimit/keptShare }

// repeatsColumn is the SELECT column that counts repeated values of h (a
// hash, null where the row is not checked) the chosen way: kept, the rows
// handed to Go (whose repeats handedRepeats then counts); by the hash table,
// the repeats themselves.
func repeatsColumn(kept bool, h string) string {
	if kept {
		return "count(" + keepHashFunc + "(CAST(" + h + " AS UBIGINT)))"
	}
	return "count(" + h + ") - count(DISTINCT " + h + ")"
}

// handedRepeats runs run, a statement with repeatsColumn's kept column,
// and returns how many of the hashes it handed to Go repeat. The sink is
// emptied first and after, so no hash of a failed or earlier statement is
// counted.
func (e *Engine) handedRepeats(ctx context.Context, run func() error) (int64, error) {
	e.sink.take()
	defer e.sink.take()
	if err := run(); err != nil {
		return 0, err
	}
	var threads int
	if err := e.conn.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil {
		return 0, fmt.Errorf("read DuckDB's threads: %w", firstLine(err))
	}
	return e.keptRepeats(ctx, threads)
}

var humanBytes = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?(bytes|[KMGTP]i?B)$`)

var byteUnits = map[string]float64{
	"bytes": 1,
	"KB":    1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
}

// parseBytes reads DuckDB's text for a size ("5.5 GiB", rounded to a
// tenth, which does not move the choice); an unlimited memory_limit reads
// "16383.9 PiB", past int64, and is kept at its largest value.
func parseBytes(s string) (int64, bool) {
	m := humanBytes.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	if b := n * byteUnits[m[2]]; b < math.MaxInt64 {
		return int64(b), true
	}
	return math.MaxInt64, true
}
