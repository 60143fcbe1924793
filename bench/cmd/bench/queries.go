package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/techlearningpro/engagement/internal/gen"
)

// The scan floor and the naive baseline read the same inputs the publish
// reads, with the same DuckDB settings, as plain SQL.

type queryFlags struct {
	data, out, memoryLimit, tempDir string
	threads                         int
}

func runQuery(ctx context.Context, kind string, args []string) error {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	var f queryFlags
	fs.StringVar(&f.data, "data", "", "generated design tree (raw/, lessons/, enrollments/, expected.json)")
	fs.StringVar(&f.out, "out", "", "baseline output directory (emptied first)")
	fs.StringVar(&f.memoryLimit, "memory-limit", "6GB", "duckdb memory_limit")
	fs.StringVar(&f.tempDir, "temp-directory", "", "duckdb temp_directory")
	fs.IntVar(&f.threads, "threads", 2, "duckdb threads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var exp gen.Expected
	if kind != "sql" {
		e, err := gen.ReadExpected(filepath.Join(f.data, gen.ExpectedFile))
		if err != nil {
			return err
		}
		exp = e
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	settings := []string{
		"SET TimeZone = 'UTC'",
		fmt.Sprintf("SET threads = %d", f.threads),
		fmt.Sprintf("SET memory_limit = '%s'", f.memoryLimit),
	}
	if f.tempDir != "" {
		settings = append(settings, fmt.Sprintf("SET temp_directory = '%s'", f.tempDir))
	}
	for _, s := range settings {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if kind == "sql" {
		return runStatements(ctx, conn, kind, fs.Args())
	}
	var ds []string
	for _, d := range exp.Dates {
		ds = append(ds, "DATE '"+d.String()+"'")
	}
	first, last := exp.Dates[0], exp.Dates[len(exp.Dates)-1]
	// The same window the publish reads: [first date, last date + lateness 2].
	// event_date is derived as the publish derives it (UTC from the epoch,
	// no ICU cast), so the ratios compare plans, not date arithmetic.
	events := fmt.Sprintf(`(SELECT learner_key, lesson_id, course_id, event_time, CAST(make_timestamp(epoch_us(event_time)) AS DATE) AS event_date
		FROM read_parquet('%s', hive_partitioning = true)
		WHERE ingest_date BETWEEN DATE '%s' AND DATE '%s' AND CAST(make_timestamp(epoch_us(event_time)) AS DATE) IN (%s))`,
		filepath.Join(f.data, "raw", "*", "*.parquet"), first, last.AddDays(2), strings.Join(ds, ", "))
	var stmts []string
	switch kind {
	case "scan":
		// Every needed raw column is decoded; nothing is joined or written.
		// sum(length()) decodes every value; max() could be answered from
		// the Parquet statistics without reading the pages.
		stmts = []string{`SELECT count(*), sum(length(learner_key)), sum(length(lesson_id)), sum(length(course_id)), sum(epoch_us(event_time)) FROM ` + events + ` ev`}
	case "aggregate":
		// The aggregate floor: raw read once, aggregated to the fact grain
		// and written partitioned by date, in one statement; no join, no
		// course_day, no check. What a publish adds above it is the joins,
		// the second table, the checks and the gate.
		if err := freshOut(kind, f.out); err != nil {
			return err
		}
		stmts = []string{fmt.Sprintf(`COPY (SELECT learner_key, lesson_id, event_date, min(course_id) AS course_id, count(*) AS event_count,
				min(event_time) AS first_event_time, max(event_time) AS last_event_time
				FROM %s ev GROUP BY learner_key, lesson_id, event_date)
				TO '%s' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (event_date))`, events, filepath.Join(f.out, "fact_lesson_engagement"))}
	case "baseline":
		if err := freshOut(kind, f.out); err != nil {
			return err
		}
		joined := fmt.Sprintf(`%s ev
			LEFT JOIN (SELECT lesson_id, course_id AS manifest_course_id, manifest_id, lesson_title
			           FROM read_parquet('%s') WHERE manifest_id = '%s') m ON ev.lesson_id = m.lesson_id
			LEFT JOIN (SELECT learner_key, course_id FROM read_parquet('%s') WHERE snapshot_id = '%s') en
			       ON ev.learner_key = en.learner_key AND ev.course_id = en.course_id`,
			events, filepath.Join(f.data, "lessons", "*.parquet"), exp.ManifestID,
			filepath.Join(f.data, "enrollments", "*.parquet"), exp.EnrollmentSnapshotID)
		stmts = []string{
			fmt.Sprintf(`COPY (SELECT ev.learner_key, ev.lesson_id, ev.event_date, min(ev.course_id) AS course_id,
				min(m.manifest_id) AS manifest_id, min(m.lesson_title) AS lesson_title, count(*) AS event_count,
				min(ev.event_time) AS first_event_time, max(ev.event_time) AS last_event_time,
				bool_or(en.learner_key IS NOT NULL) AS enrolled, '%s' AS enrollment_snapshot_id, 'baseline' AS job_id
				FROM %s GROUP BY ev.learner_key, ev.lesson_id, ev.event_date)
				TO '%s' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (event_date))`,
				exp.EnrollmentSnapshotID, joined, filepath.Join(f.out, "fact_lesson_engagement")),
			fmt.Sprintf(`COPY (SELECT ev.course_id, ev.event_date, count(*) AS event_count,
				count(m.manifest_id) AS matched_lesson_count, count(*) - count(m.manifest_id) AS unknown_lesson_count,
				count(en.learner_key) AS enrolled_event_count, count(DISTINCT ev.learner_key) AS learner_count, 'baseline' AS job_id
				FROM %s GROUP BY ev.course_id, ev.event_date)
				TO '%s' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (event_date))`,
				joined, filepath.Join(f.out, "course_day")),
		}
	}
	return runStatements(ctx, conn, kind, stmts)
}

// freshOut empties the output directory of a measurement that writes.
func freshOut(kind, out string) error {
	if out == "" {
		return fmt.Errorf("%s: --out is required", kind)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.MkdirAll(out, 0o755)
}

// runStatements runs each statement to completion and prints its time.
// For an operator profile, pass SET enable_profiling = 'json' and SET
// profiling_output = 'FILE' before the statement.
func runStatements(ctx context.Context, conn *sql.Conn, kind string, stmts []string) error {
	for i, s := range stmts {
		start := time.Now()
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s statement %d: %w", kind, i+1, err)
		}
		fmt.Fprintf(os.Stderr, "%s statement %d: %.2fs\n", kind, i+1, time.Since(start).Seconds())
	}
	return nil
}
