package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// historyOptions are history's flags.
type historyOptions struct {
	origin
	warehouse, date, format string
	s3                      s3Flags
}

func newHistoryCmd(env *Env) *cobra.Command {
	o := &historyOptions{}
	c := &cobra.Command{
		Use:   "history --warehouse W [--date D] [--format table|json]",
		Short: "Show which retained generation changed each date, and how",
		Long: `history lists, newest first, every retained pointer generation that changed a date
(or --date only): when it was written, how (publish, or rollback to a generation), the
job, the pins, the event count, the unknown-lesson rate, and the files and bytes of
both tables. Generations expired by gc --retain-* are gone; their expiry records are
listed below the table. A warehouse with no pointer.json is refused (exit 2).`,
		Example: `  engagement history --warehouse warehouse --date 2026-03-02
  engagement history --warehouse s3://curated/engagement --format json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runHistory(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.date, "date", "", "only the generations that changed this event date")
	fs.StringVar(&o.format, "format", "table", "table or json")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runHistory(ctx context.Context, env Env, o *historyOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("history: --warehouse is required"))
	}
	if o.format != "table" && o.format != "json" {
		return exitcode.UsageError(fmt.Errorf("history: %s %q: want table or json", o.ref("format"), o.format))
	}
	only, err := o.origin.date("history: ", "date", o.date)
	if err != nil {
		return err
	}
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	if _, err := loadPublished(ctx, "history", o.ref("warehouse"), o.warehouse, store); err != nil {
		return err
	}
	log, err := history.List(ctx, store, b, only)
	if err != nil {
		return err
	}
	if o.format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(log)
	}
	return writeHistory(env, log, only)
}

func writeHistory(env Env, log history.Log, only *dates.Date) error {
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "generation\twritten_at\toperation\tupdated_by\tdate\tjob_id\tmanifest_id\tenrollment_snapshot_id\tevent_count\tunknown_lesson_rate\tfiles\tbytes")
	for _, c := range log.Changes {
		// Every label that holds: after gc --retain-generations 1 the
		// current generation is the oldest too, and "oldest" is why it
		// lists every date, not only those it changed.
		var labels []string
		for _, l := range []struct {
			on   bool
			text string
		}{{c.Current, "current"}, {c.Oldest, "oldest"}, {c.AfterGap, "after a gap"}} {
			if l.on {
				labels = append(labels, l.text)
			}
		}
		gen := fmt.Sprint(c.Generation)
		if len(labels) > 0 {
			gen += " (" + strings.Join(labels, ", ") + ")"
		}
		op := c.Operation
		switch {
		case op == "":
			op = "publish (format 1)"
		case op == pointer.OpRollback:
			op = fmt.Sprintf("rollback to %d", c.SourceGeneration)
		}
		written := "-"
		if !c.WrittenAt.IsZero() {
			written = c.WrittenAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.4f\t%d\t%d\n", gen, written, op, c.UpdatedByJobID, c.Date,
			c.JobID, gate.ShownKey(c.ManifestID), gate.ShownKey(c.EnrollmentSnapshotID), c.EventCount, c.UnknownLessonRate, c.Files, c.Bytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(log.Changes) == 0 && only != nil {
		fmt.Fprintf(env.Stdout, "no retained generation changed %s\n", *only)
	}
	for _, e := range log.Expiries {
		fmt.Fprintln(env.Stdout, "expiry: "+e.Summary())
	}
	for _, w := range log.Warnings() {
		fmt.Fprintln(env.Stdout, "warning: "+w)
	}
	return nil
}
