package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
)

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckJobID refuses ids that cannot safely name a staging prefix.
func CheckJobID(id string) error {
	switch {
	case id == "":
		return exitcode.UsageError(fmt.Errorf("--job-id: empty job id; pass the orchestrator's run id, e.g. 20260303T0600Z"))
	case len(id) > 128:
		return exitcode.UsageError(fmt.Errorf("--job-id: %d characters, at most 128", len(id)))
	case strings.Contains(id, ".."), strings.ContainsAny(id, `/\`):
		return exitcode.UsageError(fmt.Errorf("--job-id %q: must not contain a path separator or '..'", id))
	case !jobIDPattern.MatchString(id):
		return exitcode.UsageError(fmt.Errorf("--job-id %q: use letters, digits, '.', '_' and '-' only, beginning with a letter or digit", id))
	}
	return nil
}

// CheckPublish checks what publish needs beyond Resolve.
func (j Job) CheckPublish() error {
	if err := CheckJobID(j.JobID); err != nil {
		return err
	}
	if j.Warehouse == "" {
		return j.missing([]string{KeyWarehouse})
	}
	if err := j.checkStagingRoom(); err != nil {
		return err
	}
	// An empty date list is not refused here: the gate rejects it (check 8,
	// exit 3) with a record, as for any other publish that would show
	// readers nothing new.
	return j.checkPlaces()
}

// Staged paths run up to stagedTail bytes past staging/job_id=<id>: a
// table, a split date's part, and the engines' own names (Spark's
// _temporary/0/_temporary/attempt_…/event_date=…/part-…-<uuid>.c000.zstd.parquet
// is the longest, about 160).
const stagedTail = 200

// checkStagingRoom refuses a warehouse whose staged paths would pass the
// system's limit on a path (4,095 bytes on Linux) or an S3 key's (1,024):
// the stage failed on "file name too long" after the attempt record, exit
// 1, and every retry met it again (review CR).
func (j Job) checkStagingRoom() error {
	loc, err := storage.Parse(j.Warehouse)
	if err != nil {
		return nil // Resolve named it
	}
	base, limit, what := loc.Key, 1024, "an S3 key"
	if loc.Scheme == storage.File {
		// As the store gives it to the kernel, whose limit is on that
		// string: a relative path is not measured from / (review CU).
		// Spark is given it absolute.
		base, limit, what = filepath.Clean(loc.Path), 4095, "a path"
		if j.Engine == "spark" {
			if abs, err := filepath.Abs(base); err == nil {
				base = abs
			}
		}
	}
	if n := len(base) + len("/staging/job_id=") + len(j.JobID) + stagedTail; n > limit {
		where := ""
		if w := j.Where[KeyWarehouse]; w != "" {
			where = " (" + w + ")"
		}
		return exitcode.UsageError(fmt.Errorf("%s%s: %d bytes long, too long for the files a publish stages under it (up to %d bytes more with job id %s): %s holds at most %d; choose a shorter warehouse path",
			KeyWarehouse, where, len(base), n-len(base), j.JobID, what, limit))
	}
	return nil
}

// CheckInputs checks what any run over the inputs needs: paths, pins, dates.
func (j Job) CheckInputs() error {
	if err := j.checkPlaces(); err != nil {
		return err
	}
	if len(j.Dates) == 0 {
		return exitcode.UsageError(fmt.Errorf("--dates: empty date list"))
	}
	return nil
}

// checkPlaces checks the input paths and pins.
func (j Job) checkPlaces() error {
	var missing []string
	for _, kv := range [][2]string{
		{KeyRaw, j.Raw}, {KeyLessons, j.Lessons}, {KeyEnrollments, j.Enrollments},
		{KeyManifestID, j.ManifestID}, {KeyEnrollmentSnapshotID, j.EnrollmentSnapshotID},
	} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return j.missing(missing)
	}
	return nil
}

// missing refuses settings without a value: one given empty is named with
// where it was given (a template that rendered nothing), before any never
// given.
func (j Job) missing(keys []string) error {
	var empty, unset []string
	for _, k := range keys {
		if w := j.Where[k]; w != "" {
			empty = append(empty, k+" ("+w+")")
		} else {
			unset = append(unset, k)
		}
	}
	var parts []string
	if len(empty) > 0 {
		parts = append(parts, fmt.Sprintf("empty setting: %s: give it a value", strings.Join(empty, ", ")))
	}
	if len(unset) > 0 {
		parts = append(parts, fmt.Sprintf("missing setting: %s (set it in the config file or by flag)", strings.Join(unset, ", ")))
	}
	return exitcode.UsageError(errors.New(strings.Join(parts, "; ")))
}
