package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gc"
	"github.com/techlearningpro/engagement/internal/storage/local"
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
	s3          s3Flags
}

func newGCCmd(env *Env) *cobra.Command {
	o := &gcOptions{}
	c := &cobra.Command{
		Use:   "gc --warehouse W [--dry-run] [--min-age 24h] [--lock-timeout 5m]",
		Short: "Delete staging prefixes that no generation names",
		Long: fmt.Sprintf(`gc deletes the staging prefixes that neither the pointer nor any history
generation names and that have been idle at least --min-age, under the pointer's
writer lock. Published files and raw inputs are never deleted. A --min-age below
%s needs --force-min-age, since an attempt still running could lose its staging.`, gc.MinAgeFloor),
		Example: `  engagement gc --warehouse warehouse --dry-run
  engagement gc --warehouse s3://curated/engagement --min-age 72h`,
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
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, o.lockTimeout)
	if err != nil {
		return err
	}
	rep, err := gc.Run(ctx, gc.Options{
		Bucket: b, Store: store, Now: time.Now(),
		MinAge: o.minAge, Force: o.force, DryRun: o.dryRun,
	})
	verb := "deleted"
	if o.dryRun {
		verb = "would delete"
	}
	var n int
	var bytes int64
	for _, v := range rep.Verdicts {
		if v.Delete {
			n++
			bytes += v.Bytes
			fmt.Fprintf(env.Stdout, "%s %s (%s)\n", verb, v.Path, v.Reason)
		} else {
			fmt.Fprintf(env.Stdout, "kept %s: %s\n", v.Path, v.Reason)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "gc: pointer generation %d; %s %d staging prefixes (%d bytes), kept %d\n",
		rep.Generation, verb, n, bytes, len(rep.Verdicts)-n)
	return nil
}
