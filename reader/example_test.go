package reader_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/reader"
)

// warehouse is published once from testdata/fixture by TestMain, for the
// example (which cannot take a *testing.T) and the tests.
var warehouse string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reader-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	warehouse = filepath.Join(dir, "warehouse")
	code := publish(warehouse, "fixture-001")
	if code == 0 {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// publish runs engagement publish on the committed fixture (read only).
func publish(wh, jobID string) int {
	fx := filepath.Join(publishtest.Root(), "testdata", "fixture")
	args := []string{"publish", "--config", filepath.Join(publishtest.Root(), "config", "fixture.conf"),
		"--raw", filepath.Join(fx, "raw"), "--lessons", filepath.Join(fx, "lessons"),
		"--enrollments", filepath.Join(fx, "enrollments"), "--warehouse", wh,
		"--job-id", jobID, "--dates", "2026-03-02,2026-03-03"}
	var errb strings.Builder
	code := cli.Main(context.Background(), args, io.Discard, &errb)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "publish %s: exit %d\n%s", wh, code, errb.String())
	}
	return code
}

// The figures below are the fixture generator's ground truth
// (testdata/fixture/expected.json), not the job's own output.
func Example() {
	ctx := context.Background()
	w, err := reader.Open(ctx, warehouse) // a directory or s3://bucket/prefix
	if err != nil {
		fmt.Println(err)
		return
	}
	snap, err := w.Current(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	ds, err := snap.Range("2026-03-01", "2026-03-31")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range ds {
		fmt.Printf("%s job=%s manifest=%s enrollments=%s events=%d unknown=%d rate=%.4f generation=%d\n",
			d.Date, d.JobID, d.ManifestID, d.EnrollmentSnapshotID, d.EventCount, d.UnknownLessonCount, d.UnknownLessonRate, d.Generation)
	}
	if _, err := snap.Date("2026-03-05"); errors.Is(err, reader.ErrNotPublished) {
		fmt.Println("2026-03-05 not published")
	}
	// Output:
	// 2026-03-02 job=fixture-001 manifest=dim-2026-03-04 enrollments=enr-2026-03-04 events=973 unknown=10 rate=0.0103 generation=1
	// 2026-03-03 job=fixture-001 manifest=dim-2026-03-04 enrollments=enr-2026-03-04 events=974 unknown=10 rate=0.0103 generation=1
	// 2026-03-05 not published
}
