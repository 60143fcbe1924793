package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestStatusWarnsOfAnEditedPointer: a pointer.json edited in place (a
// figure changed by hand) was shown by status and used by views with no
// word, while history, publish, rollback and gc name it. They now warn,
// and still answer from it (it names what readers follow); a sound
// pointer draws no warning.
func TestStatusWarnsOfAnEditedPointer(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	if code, _, stderr := h.Run(t, nil, fx.Args(wh, "edited-1", "2026-03-02")...); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, stderr)
	}
	const warning = "pointer.json and the history copy written with it differ"
	commands := [][]string{
		{"status", "--warehouse", wh, "--date", "2026-03-02"},
		{"views", "--warehouse", wh, "--dialect", "duckdb"},
	}
	for _, args := range commands {
		if code, _, stderr := h.Run(t, nil, args...); code != 0 || strings.Contains(stderr, warning) {
			t.Fatalf("%s on a sound pointer: exit %d\n%s", args[0], code, stderr)
		}
	}
	path := filepath.Join(wh, "pointer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	count := `"event_count": ` + strconv.FormatInt(fx.Expected.ByDate[dates.MustParse("2026-03-02")].Events, 10)
	if !strings.Contains(string(data), count) {
		t.Fatalf("pointer.json has no %s", count)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), count, `"event_count": 1`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range commands {
		code, _, stderr := h.Run(t, nil, args...)
		if code != 0 || !strings.Contains(stderr, warning) || !strings.Contains(stderr, "edited in place") {
			t.Errorf("%s on an edited pointer: exit %d, want 0 with the warning:\n%s", args[0], code, stderr)
		}
	}
}

// TestReadNamesWhyAFileIsUnreadable: a published file read refuses to
// open says why (here a symlink in the staging path; a directory this user
// may not search alike), where DuckDB said only "No files found", which
// reads as a file gc deleted.
func TestReadNamesWhyAFileIsUnreadable(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	if code, _, stderr := h.Run(t, nil, fx.Args(wh, "unreadable-1", "2026-03-02")...); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, stderr)
	}
	dir := filepath.Join(wh, "staging", "job_id=unreadable-1", "course_day")
	if err := os.Rename(dir, dir+".real"); err != nil {
		t.Fatal(err)
	}
	// A link to itself: DuckDB cannot open through it.
	if err := os.Symlink("course_day", dir); err != nil {
		t.Fatal(err)
	}
	// Rows stream to stdout: a read that fails prints none of them, in
	// any format (not even csv's header).
	for _, format := range []string{"table", "csv", "json"} {
		code, stdout, stderr := h.Run(t, nil, "read", "course_day", "--warehouse", wh, "--date", "2026-03-02", "--format", format)
		if code != 1 || !strings.Contains(stderr, "course_day (-> course_day) is a symlink") || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want 1 naming the symlink and nothing printed:\n%s", format, code, stdout, stderr)
		}
	}
}

// TestReadChangedFiles: a published file replaced by another valid one (a
// rewrite with fewer rows) read without an error, and printed part of a
// day with exit 0; one damaged in place, its size kept, failed the read
// with DuckDB's words alone. Both exit 1 naming the file, printing no row
// (review CN).
func TestReadChangedFiles(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, file string)
		says   string
	}{
		{"rewritten with fewer rows", func(t *testing.T, file string) {
			db := publishtest.DB(t)
			tmp := file + ".short"
			if _, err := db.Exec("COPY (SELECT * FROM read_parquet('" + file + "') LIMIT 3) TO '" + tmp + "' (FORMAT parquet)"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, file); err != nil {
				t.Fatal(err)
			}
		}, "bytes, the pointer recorded"},
		{"damaged in place", publishtest.DamagePages, "cannot be read (Invalid Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			if code, _, stderr := h.Run(t, nil, fx.Args(wh, "changed-1", "2026-03-02")...); code != 0 {
				t.Fatalf("publish: exit %d\n%s", code, stderr)
			}
			file := filepath.Join(wh, "staging", "job_id=changed-1", "course_day", "event_date=2026-03-02", "part-00000.parquet")
			tc.change(t, file)
			for _, format := range []string{"table", "csv"} {
				code, stdout, stderr := h.Run(t, nil, "read", "course_day", "--warehouse", wh, "--date", "2026-03-02", "--format", format)
				if code != 1 || stdout != "" || !strings.Contains(stderr, file) || !strings.Contains(stderr, tc.says) {
					t.Errorf("%s: exit %d, stdout %q; want 1 naming %s (%q) and no row:\n%s", format, code, stdout, file, tc.says, stderr)
				}
			}
		})
	}
}
