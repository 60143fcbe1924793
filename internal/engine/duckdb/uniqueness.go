package duckdb

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// The uniqueness checks (event ids, enrollment pairs) count repeated 64-bit
// hashes of a key, exactly only when a hash repeats. DuckDB counts them one
// of two ways, equal in result and different in cost:
//
//   - by a sort: the hashes in order, each compared with the next
//     (lead() OVER (ORDER BY h)). While the sort fits in memory this is the
//     cheaper way: on the 60M design day at memory_limit 6GB, 7.3 s against
//     10.4 s for the event ids, 1.5 s against 2.5 s for 20M enrollments;
//   - by a hash table: count(DISTINCT h). Once the keys outgrow memory its
//     partitioned aggregate spills in pieces, and DuckDB's external sort
//     does not keep up: the ten-date backfill's 300M events at 4GB took 35 s
//     by the hash table against 59 s by the sort.
//
// sortsFit decides between them from the files' row count (their footers)
// and the memory limit.
const (
	// sortBytesPerRow is what a row of the sort holds: the 8-byte hash, the
	// next hash beside it and the packed flags, with DuckDB's row layout.
	sortBytesPerRow = 24
	// sortShare of memory_limit the sort may plan for: the rest is the
	// scan's buffers and whatever else the connection holds.
	sortShare = 2
)

// uniqueBy forces one way (tests); "" lets sortsFit decide.
type uniqueBy string

const (
	uniqueAuto uniqueBy = ""
	uniqueSort uniqueBy = "sort"
	uniqueHash uniqueBy = "hash"
)

// sortsFit reports whether a sort over one row per row of files fits the
// connection's memory limit (sortShare of it).
func (e *Engine) sortsFit(ctx context.Context, files []string) (bool, error) {
	switch e.uniqueBy {
	case uniqueSort:
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
	return sortFits(rows, limit), nil
}

func sortFits(rows, memoryLimit int64) bool { return rows*sortBytesPerRow <= memoryLimit/sortShare }

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

// sortedRepeats ends a SELECT over rows, whose column h is the key's hash
// (null where the row is not checked): the count of rows whose h equals the
// next h in order, which is count(h) - count(DISTINCT h), and the FROM. The
// columns of rows named in cols ("f, " or "") pass through the sort for the
// caller's other counts.
func sortedRepeats(cols, rows string) string {
	return fmt.Sprintf(`count(*) FILTER (WHERE h = next_h) FROM (SELECT %sh, lead(h) OVER (ORDER BY h) AS next_h FROM (%s))`, cols, rows)
}
