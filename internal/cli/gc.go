package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gc"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

func runGC(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "gc")
	wh := fs.String("warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	dryRun := fs.Bool("dry-run", false, "list what would be deleted; delete nothing")
	minAge := fs.Duration("min-age", gc.DefaultMinAge, "delete only prefixes idle at least this long")
	force := fs.Bool("force-min-age", false, fmt.Sprintf("accept a --min-age below %s (only when no attempt is running)", gc.MinAgeFloor))
	lockTimeout := fs.Duration("lock-timeout", local.DefaultLockTimeout, "longest wait for the pointer's writer lock before giving up")
	s3f := addS3Flags(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := s3f.apply(); err != nil {
		return err
	}
	if *wh == "" {
		return exitcode.UsageError(fmt.Errorf("gc: --warehouse is required"))
	}
	if *lockTimeout <= 0 {
		return exitcode.UsageError(fmt.Errorf("gc: --lock-timeout %s: want a positive duration", *lockTimeout))
	}
	b, store, err := warehouseStore(ctx, env, "--warehouse", *wh, *lockTimeout)
	if err != nil {
		return err
	}
	rep, err := gc.Run(ctx, gc.Options{
		Bucket: b, Store: store, Now: time.Now(),
		MinAge: *minAge, Force: *force, DryRun: *dryRun,
	})
	verb := "deleted"
	if *dryRun {
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
