package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

func TestTargetFiles(t *testing.T) {
	const mb = 1024 * 1024
	const gib = 1024 * 1024 * 1024
	tests := []struct {
		name          string
		bytes, target int64
		want          int
	}{
		// 20 GiB / 192 MiB = 20480/192 = 106.67, rounded up.
		{"20 GiB at 192MB", 20 * gib, 192 * mb, 107},
		{"zero bytes", 0, 192 * mb, 1},
		{"negative bytes", -5, 192 * mb, 1},
		{"most negative", -1 << 62, 192 * mb, 1},
		{"one byte", 1, 192 * mb, 1},
		{"exactly 192MB", 192 * mb, 192 * mb, 1},
		{"192MB plus one byte", 192*mb + 1, 192 * mb, 2},
		{"exactly two files", 2 * 192 * mb, 192 * mb, 2},
		{"two files plus one byte", 2*192*mb + 1, 192 * mb, 3},
		{"60M-event day, 12 GiB", 12 * gib, 192 * mb, 64},
		// A non-positive target falls back to the 192 MB default.
		{"zero target uses default", 192*mb + 1, 0, 2},
		{"negative target uses default", 20 * gib, -1, 107},
		{"128MB target", 256 * mb, 128 * mb, 2},
		// Never fewer than one, even at the extremes of int64:
		// (2^63-1) / (3*2^26) = 45812984490.67, rounded up.
		{"max int64 bytes", math.MaxInt64, 192 * mb, 45812984491},
		// engagement.targetFileBytes accepts up to 8589934591GB; two bytes
		// at a huge target are one file.
		{"huge target", 2, math.MaxInt64, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TargetFiles(tc.bytes, tc.target); got != tc.want {
				t.Errorf("TargetFiles(%d, %d) = %d, want %d", tc.bytes, tc.target, got, tc.want)
			}
		})
	}
}

func TestDefaultTargetFileBytes(t *testing.T) {
	if DefaultTargetFileBytes != 201326592 {
		t.Errorf("DefaultTargetFileBytes = %d, want 192*1024*1024 = 201326592", DefaultTargetFileBytes)
	}
	if DefaultTargetFileBytes < 128<<20 || DefaultTargetFileBytes > 256<<20 {
		t.Errorf("DefaultTargetFileBytes %d outside the 128-256 MB band", DefaultTargetFileBytes)
	}
}

func TestPublishedColumns(t *testing.T) {
	want := []string{"course_id", "event_count", "matched_lesson_count", "unknown_lesson_count",
		"enrolled_event_count", "learner_count", "job_id", "event_date"}
	if len(CourseDayColumns) != len(want) {
		t.Fatalf("CourseDayColumns = %v, want %v", CourseDayColumns, want)
	}
	for i := range want {
		if CourseDayColumns[i] != want[i] {
			t.Errorf("CourseDayColumns[%d] = %q, want %q", i, CourseDayColumns[i], want[i])
		}
	}
	for _, cols := range [][]string{FactColumns, CourseDayColumns} {
		if cols[len(cols)-1] != "event_date" {
			t.Errorf("%v: event_date must be last (it lives in the partition path)", cols)
		}
		for _, c := range cols {
			if c == "_salt" || c == "salt" {
				t.Errorf("%v holds a helper column %q", cols, c)
			}
		}
	}
}

func TestPlannedFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table string
		f     DateFigures
		want  int
	}{
		// (width + 25 per row) / 3 against a 1000-byte target.
		{"no rows is one file", FactTable, DateFigures{}, 1},
		{"at the target stays one file", FactTable, DateFigures{FactRows: 40, FactWidth: 2000}, 1},                   // (2000+1000)/3 = 1000
		{"just over the target splits in two", FactTable, DateFigures{FactRows: 40, FactWidth: 2003}, 2},             // 1001
		{"the count follows the bytes", FactTable, DateFigures{FactRows: 100, FactWidth: 9500}, 4},                   // 4000
		{"course_day sizes by courses", CourseDayTable, DateFigures{FactRows: 1e6, FactWidth: 1e8, Courses: 125}, 2}, // 48*125/3 = 2000
		{"few courses stay one file", CourseDayTable, DateFigures{FactRows: 1e6, FactWidth: 1e8, Courses: 60}, 1},
	} {
		if got := PlannedFiles(tc.table, tc.f, 1000); got != tc.want {
			t.Errorf("%s: PlannedFiles = %d, want %d", tc.name, got, tc.want)
		}
	}
	// A target of a few bytes (a typo) plans no more files than rows, and at
	// most MaxFilesPerDate: each file is a write, and DuckDB's a COPY.
	for _, tc := range []struct {
		name  string
		table string
		f     DateFigures
		want  int
	}{
		{"no more files than fact rows", FactTable, DateFigures{FactRows: 45, FactWidth: 1e4}, 45},
		{"no more files than courses", CourseDayTable, DateFigures{FactRows: 1e4, FactWidth: 1e6, Courses: 8}, 8},
		{"at most MaxFilesPerDate", FactTable, DateFigures{FactRows: 8e6, FactWidth: 4e8}, MaxFilesPerDate},
	} {
		if got := PlannedFiles(tc.table, tc.f, 1); got != tc.want {
			t.Errorf("%s: PlannedFiles at a 1-byte target = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestStageWantsInspectedCounts: a spec without Inspect's input counts is
// refused before anything runs, so no stage publishes unaudited.
func TestStageWantsInspectedCounts(t *testing.T) {
	if _, err := RunStage(context.Background(), nil, Spec{JobID: "j"}, nil, "staging/job_id=j", nil); !errors.Is(err, ErrNotInspected) {
		t.Fatalf("RunStage without InputEvents: %v, want ErrNotInspected", err)
	}
}

// TestNoPinErrorTellsPinsApart: a present pin that differs from the one
// asked only by a trailing space or by Unicode normalization reads apart
// from it; an input with no pins at all says so.
func TestNoPinErrorTellsPinsApart(t *testing.T) {
	for _, tc := range []struct {
		pin     string
		present []string
		want    string
	}{
		{"dim-été", []string{"dim-e\u0301te\u0301"}, `--manifest-id "dim-\u00e9t\u00e9": no rows with manifest_id = "dim-\u00e9t\u00e9" in L (present: "dim-e\u0301te\u0301")`},
		{"dim-1", []string{"dim-1 "}, `(present: "dim-1 ")`},
		{"dim-1", nil, `(present: none: the input holds no row with a manifest_id)`},
	} {
		err := NoPinError("--manifest-id", tc.pin, "manifest_id", "L", tc.present)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("pin %q, present %q: %v (exit %d), want exit 2 with %s", tc.pin, tc.present, err, exitcode.Code(err), tc.want)
		}
	}
}

// TestNullTimeSample: the engines' rows of the null-time sample read back
// as the refusal names them: the id quoted as a key (a quote, a space and
// an empty id stay visible), or "no event_id", with its partition.
func TestNullTimeSample(t *testing.T) {
	got := NullTimeSample([]string{"2026-03-02 -", "2026-03-02 +", "2026-03-02 +ev \"1\"", "2026-03-03 +é"})
	want := []string{
		"no event_id in ingest_date=2026-03-02",
		`event_id "" in ingest_date=2026-03-02`,
		`event_id "ev \"1\"" in ingest_date=2026-03-02`,
		`event_id "\u00e9" in ingest_date=2026-03-03`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("NullTimeSample = %q, want %q", got, want)
	}
}
