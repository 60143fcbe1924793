// Package reader is what a consumer of the published tables does: load the
// pointer, then read exactly the files it lists. It never lists or globs
// staging/, so abandoned and rejected attempts stay invisible.
package reader

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Table is a result set with column names.
type Table struct {
	Columns []string
	Rows    [][]any
}

// DateStatus is what readers see for one date.
type DateStatus struct {
	Date                 string  `json:"date"`
	JobID                string  `json:"job_id"`
	ManifestID           string  `json:"manifest_id"`
	EnrollmentSnapshotID string  `json:"enrollment_snapshot_id"`
	EventCount           int64   `json:"event_count"`
	UnknownLessonCount   int64   `json:"unknown_lesson_count"`
	UnknownLessonRate    float64 `json:"unknown_lesson_rate"`
	FactFiles            int     `json:"fact_files"`
	FactRows             int64   `json:"fact_rows"`
}

// Status lists the published dates of p, sorted.
func Status(p pointer.Pointer) []DateStatus {
	var out []DateStatus
	for d, e := range p.Dates {
		s := DateStatus{Date: d.String(), JobID: e.JobID, ManifestID: e.ManifestID, EnrollmentSnapshotID: e.EnrollmentSnapshotID,
			EventCount: e.EventCount, UnknownLessonCount: e.UnknownLessonCount, UnknownLessonRate: e.UnknownLessonRate,
			FactFiles: len(e.FactFiles)}
		for _, f := range e.FactFiles {
			s.FactRows += f.Rows
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date < out[j].Date })
	return out
}

// Query builds the SQL that reads one table as readers see it: the listed
// files of each date (or of one date), with event_date restored from the
// pointer entry rather than parsed from a path. It returns "" when no file
// is listed.
func Query(warehouse storage.Location, p pointer.Pointer, table string, only *dates.Date) (string, error) {
	if _, err := FileColumns(table); err != nil {
		return "", err
	}
	var ds []dates.Date
	for d := range p.Dates {
		if only == nil || *only == d {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var parts []string
	for _, d := range ds {
		e := p.Dates[d]
		files := e.FactFiles
		if table == engine.CourseDayTable {
			files = e.CourseDayFiles
		}
		if len(files) == 0 {
			continue
		}
		var paths []string
		for _, f := range files {
			paths = append(paths, warehouse.Join(f.Path).String())
		}
		part, _ := SelectDate(table, d.String(), paths)
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "", nil
	}
	order := "event_date, course_id"
	if table == engine.FactTable {
		order = "event_date, learner_key, lesson_id"
	}
	return "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") ORDER BY " + order, nil
}

// FileColumns are the columns table's files hold: all but event_date, the
// last, which lives in the pointer and the directory name, not the files.
func FileColumns(table string) ([]string, error) {
	switch table {
	case engine.FactTable:
		return engine.FactColumns[:len(engine.FactColumns)-1], nil
	case engine.CourseDayTable:
		return engine.CourseDayColumns[:len(engine.CourseDayColumns)-1], nil
	}
	return nil, fmt.Errorf("unknown table %q: want %s or %s", table, engine.FactTable, engine.CourseDayTable)
}

// SelectDate is the DuckDB SELECT of one event date's files of table
// (day is YYYY-MM-DD): the files' columns with the date as event_date, read
// by their exact names, never as patterns, so a warehouse path such as
// W/wh? does not also read a sibling W/whB.
func SelectDate(table, day string, uris []string) (string, error) {
	cols, err := FileColumns(table)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("SELECT %s, DATE %s AS event_date FROM read_parquet(%s, hive_partitioning=false)",
		strings.Join(cols, ", "), quote(day), duckdb.FileList(uris)), nil
}

// Read runs Query on conn and holds every row (a test's, or a small
// date's); Each streams them.
func Read(ctx context.Context, conn *sql.Conn, warehouse storage.Location, p pointer.Pointer, table string, only *dates.Date) (Table, error) {
	t := Table{Columns: Columns(table)}
	err := Each(ctx, conn, warehouse, p, table, only, func(r []any) error {
		t.Rows = append(t.Rows, r)
		return nil
	})
	if err != nil {
		return Table{}, err
	}
	return t, nil
}

// Columns are the columns Read and Each give of table, in order.
func Columns(table string) []string {
	if table == engine.CourseDayTable {
		return engine.CourseDayColumns
	}
	return engine.FactColumns
}

// Each runs Query on conn and hands each row to fn, in the query's order,
// without holding them: a date's fact rows are millions on a design day.
func Each(ctx context.Context, conn *sql.Conn, warehouse storage.Location, p pointer.Pointer, table string, only *dates.Date, fn func([]any) error) error {
	q, err := Query(warehouse, p, table, only)
	if err != nil || q == "" {
		return err
	}
	cols := Columns(table)
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
