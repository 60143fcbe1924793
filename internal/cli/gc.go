package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gc"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/version"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// gcOptions are gc's flags. A new flag is a field here and one line in
// newGCCmd.
type gcOptions struct {
	origin
	warehouse   string
	dryRun      bool
	minAge      time.Duration
	force       bool
	lockTimeout time.Duration
	retainGens  int
	retainDays  float64
	s3          s3Flags
}

func newGCCmd(env *Env) *cobra.Command {
	o := &gcOptions{}
	c := &cobra.Command{
		Use:   "gc --warehouse W [--retain-generations N] [--retain-days D] [--dry-run] [--min-age 24h]",
		Short: "Expire old generations; delete staging and records nothing retained names",
		Long: fmt.Sprintf(`gc deletes the staging prefixes that neither the pointer nor any retained history
generation names and that have been idle at least --min-age, under the pointer's
writer lock. With --retain-generations and/or --retain-days it first expires older
history generations (never the current one; a generation either flag keeps stays),
then also deletes rejection and rollback records idle at least --min-age. Published
files of retained generations and raw inputs are never deleted. --dry-run lists every
object with its reason. A --min-age below %s needs --force-min-age, since an attempt
still running could lose its staging.`, gc.MinAgeFloor),
		Example: `  engagement gc --warehouse warehouse --retain-generations 30 --dry-run
  engagement gc --warehouse s3://curated/engagement --retain-days 90 --min-age 72h`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runGC(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	fs.DurationVar(&o.minAge, "min-age", gc.DefaultMinAge, "delete only prefixes idle at least this long")
	fs.BoolVar(&o.force, "force-min-age", false, fmt.Sprintf("accept a --min-age below %s (only when no attempt is running)", gc.MinAgeFloor))
	fs.DurationVar(&o.lockTimeout, "lock-timeout", local.DefaultLockTimeout, "longest wait for the pointer's writer lock before giving up")
	decimalVar(fs, &o.retainGens, "retain-generations", 0, "expire history generations beyond the N newest (0: keep all)")
	fs.Float64Var(&o.retainDays, "retain-days", 0, "expire history generations replaced more than D days ago (0: keep all)")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runGC(ctx context.Context, env Env, o *gcOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("gc: --warehouse is required"))
	}
	if o.lockTimeout <= 0 {
		return exitcode.UsageError(fmt.Errorf("gc: %s %s: want a positive duration", o.ref("lock-timeout"), o.lockTimeout))
	}
	if o.retainGens < 0 {
		return exitcode.UsageError(fmt.Errorf("gc: %s %d: want 0 (keep all) or more", o.ref("retain-generations"), o.retainGens))
	}
	if !(o.retainDays >= 0 && o.retainDays < 1e5) {
		return exitcode.UsageError(fmt.Errorf("gc: %s %v: want 0 (keep all) or a number of days below 100000", o.ref("retain-days"), o.retainDays))
	}
	// gc.Run refuses the same, naming the flag; here the variable that
	// set it is named when one did (ENGAGEMENT_MIN_AGE).
	if err := gc.CheckMinAge(o.minAge, o.force); err != nil {
		return o.wrap("min-age", err)
	}
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, o.lockTimeout)
	if err != nil {
		return err
	}
	rep, err := gc.Run(ctx, gc.Options{
		Bucket: b, Store: store, Now: time.Now(),
		MinAge: o.minAge, Force: o.force, DryRun: o.dryRun,
		RetainGenerations: o.retainGens, RetainFor: time.Duration(o.retainDays * float64(24*time.Hour)),
		WriterVersion: version.String(),
	})
	// The lines are the plan (a dry run) or the record of what was
	// deleted: a stdout that takes none of them must not pass in silence.
	out := &firstErrWriter{w: env.Stdout}
	verb := "deleted"
	if o.dryRun {
		verb = "would delete"
	}
	var prefixes, records, kept int
	var bytes int64
	for _, v := range rep.Verdicts {
		if !v.Delete {
			kept++
			fmt.Fprintf(out, "kept %s: %s\n", v.Path, v.Reason)
			continue
		}
		if !o.dryRun && v.Marked {
			fmt.Fprintf(out, "partly deleted %s (%s): gc stopped while deleting it; its marker is left, and the next gc finishes it\n", v.Path, v.Reason)
			continue
		}
		if !o.dryRun && !v.Done {
			// The run failed before it reached this one.
			fmt.Fprintf(out, "not deleted %s (%s): gc stopped first\n", v.Path, v.Reason)
			continue
		}
		fmt.Fprintf(out, "%s %s (%s)\n", verb, v.Path, v.Reason)
		switch {
		case strings.HasPrefix(v.Path, "pointer-history/"), strings.Contains(v.Path, "/.gc-deleting-"):
		case strings.HasPrefix(v.Path, warehouse.StagingRoot+"/"):
			prefixes++
			bytes += v.Bytes
			if o.dryRun {
				for _, obj := range v.Objects {
					fmt.Fprintf(out, "  %s %s (in %s)\n", verb, obj, v.Path)
				}
			}
		default:
			records++
		}
	}
	if err != nil {
		return printed(env, out, o.dryRun, err)
	}
	expired := "expired"
	if o.dryRun {
		expired = "would expire"
	}
	fmt.Fprintf(out, "gc: pointer generation %d; %s %d history generations; %s %d staging prefixes (%d bytes) and %d records; kept %d\n",
		rep.Generation, expired, len(rep.Expired), verb, prefixes, bytes, records, kept)
	return printed(env, out, o.dryRun, nil)
}

// printed is gc's outcome once its lines are written: a dry run whose
// plan did not reach stdout failed (exit 1: `gc --dry-run > plan.txt` on
// a full disk left an empty plan, exit 0); a real run's deletions stand,
// so its lost lines are a warning beside its own outcome.
func printed(env Env, out *firstErrWriter, dryRun bool, err error) error {
	if out.err == nil || readerGone(out.err) {
		return err
	}
	if dryRun && err == nil {
		return fmt.Errorf("gc: print the plan: %w", out.err)
	}
	env.Log.Warn("gc ran, but its report could not be printed to stdout", "error", out.err.Error())
	return err
}

// firstErrWriter writes to w until a write fails and keeps that error.
type firstErrWriter struct {
	w   io.Writer
	err error
}

func (f *firstErrWriter) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	f.err = err
	return n, err
}
