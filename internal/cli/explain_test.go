package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
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

// TestExplainWarnsOfRefusedDates: explain shows the plan for any dates, and
// warns when publish would refuse them, with publish's reason; dates publish
// takes get no warning.
func TestExplainWarnsOfRefusedDates(t *testing.T) {
	const warning = "publish would refuse these dates"
	tests := []struct {
		name   string
		args   []string
		reason string // empty: no warning
	}{
		{"publishable", []string{"--dates", "2026-03-02,2026-03-03"}, ""},
		{"outside the horizon", []string{"--dates", "2026-03-01,2026-03-02"}, "[2026-03-01] outside the restatement horizon 2026-03-02..2026-03-03"},
		{"not over", []string{"--dates", "2026-03-02,2026-03-03", "--as-of", "2026-03-03"}, "[2026-03-03] not over on the run date 2026-03-03"},
		// publish's flags as they are: the override is publish's too.
		{"outside the horizon, overridden", []string{"--dates", "2026-03-01,2026-03-02", "--allow-outside-horizon"}, ""},
		{"stale", []string{"--dates", "2026-03-02,2026-03-03", "--as-of", "2026-03-10"}, "is stale: newest ingest_date 2026-03-03 is 7 days old on 2026-03-10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"explain", "--config", filepath.Join("..", "..", "config", "fixture.conf")}, tc.args...)
			if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String(), "MANIFEST JOIN") {
				t.Errorf("no plan on stdout:\n%s", out.String())
			}
			warned := strings.Contains(errb.String(), warning)
			switch {
			case tc.reason == "" && warned:
				t.Errorf("warned for publishable dates:\n%s", errb.String())
			case tc.reason != "" && (!warned || !strings.Contains(errb.String(), tc.reason)):
				t.Errorf("stderr lacks %q with %q:\n%s", warning, tc.reason, errb.String())
			}
		})
	}
}

// TestMisspeltSparkSettingWarned: on Spark, a spark.sql.* key the server
// does not know is warned of with where it was set; the command still runs.
func TestMisspeltSparkSettingWarned(t *testing.T) {
	remote := sparktest.Remote(t)
	conf, err := os.ReadFile(filepath.Join("..", "..", "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.conf")
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fixture"))
	conf = append(conf, "\nengagement.raw "+fixture+"/raw\nengagement.lessons "+fixture+"/lessons\nengagement.enrollments "+fixture+"/enrollments\nspark.sql.shuffle.partitons 8\n"...)
	if err := os.WriteFile(typo, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(conf), "\n")
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), []string{"explain", "--config", typo, "--dates", "2026-03-02,2026-03-03",
		"--engine", "spark", "--spark-remote", remote, "--log-format", "text"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := fmt.Sprintf("key=spark.sql.shuffle.partitons where=%s:%d", typo, line)
	if !strings.Contains(errb.String(), "a spark.sql setting the Spark server does not know") || !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks the warning with %q:\n%s", want, errb.String())
	}
	if strings.Count(errb.String(), "does not know") != 1 {
		t.Errorf("want exactly one unknown setting warned of (the fixture's own keys are known):\n%s", errb.String())
	}
}

// TestExplainWarnsOfAnOverlappingWarehouse: a warehouse that is, holds or
// lies inside an input, which publish refuses (exit 2), is warned of with
// publish's reason; the plan is still shown. Another warehouse is not.
func TestExplainWarnsOfAnOverlappingWarehouse(t *testing.T) {
	const warning = "publish would refuse this warehouse"
	raw, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fixture", "raw"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, warehouse, reason string
	}{
		{"the raw input", raw, "is the input engagement.raw"},
		{"apart", t.TempDir(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{"explain", "--config", filepath.Join("..", "..", "config", "fixture.conf"), "--dates", "2026-03-02,2026-03-03", "--warehouse", tc.warehouse}
			if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String(), "MANIFEST JOIN") {
				t.Errorf("no plan on stdout:\n%s", out.String())
			}
			warned := strings.Contains(errb.String(), warning)
			if warned != (tc.reason != "") || !strings.Contains(errb.String(), tc.reason) {
				t.Errorf("stderr: want the warning %v, with %q:\n%s", tc.reason != "", tc.reason, errb.String())
			}
		})
	}
}

// TestExplainWarnsOfSettings: the settings publish warns of (a file target
// far below the band) explain warns of too, before the publish it precedes.
func TestExplainWarnsOfSettings(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join("..", "..", "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny.conf")
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fixture"))
	conf = append(conf, "\nengagement.raw "+fixture+"/raw\nengagement.lessons "+fixture+"/lessons\nengagement.enrollments "+fixture+"/enrollments\nengagement.targetFileBytes 1B\n"...)
	if err := os.WriteFile(tiny, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), []string{"explain", "--config", tiny, "--dates", "2026-03-02,2026-03-03"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "engagement.targetFileBytes is far below the 128-256 MB band") {
		t.Errorf("stderr lacks the file target's warning:\n%s", errb.String())
	}
}
