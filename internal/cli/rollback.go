package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/version"
)

// rollbackOptions are rollback's flags.
type rollbackOptions struct {
	origin
	warehouse, dates, jobID string
	to                      int64
	lockTimeout             time.Duration
	s3                      s3Flags
}

func newRollbackCmd(env *Env) *cobra.Command {
	o := &rollbackOptions{}
	c := &cobra.Command{
		Use:   "rollback --warehouse W --date D[,D2] --to-generation G --job-id ID",
		Short: "Put dates back to a retained generation, as a new generation",
		Long: `rollback writes a new generation whose entries for the dates are generation G's,
byte for byte (same files, same figures, same gate report); other dates are untouched.
Before anything moves it refuses (exit 2) a generation that is not retained, a date G
does not hold, and files G names that are missing or changed size. A publish or another
rollback of the same date that lands first makes it exit 6 writing nothing. It is in
the history like any other change and can itself be rolled back.`,
		Example: `  engagement history --warehouse warehouse --date 2026-03-02
  engagement rollback --warehouse warehouse --date 2026-03-02 --to-generation 3 --job-id rollback-20260305`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runRollback(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.dates, "date", "", "comma-separated event dates YYYY-MM-DD to put back (required)")
	decimalVar(fs, &o.to, "to-generation", 0, "the retained generation whose entries come back (required; see engagement history)")
	fs.StringVar(&o.jobID, "job-id", "", "unique id of this rollback, recorded as the generation's writer (required)")
	fs.DurationVar(&o.lockTimeout, "lock-timeout", local.DefaultLockTimeout, "longest wait for the pointer's writer lock before giving up")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runRollback(ctx context.Context, env Env, o *rollbackOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("rollback: --warehouse is required"))
	}
	// A flag left out is named as missing, not as its zero default.
	for _, f := range []string{"date", "to-generation"} {
		if !o.fs.Changed(f) {
			return exitcode.UsageError(fmt.Errorf("rollback: --%s is required (engagement history lists the generations and the dates each holds)", f))
		}
	}
	if o.to < 1 {
		return exitcode.UsageError(fmt.Errorf("rollback: %s %d: want a generation number from engagement history (1 or more)", o.ref("to-generation"), o.to))
	}
	ds, err := dates.ParseList(o.dates)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("rollback: %s: %w", o.ref("date"), err))
	}
	if o.lockTimeout <= 0 {
		return exitcode.UsageError(fmt.Errorf("rollback: %s %s: want a positive duration", o.ref("lock-timeout"), o.lockTimeout))
	}
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, o.lockTimeout)
	if err != nil {
		return err
	}
	if _, err := loadPublished(ctx, "rollback", o.ref("warehouse"), o.warehouse, store); err != nil {
		return err
	}
	out, err := history.Rollback{Bucket: b, Store: store, Dates: ds, To: o.to, JobID: o.jobID,
		Now: time.Now(), Clock: time.Now, WriterVersion: version.String()}.Run(ctx)
	decide(ctx, err)
	if err != nil {
		return err
	}
	// The pointer has moved: the exit code reports the rollback, and a
	// stdout that takes no line only costs the line, which the log says.
	if _, err := fmt.Fprintf(env.Stdout, "rolled back job_id=%s generation=%d dates=%s to generation %d\n",
		o.jobID, out.Pointer.Generation, strings.Join(dates.Strings(ds), ","), o.to); err != nil && !readerGone(err) {
		env.Log.Warn("rolled back, but the summary could not be printed to stdout", "generation", out.Pointer.Generation, "error", err.Error())
	}
	return nil
}
