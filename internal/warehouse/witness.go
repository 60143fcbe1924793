package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Witness tells, for pointer.OwnCopy, whether a date's entry agrees with
// what its job staged in b: its gate report is its job's, passed (and no
// rejection record names the job), and holds the date's counts and rows;
// its pins are those of the job's attempt record; and every file it names
// is its job's file of the date, there with the size and rows it lists.
// When pointer.json and its history copy differ in a figure or a file
// list, that is the only way to tell which of the two was edited: both
// still name the same parent.
func Witness(b storage.Bucket) pointer.Witness {
	return func(ctx context.Context, d dates.Date, e pointer.DateEntry) (string, error) {
		if e.GateReport != GatePath(e.JobID) {
			return fmt.Sprintf("its gate_report %s is not job %s's", e.GateReport, e.JobID), nil
		}
		data, _, err := b.Get(ctx, e.GateReport)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", e.GateReport, err)
		}
		var r gate.Report
		if err := json.Unmarshal(data, &r); err != nil {
			return "", fmt.Errorf("read %s: %w", e.GateReport, err)
		}
		// A rejected job's entry, figures, files and all, agrees with
		// what it staged: only the verdict tells (review CT).
		if !r.Passed {
			return fmt.Sprintf("its gate report %s says the gate rejected job %s", e.GateReport, e.JobID), nil
		}
		if _, err := b.Stat(ctx, RejectionPath(e.JobID)); err == nil {
			return fmt.Sprintf("job %s was rejected (%s)", e.JobID, RejectionPath(e.JobID)), nil
		} else if !storage.IsNotExist(err) {
			return "", fmt.Errorf("check %s: %w", RejectionPath(e.JobID), err)
		}
		found := 0
		for _, c := range r.Checks {
			if c.Date != d.String() {
				continue
			}
			switch c.Name {
			case gate.CheckUnknownLessonCap:
				found++
				events, _ := c.Figures["event_count"].(float64)
				unknown, _ := c.Figures["unknown_lesson_count"].(float64)
				rate, _ := c.Figures["rate"].(float64)
				switch {
				case float64(e.EventCount) != events:
					return fmt.Sprintf("event_count %d, its gate report %.0f", e.EventCount, events), nil
				case float64(e.UnknownLessonCount) != unknown:
					return fmt.Sprintf("unknown_lesson_count %d, its gate report %.0f", e.UnknownLessonCount, unknown), nil
				case math.Abs(e.UnknownLessonRate-rate) > 1e-9:
					return fmt.Sprintf("unknown_lesson_rate %g, its gate report %g", e.UnknownLessonRate, rate), nil
				}
			case gate.CheckDatesStaged:
				// The rows the gate read back, per table: a file dropped from
				// the list, or a row count edited, leaves every listed file
				// present with its size.
				found++
				for _, t := range []struct {
					name  string
					files []pointer.File
					key   string
				}{{"fact_files", e.FactFiles, "fact_rows"}, {"course_day_files", e.CourseDayFiles, "course_day_rows"}} {
					var rows int64
					for _, f := range t.files {
						rows += f.Rows
					}
					if want, _ := c.Figures[t.key].(float64); float64(rows) != want {
						return fmt.Sprintf("%s hold %d rows, its gate report %.0f", t.name, rows, want), nil
					}
				}
			}
		}
		if found != 2 {
			return "", fmt.Errorf("%s holds no %s and %s checks of %s", e.GateReport, gate.CheckUnknownLessonCap, gate.CheckDatesStaged, d)
		}
		// The pins the job was asked to publish with, from its attempt
		// record (written before it staged).
		data, _, err = b.Get(ctx, AttemptPath(e.JobID))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", AttemptPath(e.JobID), err)
		}
		var att struct {
			ManifestID           string `json:"manifest_id"`
			EnrollmentSnapshotID string `json:"enrollment_snapshot_id"`
		}
		if err := json.Unmarshal(data, &att); err != nil {
			return "", fmt.Errorf("read %s: %w", AttemptPath(e.JobID), err)
		}
		switch {
		case e.ManifestID != att.ManifestID:
			return fmt.Sprintf("manifest_id %q, its attempt record %q", e.ManifestID, att.ManifestID), nil
		case e.EnrollmentSnapshotID != att.EnrollmentSnapshotID:
			return fmt.Sprintf("enrollment_snapshot_id %q, its attempt record %q", e.EnrollmentSnapshotID, att.EnrollmentSnapshotID), nil
		}
		for _, t := range []struct {
			name  string
			files []pointer.File
		}{{engine.FactTable, e.FactFiles}, {engine.CourseDayTable, e.CourseDayFiles}} {
			// Its own job's files of the date: a path edited to another
			// date's or another job's file keeps a size that matches.
			for _, f := range t.files {
				if !strings.HasPrefix(f.Path, StagingDir(e.JobID)+"/"+t.name+"/") || !strings.Contains(f.Path, "/event_date="+d.String()+"/") {
					return fmt.Sprintf("%s is not a %s file of %s staged by job %s", f.Path, t.name, d, e.JobID), nil
				}
			}
		}
		// There as listed: size, and the rows in its footer.
		bad, err := CheckFiles(ctx, b, slices.Concat(e.FactFiles, e.CourseDayFiles))
		if err != nil {
			return "", err
		}
		if len(bad) > 0 {
			return bad[0].File.Path + " " + bad[0].Why(), nil
		}
		return "", nil
	}
}
