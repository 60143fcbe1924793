package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// explainOptions are explain's flags: the job flags without --job-id.
type explainOptions struct{ job *jobFlags }

func newExplainCmd(env *Env) *cobra.Command {
	o := &explainOptions{}
	c := &cobra.Command{
		Use:   "explain --config FILE --dates D1,D2 [flags]",
		Short: "Print the engine's plan for the given dates, both joins marked",
		Long: `explain lists the inputs as publish would and prints the engine's plan for the
given dates, with the lesson and enrollment joins marked. It writes nothing.`,
		Example: `  engagement explain --config config/fixture.conf --dates 2026-03-02,2026-03-03
  engagement explain --config config/fixture.conf --dates 2026-03-02 --engine spark --spark-remote sc://127.0.0.1:15002`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runExplain(c.Context(), *env, o) },
	}
	o.job = addJobFlags(c.Flags(), false)
	return c
}

func runExplain(ctx context.Context, env Env, o *explainOptions) error {
	j, eng, err := jobAndEngine(ctx, env.Log, o.job, config.Job.CheckInputs)
	if err != nil {
		return err
	}
	defer eng.Close()
	// One reading of the clock for the window and the date checks, as
	// publish reads it.
	now := time.Now().UTC()
	spec, err := job.ListedSpec(ctx, inputs.NewSource(open.Input), j, dates.FromTime(now))
	if err != nil {
		return err
	}
	plan, err := eng.Explain(ctx, spec)
	if err != nil {
		return err
	}
	if why := job.DatesRefused(j, spec.Inputs.IngestDates, now); why != nil {
		env.Log.Warn("publish would refuse these dates; the plan is shown anyway", "reason", why.Error())
	}
	job.WarnSettings(env.Log, j)
	if why := job.OverlapRefused(j); why != nil {
		env.Log.Warn("publish would refuse this warehouse; the plan is shown anyway", "reason", why.Error())
	}
	_, err = fmt.Fprint(env.Stdout, plan)
	return err
}
