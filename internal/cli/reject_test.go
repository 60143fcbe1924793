package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// TestRejectionTable publishes the over-cap fixture through cli.Main: exit
// 3, and stdout names each failed check (the cap, on both dates) with its
// figures and limit, then each date's top unknown lessons. The expected
// figures are the generator's (expected.json); the cap is the config's.
func TestRejectionTable(t *testing.T) {
	fx := publishtest.LoadFixture(t, "over-cap")
	wh := filepath.Join(t.TempDir(), "wh")
	ds := []string{"2026-03-02", "2026-03-03"}
	capValue := fx.Job(t, wh, "x", ds...).UnknownCap
	var stdout, stderr bytes.Buffer
	before := time.Now().UTC().Truncate(time.Second)
	code := cli.Main(context.Background(), fx.Args(wh, "cap-cli", ds...), &stdout, &stderr)
	after := time.Now().UTC()
	if code != exitcode.GateRejected {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.GateRejected, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "rejected job_id=cap-cli: 2 failed checks\n") {
		t.Errorf("stdout does not start with the rejection header:\n%s", out)
	}
	// The check rows run from the CHECK header to the first blank line.
	var checkRows []string
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if strings.Join(strings.Fields(line), " ") != "CHECK DATE FIGURES" {
			continue
		}
		for _, row := range lines[i+1:] {
			if row == "" {
				break
			}
			checkRows = append(checkRows, row)
		}
		break
	}
	if len(checkRows) != len(ds) {
		t.Errorf("%d check rows, want %d (the cap on each date):\n%s", len(checkRows), len(ds), out)
	}
	for i, d := range ds {
		f := fx.Expected.ByDate[dates.MustParse(d)]
		if i >= len(checkRows) {
			break
		}
		row := checkRows[i]
		for _, want := range []string{gate.CheckUnknownLessonCap + " ", " " + d + " ",
			fmt.Sprintf("rate %.4f", gate.Rate(f.Unknown, f.Events)), fmt.Sprintf("(%d of %d events)", f.Unknown, f.Events), fmt.Sprintf("cap %.4f", capValue)} {
			if !strings.Contains(row, want) {
				t.Errorf("%s row %q lacks %q", d, row, want)
			}
		}
		section := fmt.Sprintf("top unknown lessons on %s (1, by events):\n  LESSON_ID", d)
		j := strings.Index(out, section)
		if j < 0 {
			t.Errorf("stdout lacks %q:\n%s", section, out)
			continue
		}
		lines := strings.Split(out[j:], "\n")
		if len(lines) < 3 || strings.Join(strings.Fields(lines[2]), " ") != fmt.Sprintf("%s %d", fx.Expected.UnknownLessonID, f.Unknown) {
			t.Errorf("%s: top unknown lessons %q, want %s %d", d, lines, fx.Expected.UnknownLessonID, f.Unknown)
		}
	}
	if !strings.Contains(stderr.String(), "gate rejected job cap-cli") {
		t.Errorf("stderr lacks the one-line reason:\n%s", stderr.String())
	}

	b, err := os.ReadFile(filepath.Join(wh, filepath.FromSlash(warehouse.RejectionPath("cap-cli"))))
	if err != nil {
		t.Fatal(err)
	}
	var rej job.Rejection
	if err := json.Unmarshal(b, &rej); err != nil {
		t.Fatal(err)
	}
	if rej.RejectedAt.Before(before) || rej.RejectedAt.After(after) {
		t.Errorf("rejected_at %v outside the run [%v, %v]", rej.RejectedAt, before, after)
	}
	if rej.ManifestID != fx.Expected.ManifestID || rej.EnrollmentSnapshotID != fx.Expected.EnrollmentSnapshotID {
		t.Errorf("pins %q, %q; want %q, %q", rej.ManifestID, rej.EnrollmentSnapshotID, fx.Expected.ManifestID, fx.Expected.EnrollmentSnapshotID)
	}
	for _, d := range ds {
		got, want := rej.TopUnknownLessons[d], fx.Expected.ByDate[dates.MustParse(d)].Unknown
		if len(got) != 1 || got[0].Lesson() != fx.Expected.UnknownLessonID || got[0].EventCount != want {
			t.Errorf("%s: record's top unknown lessons %+v, want %s %d", d, got, fx.Expected.UnknownLessonID, want)
		}
	}
}

// TestStrayObjectInWarehouse: an object where the warehouse needs a
// prefix, on disk and on S3 alike. A file named rejections fails only the
// gate's record: the run is still a rejection, exit 3, saying the record
// could not be written, since a retry meets the same data. A file named
// staging fails the attempt's first write: exit 2, naming it. Each was
// exit 1 on disk and exit 2 on S3. Nothing is published.
func TestStrayObjectInWarehouse(t *testing.T) {
	for _, tc := range []struct {
		stray, fixture string
		code           int
		says           string
	}{
		{"rejections", "over-cap", exitcode.GateRejected, "its record " + warehouse.RejectionPath("stray-1") + " could not be written"},
		{"staging", "", exitcode.Usage, "staging"},
	} {
		for _, backend := range []publishtest.Backend{publishtest.Local, publishtest.S3} {
			t.Run(tc.stray+"/"+backend.Name, func(t *testing.T) {
				fx := publishtest.LoadFixture(t, tc.fixture)
				wh := backend.Root(t)
				if _, err := publishtest.Bucket(t, wh).Put(t.Context(), tc.stray, []byte("stray"), storage.Cond{}); err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				code := cli.Main(context.Background(), fx.Args(wh, "stray-1", "2026-03-02"), &stdout, &stderr)
				if code != tc.code {
					t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
				}
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				if last := lines[len(lines)-1]; !strings.Contains(last, tc.says) {
					t.Errorf("error line lacks %q:\n%s", tc.says, last)
				}
				if publishtest.Get(t, wh, "pointer.json") != nil {
					t.Errorf("a pointer was written")
				}
			})
		}
	}
}
