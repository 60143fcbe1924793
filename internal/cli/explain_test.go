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

func TestExplainMarksBothJoins(t *testing.T) {
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), []string{"explain",
		"--config", filepath.Join("..", "..", "config", "fixture.conf"), "--dates", "2026-03-02,2026-03-03"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, mark := range []string{
		"<== MANIFEST JOIN (build side: lesson manifest pin)",
		"<== ENROLLMENT JOIN (build side: enrollment snapshot)",
	} {
		if !strings.Contains(out.String(), mark) {
			t.Errorf("explain lacks %q:\n%s", mark, out.String())
		}
	}
	if code := cli.Main(context.Background(), []string{"explain", "--config", filepath.Join("..", "..", "config", "fixture.conf")}, &out, &errb); code != 2 {
		t.Errorf("explain without --dates: exit %d, want 2", code)
	}
}

func TestGenCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "day")
	var o, e bytes.Buffer
	if code := cli.Main(context.Background(), []string{"gen", "--out", out, "--events", "500", "--seed", "3"}, &o, &e); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, e.String())
	}
	exp, err := gen.ReadExpected(filepath.Join(out, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if exp.Events != 500 || exp.Seed != 3 {
		t.Errorf("expected.json says %d events seed %d, want 500 and 3", exp.Events, exp.Seed)
	}
	// A second run into the same directory must not overwrite what is there.
	if code := cli.Main(context.Background(), []string{"gen", "--out", out}, &o, &e); code == 0 {
		t.Errorf("gen into a non-empty directory succeeded")
	}
	if code := cli.Main(context.Background(), []string{"gen", "--out", t.TempDir() + "/v", "--variant", "nope"}, &o, &e); code != 2 {
		t.Errorf("gen with an unknown variant: exit %d, want 2", code)
	}
}
