package duckdb_test

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

func TestUniquenessSeesThroughCollisions(t *testing.T) {
	publishtest.CheckUniqueness(t, func(t *testing.T, weak bool) engine.Engine {
		e := harness().Open(t).(*duckdb.Engine)
		t.Cleanup(func() { e.Close() })
		if weak {
			duckdb.WeakenKeyHash(e, 3)
		}
		return e
	})
}
