package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// statusOptions are status's flags.
type statusOptions struct {
	origin
	warehouse, format, date string
	s3                      s3Flags
}

func newStatusCmd(env *Env) *cobra.Command {
	o := &statusOptions{}
	c := &cobra.Command{
		Use:   "status --warehouse W [--date D] [--format table|json]",
		Short: "Show what readers see now, per published date",
		Long: `status loads the warehouse's pointer and prints, per published date, the job that
published it, its pins and its figures. With --date it prints that date alone and
exits 5 when the date is not published, so a scheduler's sensor can wait on it.
A warehouse with no pointer.json is refused (exit 2), never shown as empty; but with
--date, one whose first publish has written its attempt is "not published yet" (exit 5),
and one whose pointer.json was lost (its history is there) is exit 1.`,
		Example: `  engagement status --warehouse warehouse
  engagement status --warehouse s3://curated/engagement --date 2026-03-02 --format json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runStatus(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.date, "date", "", "only this event date; exit 5 when it is not published")
	fs.StringVar(&o.format, "format", "table", "table or json")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runStatus(ctx context.Context, env Env, o *statusOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("status: --warehouse is required"))
	}
	if o.format != "table" && o.format != "json" {
		return exitcode.UsageError(fmt.Errorf("status: %s %q: want table or json", o.ref("format"), o.format))
	}
	d, err := o.origin.date("", "date", o.date)
	if err != nil {
		return err
	}
	var only string
	if d != nil {
		only = d.String()
	}
	wh, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	p, err := loadPublished(ctx, "status", o.ref("warehouse"), o.warehouse, store)
	if err != nil {
		return notYet(err, only)
	}
	warnEdited(ctx, env, wh, store, p)
	rows := reader.Status(p)
	if only != "" {
		var one []reader.DateStatus
		for _, r := range rows {
			if r.Date == only {
				one = append(one, r)
			}
		}
		if len(one) == 0 {
			return exitcode.NotPublishedError(fmt.Errorf("status: %s is not published in %s (generation %d)", only, o.warehouse, p.Generation))
		}
		// What a sensor waits on: that readers can read the date, so its
		// files are there as the pointer recorded them (a stat and a footer each).
		c, bad, err := firstChanged(ctx, wh, p, d, "")
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if bad {
			return fmt.Errorf("status: %s in %s (generation %d): its file %s %s: readers of the date fail or see other rows than were published; republish it with a new job id",
				only, o.warehouse, p.Generation, c.where, c.why)
		}
		rows = one
	}
	if o.format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"generation": p.Generation, "updated_by_job_id": p.UpdatedByJobID, "dates": rows})
	}
	fmt.Fprintf(env.Stdout, "generation %d, updated by %s\n", p.Generation, p.UpdatedByJobID)
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "date\tjob_id\tmanifest_id\tenrollment_snapshot_id\tevent_count\tunknown_lesson_count\tunknown_lesson_rate\tfact_files\tfact_rows")
	for _, r := range rows {
		// Pins as the gate shows keys: a bidi override or a tab in one
		// reversed or broke the row (JSON has them exact).
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t%d\t%d\n", r.Date, r.JobID, gate.ShownKey(r.ManifestID), gate.ShownKey(r.EnrollmentSnapshotID),
			r.EventCount, r.UnknownLessonCount, r.UnknownLessonRate, r.FactFiles, r.FactRows)
	}
	return tw.Flush()
}

// warnEdited warns when pointer.json is not the history copy written with
// it (edited in place, or its copy removed): its figures may then not be
// the files' that readers read, and the next publish or rollback refuses
// to build on it. What it names is still what readers follow, so the
// command goes on.
func warnEdited(ctx context.Context, env Env, wh storage.Bucket, store pointer.Store, p pointer.Pointer) {
	err := pointer.OwnCopy(ctx, store, p, warehouse.Witness(wh))
	switch {
	case err == nil:
	case !errors.Is(err, pointer.ErrBrokenChain):
		// An unreadable copy (permissions, the store's error) says nothing
		// of an edit.
		env.Log.Warn("could not check pointer.json against its history copy", "error", err.Error())
	default:
		env.Log.Warn("pointer.json and the history copy written with it differ: one was edited by hand, so pointer.json's figures may not be the files' readers read, and the next publish or rollback will refuse to run until it is put right (docs/runbook.md)",
			"error", err.Error())
	}
}
