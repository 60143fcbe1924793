package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/engine"
)

// TestCLIGC runs gc on a warehouse made by real publishes: good-1 is
// published, failed-1 was rejected by the gate and left its staging.
func TestCLIGC(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	if r := biRun(t, w.publishArgs("failed-1", biGoodDates, "--unknown-cap", "0.001")...); r.code != 3 {
		t.Fatalf("failed-1: exit %d, want 3\n%s", r.code, r.stderr)
	}
	failed := filepath.Join(w.warehouse, "staging", "job_id=failed-1")
	pointerBefore := w.pointerBytes()
	inputsBefore := w.inputHashes()
	goodBefore := biHashTree(t, filepath.Join(w.warehouse, "staging", "job_id="+biGoodJob))
	keptBefore := biHashTree(t, filepath.Join(w.warehouse, "pointer-history"), filepath.Join(w.warehouse, "rejections"))

	steps := []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		errLine string
		gone    bool // failed-1 deleted after this step
	}{
		{"no --warehouse", []string{"gc"}, 2, nil, "engagement: gc: --warehouse is required", false},
		{"min-age below the floor", []string{"gc", "--warehouse", w.warehouse, "--min-age", "10m"}, 2, nil,
			"engagement: gc: --min-age 10m0s is below the floor 1h0m0s; an attempt still running could lose its staging: pass --force-min-age if every attempt has ended", false},
		{"bad duration", []string{"gc", "--warehouse", w.warehouse, "--min-age", "soon"}, 2, nil, `engagement: gc: --min-age "soon": time: invalid duration "soon"`, false},
		{"no pointer: a mistyped warehouse", []string{"gc", "--warehouse", w.dir}, 2, nil,
			"engagement: gc: " + w.dir + " has no pointer.json: refusing to collect a warehouse nothing was published to; check --warehouse", false},
		{"default min-age keeps the fresh failure", []string{"gc", "--warehouse", w.warehouse}, 0,
			[]string{"kept staging/job_id=failed-1: last activity", "younger than --min-age 24h0m0s", "kept staging/job_id=good-1: named by the current pointer (generation 1)", "deleted 0 staging prefixes"}, "", false},
		{"dry run lists and deletes nothing", []string{"gc", "--warehouse", w.warehouse, "--dry-run", "--min-age", "0s", "--force-min-age"}, 0,
			[]string{"would delete staging/job_id=failed-1 (named by no retained generation", "would delete 1 staging prefixes"}, "", false},
		{"forced short min-age deletes the failure", []string{"gc", "--warehouse", w.warehouse, "--min-age", "0s", "--force-min-age"}, 0,
			[]string{"deleted staging/job_id=failed-1 (named by no retained generation", "kept staging/job_id=good-1: named by the current pointer (generation 1)", "deleted 1 staging prefixes"}, "", true},
	}
	for _, s := range steps {
		r := biRun(t, s.args...)
		if r.code != s.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", s.name, r.code, s.code, r.stdout, r.stderr)
		}
		if s.code != 0 {
			if line := r.errLine(t); line != s.errLine {
				t.Errorf("%s: error line\n got %q\nwant %q", s.name, line, s.errLine)
			}
		}
		for _, want := range s.stdout {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: stdout lacks %q:\n%s", s.name, want, r.stdout)
			}
		}
		if _, err := os.Stat(failed); (err != nil) != s.gone {
			t.Fatalf("%s: failed-1 staging present = %v, want %v", s.name, err == nil, !s.gone)
		}
		if !bytes.Equal(w.pointerBytes(), pointerBefore) {
			t.Fatalf("%s: pointer.json changed", s.name)
		}
		biDiffTrees(t, s.name+": inputs", inputsBefore, w.inputHashes())
		biDiffTrees(t, s.name+": staging/job_id=good-1", goodBefore, biHashTree(t, filepath.Join(w.warehouse, "staging", "job_id="+biGoodJob)))
		biDiffTrees(t, s.name+": history and rejections", keptBefore, biHashTree(t, filepath.Join(w.warehouse, "pointer-history"), filepath.Join(w.warehouse, "rejections")))
	}
	// Readers still read the published dates in full.
	r := biRun(t, "read", engine.CourseDayTable, "--warehouse", w.warehouse, "--format", "csv")
	if r.code != 0 || strings.Count(r.stdout, "\n") < 3 {
		t.Errorf("read after gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// fullStdout is a stdout on a full disk: every write fails.
type fullStdout struct{}

func (fullStdout) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestStdoutFull: gc --dry-run's plan that cannot be written is exit 1
// (`gc --dry-run > plan.txt` on a full disk left an empty plan, exit 0);
// a real gc and a rollback, whose work stands, exit 0 and warn.
func TestStdoutFull(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	if r := biRun(t, w.publishArgs("second-1", biGoodDates)...); r.code != 0 {
		t.Fatalf("second publish: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"gc", "--warehouse", w.warehouse, "--dry-run"}, 1, "gc: print the plan: no space left on device"},
		{[]string{"gc", "--warehouse", w.warehouse}, 0, "gc ran, but its report could not be printed to stdout"},
		{[]string{"rollback", "--warehouse", w.warehouse, "--date", "2026-03-02", "--to-generation", "1", "--job-id", "rb-full"}, 0,
			"rolled back, but the summary could not be printed to stdout"},
	} {
		var stderr bytes.Buffer
		code := cli.Main(context.Background(), tc.args, fullStdout{}, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", tc.args, code, tc.code, tc.says, stderr.String())
		}
	}
}

// A --min-age set by its variable is refused naming the variable, as every
// other flag's value is.
func TestGCMinAgeVariableNamed(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	for _, v := range []string{"10m", "-1h"} {
		r := runEnv(t, map[string]string{"ENGAGEMENT_MIN_AGE": v}, "gc", "--warehouse", w.warehouse)
		if r.code != 2 || !strings.Contains(r.errLine(t), "ENGAGEMENT_MIN_AGE") {
			t.Errorf("ENGAGEMENT_MIN_AGE=%s: exit %d, want 2 naming the variable\n%s", v, r.code, r.stderr)
		}
	}
}
