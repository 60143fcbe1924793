package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gen"
)

// genOptions are gen's flags: the generator's own options.
type genOptions struct{ gen gen.Options }

func newGenCmd(env *Env) *cobra.Command {
	opts := &genOptions{}
	c := &cobra.Command{
		Use:   "gen --out DIR [--events N] [--seed S] [--variant V] [--shape fixture|design [--dates N]]",
		Short: "Generate deterministic inputs and their expected figures",
		Long: `gen writes raw events, a lesson manifest and enrollments into --out, with
expected.json holding the figures a correct publish must produce. The same seed and
options give bit-identical files; --variant injects one defect the gate must catch.`,
		Example: `  engagement gen --out /tmp/fixture --events 2000 --seed 7
  engagement gen --out /tmp/backfill --shape design --dates 10 --events 3000000`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// 0 stands for "the default" inside gen: given on the command
			// line it is a mistake (--shape design --events 0 would make
			// the full 60M-event day), not a request for the default.
			for _, name := range []string{"events", "seed", "dates"} {
				if c.Flags().Changed(name) && c.Flags().Lookup(name).Value.String() == "0" {
					return exitcode.UsageError(fmt.Errorf("gen: --%s 0: give a positive number, or leave the flag out for its default", name))
				}
			}
			return runGen(c.Context(), *env, opts)
		},
	}
	fs := c.Flags()
	o := &opts.gen
	fs.StringVar(&o.Out, "out", "", "output directory, absent or empty (required)")
	decimalVar(fs, &o.Events, "events", 0, fmt.Sprintf("number of events (default %d, or %d for --shape %s)", gen.DefaultEvents, gen.DesignEvents, gen.ShapeDesign))
	decimalVar(fs, &o.Seed, "seed", 7, "seed; the same seed and options give bit-identical files")
	fs.StringVar(&o.Variant, "variant", "", fmt.Sprintf("one defect to inject: %v", gen.Variants))
	decimalVar(fs, &o.Dates, "dates", 0, fmt.Sprintf("--shape %s only: spread the events over this many event dates from %s (default %d)", gen.ShapeDesign, gen.DesignDates[0], gen.DefaultDesignDates))
	fs.StringVar(&o.Shape, "shape", gen.ShapeFixture, fmt.Sprintf("%s (the committed fixture's shape, any size) or %s (the design volume: 60M events, 40,000 lessons, ~20M enrollments at the default size)", gen.ShapeFixture, gen.ShapeDesign))
	return c
}

func runGen(ctx context.Context, env Env, opts *genOptions) error {
	o := opts.gen
	if o.Out == "" {
		return exitcode.UsageError(fmt.Errorf("gen: --out is required"))
	}
	if err := localDir("--out", o.Out); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	o = o.WithDefaults()
	o.Log = env.Console.Lines(slog.LevelInfo) // one record per step in json mode
	if err := o.Validate(); err != nil {
		return exitcode.UsageError(err)
	}
	exp, err := gen.Generate(ctx, o)
	if errors.Is(err, gen.ErrOutNotEmpty) || errors.Is(err, syscall.ENOTDIR) {
		// A file where the directory goes (or above it): a retry would
		// meet it again.
		return exitcode.UsageError(err)
	}
	if err != nil {
		return err
	}
	if o.Shape == gen.ShapeDesign {
		fmt.Fprintf(env.Stdout, "generated %d events (seed %d, shape %s, %d dates) in %s; expected figures in %s/expected.json\n",
			exp.Events, exp.Seed, o.Shape, len(exp.Dates), o.Out, o.Out)
		return nil
	}
	fmt.Fprintf(env.Stdout, "generated %d events (seed %d, variant %q) in %s; expected figures in %s/expected.json\n",
		exp.Events, exp.Seed, exp.Variant, o.Out, o.Out)
	return nil
}
