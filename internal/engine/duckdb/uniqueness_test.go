package duckdb_test

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestUniquenessSeesThroughCollisions runs the checks both ways the engine
// counts repeated hashes: the fixture's hashes always fit in Go, so the hash
// table's way runs only when forced.
func TestUniquenessSeesThroughCollisions(t *testing.T) {
	for _, way := range []string{"kept", "hash"} {
		t.Run(way, func(t *testing.T) {
			publishtest.CheckUniqueness(t, func(t *testing.T, weak bool) engine.Engine {
				e := harness().Open(t).(*duckdb.Engine)
				t.Cleanup(func() { e.Close() })
				duckdb.CountRepeatsBy(e, way)
				if weak {
					duckdb.WeakenKeyHash(e, 3)
				}
				return e
			})
		})
	}
}

// TestUniquenessWayFollowsMemory reads the fixture's row count and DuckDB's
// own memory_limit text: the fixture's ~2,000 rows' hashes are kept in Go
// at 2GB. TestKeptFits covers where the choice turns.
func TestUniquenessWayFollowsMemory(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	files := publishtest.Listed(t, fx.Job(t, t.TempDir(), "way", "2026-03-02")).Inputs.RawPaths()
	e, err := duckdb.Open(context.Background(), map[string]string{"memory_limit": "2GB"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, err := duckdb.KeptFit(e, files); err != nil || !got {
		t.Errorf("memory_limit 2GB, %d raw files: kept %v (%v), want true", len(files), got, err)
	}
}
