package cli

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// FuzzJobArgs: parsing and checking publish arguments never panics; every
// refusal is a usage error (exit 2) with a message; whatever is accepted is
// a job the rest of the program may rely on. The input is the argument
// list, one argument per line. Seeds live in testdata/fuzz/FuzzJobArgs.
func FuzzJobArgs(f *testing.F) {
	f.Add("--job-id\nj-1\n--dates\n2026-03-02,2026-03-03\n--warehouse\nw\n--raw\nr\n--lessons\nl\n--enrollments\ne\n--manifest-id\nm\n--enrollment-snapshot-id\ns")
	// No environment: the fuzzed arguments alone decide.
	noEnv := func(string) (string, bool) { return "", false }
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Lookup: noEnv}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(in, "\n")
		for _, a := range args {
			// The config file is the one thing parseJob reads; fuzzing
			// which file it opens would only fuzz the machine.
			if strings.Contains(a, "config") {
				return
			}
		}
		j, err := parseJob(env, "publish", args, config.Job.CheckPublish)
		if err != nil {
			if errors.Is(err, pflag.ErrHelp) {
				return
			}
			if exitcode.Code(err) != exitcode.Usage || strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("refusal %q: exit %d, want a usage error with a message", err, exitcode.Code(err))
			}
			return
		}
		if err := config.CheckJobID(j.JobID); err != nil {
			t.Fatalf("accepted job id %q: %v", j.JobID, err)
		}
		// An empty list passes: only when --dates was given blank, for the
		// gate to reject (check 8).
		if len(j.Dates) == 0 && !blankDates(args) {
			t.Fatalf("accepted no dates from %q", args)
		}
		if !slices.IsSorted(j.Dates) || len(slices.Compact(slices.Clone(j.Dates))) != len(j.Dates) {
			t.Fatalf("accepted dates %v: want sorted, unique", j.Dates)
		}
		if math.IsNaN(j.UnknownCap) || j.UnknownCap < 0 || j.UnknownCap > 1 {
			t.Fatalf("accepted unknown cap %v", j.UnknownCap)
		}
		for _, v := range []string{j.Warehouse, j.Raw, j.Lessons, j.Enrollments, j.ManifestID, j.EnrollmentSnapshotID} {
			if v == "" {
				t.Fatalf("accepted a job with an empty setting: %+v", j)
			}
		}
	})
}

// blankDates reports whether the last --dates in args was given blank.
func blankDates(args []string) bool {
	blank := false
	for i, a := range args {
		switch {
		case a == "--dates" && i+1 < len(args):
			blank = strings.TrimSpace(args[i+1]) == ""
		case strings.HasPrefix(a, "--dates="):
			blank = strings.TrimSpace(strings.TrimPrefix(a, "--dates=")) == ""
		}
	}
	return blank
}
