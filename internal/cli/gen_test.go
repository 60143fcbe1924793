package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/gen"
)

func TestGenShapes(t *testing.T) {
	ctx := context.Background()
	var o, e bytes.Buffer
	design := filepath.Join(t.TempDir(), "design")
	if code := cli.Main(ctx, []string{"gen", "--shape", "design", "--dates", "4", "--events", "14000", "--seed", "5", "--out", design}, &o, &e); code != 0 {
		t.Fatalf("gen --shape design: exit %d: %s", code, e.String())
	}
	exp, err := gen.ReadExpected(filepath.Join(design, gen.ExpectedFile))
	if err != nil {
		t.Fatal(err)
	}
	if exp.Shape != gen.ShapeDesign || exp.Events != 14000 || exp.Seed != 5 || exp.LessonsInPin != 40000 || len(exp.Dates) != 4 {
		t.Errorf("expected.json: shape %q, %d events, seed %d, %d lessons, %d dates; want design, 14000, 5, 40000, 4",
			exp.Shape, exp.Events, exp.Seed, exp.LessonsInPin, len(exp.Dates))
	}

	fixture := filepath.Join(t.TempDir(), "fixture")
	if code := cli.Main(ctx, []string{"gen", "--out", fixture}, &o, &e); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, e.String())
	}
	if exp, err := gen.ReadExpected(filepath.Join(fixture, gen.ExpectedFile)); err != nil || exp.Events != gen.DefaultEvents || exp.Shape != "" {
		t.Errorf("gen without --events: %d events, shape %q (%v); want the fixture's %d", exp.Events, exp.Shape, err, gen.DefaultEvents)
	}

	for name, args := range map[string][]string{
		"unknown shape":     {"--shape", "huge"},
		"design variant":    {"--shape", "design", "--variant", gen.VariantOverCap},
		"design too small":  {"--shape", "design", "--events", "500"},
		"design no dates":   {"--shape", "design", "--events", "10000", "--dates", "-1"},
		"dates too thin":    {"--shape", "design", "--events", "10000", "--dates", "10"},
		"fixture dates":     {"--dates", "3"},
		"fixture too small": {"--events", "10"},
	} {
		args = append([]string{"gen", "--out", filepath.Join(t.TempDir(), "x")}, args...)
		if code := cli.Main(ctx, args, &o, &e); code != 2 {
			t.Errorf("%s: exit %d, want 2 (usage)", name, code)
		}
	}
	// A directory that holds files already is the caller's to move: exit
	// 2, and what it held is left as it was.
	e.Reset()
	before := biHashTree(t, fixture)
	if code := cli.Main(ctx, []string{"gen", "--out", fixture}, &o, &e); code != 2 || !strings.Contains(e.String(), "is not empty") {
		t.Errorf("gen into a non-empty directory: exit %d, want 2 saying it is not empty: %s", code, e.String())
	}
	biDiffTrees(t, "gen --out", before, biHashTree(t, fixture))
}
