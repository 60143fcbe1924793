package reader

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	ts := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // midnight: a timestamp, not a date
	tab := Table{
		Columns: []string{"course_id", "first_event_time", "manifest_id", "event_date"},
		Rows:    [][]any{{"course-k8s", ts, nil, ts}},
	}
	cases := []struct{ format, want string }{
		{"csv", "course_id,first_event_time,manifest_id,event_date\ncourse-k8s,2026-03-02T00:00:00Z,,2026-03-02\n"},
		{"json", `{"course_id":"course-k8s","event_date":"2026-03-02","first_event_time":"2026-03-02T00:00:00Z","manifest_id":null}` + "\n"},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		if err := Write(&b, tab, tc.format); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.format, b.String(), tc.want)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, tab, "table"); err != nil || !strings.Contains(b.String(), "NULL") {
		t.Errorf("table: %q %v", b.String(), err)
	}
	if err := Write(&b, tab, "xml"); err == nil {
		t.Errorf("xml accepted")
	}
}

// In the table a key that would read as NULL, as nothing, as a shorter key
// or as more columns or rows is printed quoted; a plain key is not.
func TestWriteTableQuotesAmbiguousKeys(t *testing.T) {
	cases := []struct{ key, want string }{
		{"course-k8s", "course-k8s"},
		{"", `""`},
		{"NULL", `"NULL"`},
		{"a\tb", `"a\tb"`},
		{"a\nb", `"a\nb"`},
		{"trailing ", `"trailing "`},
		{" leading", `" leading"`},
		{`"quoted"`, `"\"quoted\""`},
		{"zero\u200bwidth", `"zero\u200bwidth"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"naïve café", "naïve café"},
		{"cafe\u0301", `"cafe\u0301"`},
		{"a\u00a0b", `"a\u00a0b"`},
		{"ideographic\u3000space", `"ideographic\u3000space"`},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		tab := Table{Columns: []string{"course_id", "manifest_id"}, Rows: [][]any{{tc.key, nil}}}
		if err := Write(&b, tab, "table"); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("key %q: %d lines %q, want a header and one row", tc.key, len(lines), b.String())
			continue
		}
		rest, ok := strings.CutPrefix(lines[1], tc.want)
		if !ok || !strings.HasSuffix(rest, "NULL") || strings.Trim(strings.TrimSuffix(rest, "NULL"), " ") != "" {
			t.Errorf("key %q: row %q, want %s then NULL", tc.key, lines[1], tc.want)
		}
	}
}

// TestWriteCSVTellsNullFromEmpty: NULL is an empty field, the empty string
// a quoted one, as DuckDB reads them back; fields that need quotes get
// them, and encoding/csv reads every field back as written.
func TestWriteCSVTellsNullFromEmpty(t *testing.T) {
	tab := Table{Columns: []string{"course_id", "lesson_title", "manifest_id"},
		Rows: [][]any{{"c1", "", nil}, {"c,2", `say "hi"`, " lead"}, {"c3", "two\nlines", "plain"}}}
	var b bytes.Buffer
	if err := Write(&b, tab, "csv"); err != nil {
		t.Fatal(err)
	}
	want := "course_id,lesson_title,manifest_id\nc1,\"\",\n\"c,2\",\"say \"\"hi\"\"\",\" lead\"\nc3,\"two\nlines\",plain\n"
	if b.String() != want {
		t.Fatalf("csv:\n%q\nwant\n%q", b.String(), want)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range tab.Rows {
		for j, v := range r {
			if s, _ := v.(string); rows[i+1][j] != s {
				t.Errorf("row %d column %d read back %q, want %q", i, j, rows[i+1][j], s)
			}
		}
	}
}
