package publishtest

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
	pubreader "github.com/techlearningpro/engagement/reader"
)

// Snapshot is the pointer generation readers of warehouse see now, read
// through the public reader package as an outside program would.
func Snapshot(t *testing.T, warehouse string) *pubreader.Snapshot {
	t.Helper()
	w, err := pubreader.Open(context.Background(), warehouse)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := w.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// Visible reads a table exactly as a reader of the pointer sees it.
func Visible(t *testing.T, warehouse, table string) reader.Table {
	t.Helper()
	conn, err := DBFor(t, warehouse).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	loc, err := storage.Parse(warehouse)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := reader.Read(context.Background(), conn, loc, LoadPointer(t, warehouse), table, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// Rows turns a table into maps keyed by column name.
func Rows(tab reader.Table) []map[string]any {
	out := make([]map[string]any, len(tab.Rows))
	for i, r := range tab.Rows {
		m := map[string]any{}
		for j, c := range tab.Columns {
			m[c] = r[j]
		}
		out[i] = m
	}
	return out
}

// CourseDay is one visible course_day row.
type CourseDay struct {
	Events, Matched, Unknown, Enrolled, Learners int64
	JobID                                        string
}

// VisibleCourseDay returns course_day as readers see it, by date and course.
func VisibleCourseDay(t *testing.T, warehouse string) map[dates.Date]map[string]CourseDay {
	t.Helper()
	out := map[dates.Date]map[string]CourseDay{}
	for _, r := range Rows(Visible(t, warehouse, engine.CourseDayTable)) {
		d := dateOf(t, r["event_date"])
		if out[d] == nil {
			out[d] = map[string]CourseDay{}
		}
		course, _ := r["course_id"].(string)
		out[d][course] = CourseDay{
			Events: r["event_count"].(int64), Matched: r["matched_lesson_count"].(int64),
			Unknown: r["unknown_lesson_count"].(int64), Enrolled: r["enrolled_event_count"].(int64),
			Learners: r["learner_count"].(int64), JobID: r["job_id"].(string),
		}
	}
	return out
}

// FactSum is the visible fact event_count sum per date.
func FactSum(t *testing.T, warehouse string) map[dates.Date]int64 {
	t.Helper()
	out := map[dates.Date]int64{}
	for _, r := range Rows(Visible(t, warehouse, engine.FactTable)) {
		out[dateOf(t, r["event_date"])] += r["event_count"].(int64)
	}
	return out
}

// StagedSchema returns the column names of a staged Parquet file.
func StagedSchema(t *testing.T, warehouse string, f pointer.File) []string {
	t.Helper()
	rows, err := DBFor(t, warehouse).Query("DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning=false)", Join(t, warehouse, f.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var name, typ string
		var a, b, c, d any
		if err := rows.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, name)
	}
	return cols
}

// StagedStrings names each BYTE_ARRAY column of one staged file with its
// Parquet annotation (converted type), as a reader of the file finds it.
func StagedStrings(t *testing.T, warehouse string, f pointer.File) map[string]string {
	t.Helper()
	rows, err := DBFor(t, warehouse).Query(`SELECT name, coalesce(converted_type, '') FROM parquet_schema(?)
		WHERE type = 'BYTE_ARRAY'`, Join(t, warehouse, f.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, annotation string
		if err := rows.Scan(&name, &annotation); err != nil {
			t.Fatal(err)
		}
		out[name] = annotation
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func dateOf(t *testing.T, v any) dates.Date {
	t.Helper()
	tm, ok := v.(interface{ Unix() int64 })
	if !ok {
		t.Fatalf("event_date %v (%T) is not a date", v, v)
	}
	return dates.Date(tm.Unix() / 86400)
}
