package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// Write implements engine.Runner. How it writes depends on whether the temp
// table spilled to disk, because every COPY reads the whole temp table:
//
//   - In memory (spilledBytes 0) that read is cheap, and one plain COPY a
//     date, or a part of a split date, is the fastest write: the 60M design
//     day's 23M fact rows took 12.5 s written so, against 16.3 s in one
//     partitioned COPY.
//   - Spilled, each COPY reads the table back from disk, and one a date
//     made the ten-date backfill's writes grow with dates times dates (448 s
//     of its 712 s stage at 4GB). The dates then go out in partitioned
//     COPYs, a batch of dates per statement (copyBatches).
//
// Either way the files are the same: one a whole date under
// dir/event_date=<d>/, and a split date's parts under
// splitDir/event_date=<d>/split_part=<i>/, each row's part a hash of its
// grain (so a row's file is a function of its key). Each date is reported
// written as its last COPY ends.
func (r *runner) Write(ctx context.Context, spec engine.Spec, table string, n map[dates.Date]int, dir, splitDir engine.Dir, written func(dates.Date)) error {
	if table != engine.FactTable {
		return r.write(ctx, spec, table, n, dir, splitDir, written)
	}
	// The fact rows' titles are joined from the manifest pin's Parquet.
	return r.e.withOptimizersOff(ctx, pinSafe, func() error { return r.write(ctx, spec, table, n, dir, splitDir, written) })
}

func (r *runner) write(ctx context.Context, spec engine.Spec, table string, n map[dates.Date]int, dir, splitDir engine.Dir, written func(dates.Date)) error {
	var ds []dates.Date
	for _, d := range spec.Dates {
		if _, ok := n[d]; ok {
			ds = append(ds, d)
		}
	}
	spilled, err := r.e.spilledBytes(ctx)
	if err != nil {
		return err
	}
	if spilled == 0 && !r.e.alwaysBatch {
		return r.writeByDate(ctx, spec, table, ds, n, dir, splitDir, written)
	}
	batches := copyBatches(ds, func(d dates.Date) int { return n[d] })
	r.steps.total -= len(ds) - len(batches) // Stage counted a step a date
	for _, batch := range batches {
		r.steps.next(fmt.Sprintf("write %s %s to %s", table, batch[0], batch[len(batch)-1]))
		var parts []string
		for _, d := range batch {
			if n[d] > 1 {
				parts = append(parts, fmt.Sprintf("WHEN DATE %s THEN hash(%s) %% %d", quote(d.String()), engine.GrainKey[table], n[d]))
			}
		}
		q, to, by := r.query(spec, table, batch), dir.URI, "event_date"
		if len(parts) > 0 {
			// A date of one part in the batch is part 0 of it.
			q = fmt.Sprintf("SELECT *, CASE event_date %s ELSE 0 END AS split_part FROM (%s) t", strings.Join(parts, " "), q)
			to, by = splitDir.URI, "event_date, split_part"
		}
		// One file a part: DuckDB closes a partition's file when more are
		// open than partitioned_write_max_open_files (100 by default, or a
		// config's) and a flush is due, and opens another, and the driver
		// refused the part's many files (exit 1, naming neither). The
		// batch's parts are all kept open: the setting is the batch's part
		// count, or DuckDB's default of 100 or a config's value when that
		// is more.
		open := 0
		for _, d := range batch {
			open += max(n[d], 1)
		}
		chunks := partChunks(len(batch), open)
		for _, c := range chunks {
			rows := q
			if len(chunks) > 1 {
				rows = fmt.Sprintf("SELECT * FROM (%s) t WHERE split_part >= %d AND split_part < %d", q, c[0], c[1])
			}
			if err := r.e.exec(ctx, "write "+to, fmt.Sprintf("SET partitioned_write_max_open_files = %d", max(c[1]-c[0], 100, r.e.openFiles))); err != nil {
				return err
			}
			stmt := fmt.Sprintf("COPY (%s) TO %s (%s, PARTITION_BY (%s), FILENAME_PATTERN 'part-0000{i}', OVERWRITE_OR_IGNORE)", rows, quote(localPath(to)), parquetOptions, by)
			if err := r.e.exec(ctx, "write "+to, stmt); err != nil {
				return err
			}
		}
		for _, d := range batch {
			written(d)
		}
	}
	return nil
}

// writeByDate is Write's in-memory way: one COPY, one file, per date, and
// for a split date one COPY per part.
func (r *runner) writeByDate(ctx context.Context, spec engine.Spec, table string, ds []dates.Date, n map[dates.Date]int, dir, splitDir engine.Dir, written func(dates.Date)) error {
	for _, d := range ds {
		r.steps.next("write " + table + " " + d.String())
		rows := fmt.Sprintf("SELECT * EXCLUDE (event_date) FROM (%s) t", r.query(spec, table, []dates.Date{d}))
		if n[d] == 1 {
			uri, err := dir.Sub("event_date=" + d.String())
			if err != nil {
				return err
			}
			if err := r.e.copy(ctx, rows, uri+"/part-00000.parquet"); err != nil {
				return err
			}
			written(d)
			continue
		}
		for i := range n[d] {
			uri, err := splitDir.Sub(fmt.Sprintf("event_date=%s/split_part=%d", d, i))
			if err != nil {
				return err
			}
			part := fmt.Sprintf("%s WHERE hash(%s) %% %d = %d", rows, engine.GrainKey[table], n[d], i)
			if err := r.e.copy(ctx, part, uri+"/part-00000.parquet"); err != nil {
				return err
			}
		}
		written(d)
	}
	return nil
}

// spilledBytes are the temp table's bytes DuckDB has moved to its
// temporary directory.
func (e *Engine) spilledBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := e.conn.QueryRowContext(ctx, `SELECT coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read DuckDB's memory use: %w", firstLine(err))
	}
	return n, nil
}

// parquetOptions are every staged file's: zstd at level 1, not DuckDB's
// default 3. On a 7.7M-row design date that wrote in 1.6 s against 2.1 s,
// for a file 6% larger (183 MB against 172 MB; 185 MB before the titles
// and constants were ENUMs, see query).
const parquetOptions = "FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1"

func (e *Engine) copy(ctx context.Context, query, file string) error {
	q := fmt.Sprintf("COPY (%s) TO %s (%s)", query, quote(localPath(file)), parquetOptions)
	return e.exec(ctx, "write "+file, q)
}

// partChunks are the ranges of split_part a batch of dates with open
// parts in all is written in, a COPY each: the whole batch in one, but a
// date of more parts than a batch holds (a batch of its own)
// maxBatchParts parts a COPY: in one, its writers ran out of memory where
// the same parts in smaller COPYs did not (review CV).
func partChunks(dates, open int) [][2]int {
	if dates != 1 || open <= maxBatchParts {
		return [][2]int{{0, open}}
	}
	var out [][2]int
	for lo := 0; lo < open; lo += maxBatchParts {
		out = append(out, [2]int{lo, min(lo+maxBatchParts, open)})
	}
	return out
}

// copyBatches groups a table's dates, in order, into batches of even size:
// one batch for each minCopyDates dates begun, at most maxCopies. A batch's
// COPY reads the whole temp table, so the reads stay a fixed number however
// many dates a backfill restates; a few batches rather than one keep the
// progress report's dates done and time left moving while a long backfill
// writes. A day of up to minCopyDates dates is one COPY. But no batch
// holds more than maxBatchParts files (parts(d) a date, a split date's
// parts, at least 1), unless one date alone has more: its COPY keeps a
// writer open, with its buffered rows, for each, and 1,250 dates of a
// spilled backfill in three COPYs, or 29 dates of six parts in one, ran
// out of memory (exit 1) at a limit the same rows in smaller batches
// published within (reviews CR, CU).
func copyBatches(ds []dates.Date, parts func(dates.Date) int) [][]dates.Date {
	weight := func(d dates.Date) int { return max(parts(d), 1) }
	total := 0
	for _, d := range ds {
		total += weight(d)
	}
	k := max(min(maxCopies, (len(ds)+minCopyDates-1)/minCopyDates), (total+maxBatchParts-1)/maxBatchParts)
	var out [][]dates.Date
	for i := 0; len(ds) > 0; i++ {
		// Batch i takes its even share of the parts left, the first ones
		// one more, and at least one date.
		left := max(k-i, 1)
		share := min((total+left-1)/left, maxBatchParts)
		size, sum := 0, 0
		for size < len(ds) && (size == 0 || sum+weight(ds[size]) <= share) {
			sum += weight(ds[size])
			size++
		}
		out = append(out, ds[:size])
		ds, total = ds[size:], total-sum
	}
	return out
}

const maxCopies, minCopyDates, maxBatchParts = 3, 4, 32
