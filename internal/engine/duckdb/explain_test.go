package duckdb_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestPlanShowsManifestJoin is the capstone's plan assertion for DuckDB: the
// manifest pin is the build (small) side of the lesson_id join, the
// enrollment snapshot the build side of its own join, and the events are
// only ever probed. The rendered plan is kept as a golden file so a plan
// change shows up in review.
func TestPlanShowsManifestJoin(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	j := fx.Job(t, t.TempDir(), "explain", "2026-03-02", "2026-03-03")
	e, err := duckdb.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	plan, err := e.Plan(context.Background(), publishtest.Listed(t, j))
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.BuildSide(duckdb.ManifestJoin); got != duckdb.ManifestScan {
		t.Errorf("manifest join builds from %q, want %q", got, duckdb.ManifestScan)
	}
	if got := plan.BuildSide(duckdb.EnrollmentJoin); got != duckdb.EnrollmentScan {
		t.Errorf("enrollment join builds from %q, want %q", got, duckdb.EnrollmentScan)
	}
	mj := plan.Find(duckdb.ManifestJoin)
	if mj == nil || len(mj.Children) != 2 || mj.Children[1].Cardinality() >= mj.Children[0].Cardinality() {
		t.Errorf("manifest join build side is not the smaller input")
	}

	text, err := e.Explain(context.Background(), publishtest.Listed(t, j))
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range []string{"<== MANIFEST JOIN (build side: lesson manifest pin)", "<== ENROLLMENT JOIN (build side: enrollment snapshot)"} {
		if !strings.Contains(text, mark) {
			t.Errorf("explain output lacks %q:\n%s", mark, text)
		}
	}
	golden := filepath.Join("testdata", "explain_fixture.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/engine/duckdb -run TestPlanShowsManifestJoin -update)", err)
	}
	if string(want) != text {
		t.Errorf("plan differs from %s (rerun with -update if the change is intended):\n%s", golden, text)
	}
}
