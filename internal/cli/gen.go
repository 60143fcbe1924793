package cli

import (
	"context"
	"fmt"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gen"
)

func runGen(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "gen")
	var o gen.Options
	fs.StringVar(&o.Out, "out", "", "output directory, absent or empty (required)")
	fs.IntVar(&o.Events, "events", 0, fmt.Sprintf("number of events (default %d, or %d for --shape %s)", gen.DefaultEvents, gen.DesignEvents, gen.ShapeDesign))
	fs.Uint64Var(&o.Seed, "seed", 7, "seed; the same seed and options give bit-identical files")
	fs.StringVar(&o.Variant, "variant", "", fmt.Sprintf("one defect to inject: %v", gen.Variants))
	fs.StringVar(&o.Shape, "shape", gen.ShapeFixture, fmt.Sprintf("%s (the committed fixture's shape, any size) or %s (the design volume: 60M events, 40,000 lessons, ~20M enrollments at the default size)", gen.ShapeFixture, gen.ShapeDesign))
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.Out == "" {
		return exitcode.UsageError(fmt.Errorf("gen: --out is required"))
	}
	o = o.WithDefaults()
	o.Log = env.Stderr
	if err := o.Validate(); err != nil {
		return exitcode.UsageError(err)
	}
	exp, err := gen.Generate(ctx, o)
	if err != nil {
		return err
	}
	if o.Shape == gen.ShapeDesign {
		fmt.Fprintf(env.Stdout, "generated %d events (seed %d, shape %s) in %s; expected figures in %s/expected.json\n",
			exp.Events, exp.Seed, o.Shape, o.Out, o.Out)
		return nil
	}
	fmt.Fprintf(env.Stdout, "generated %d events (seed %d, variant %q) in %s; expected figures in %s/expected.json\n",
		exp.Events, exp.Seed, exp.Variant, o.Out, o.Out)
	return nil
}
