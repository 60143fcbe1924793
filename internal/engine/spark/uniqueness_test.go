package spark_test

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

func TestUniquenessSeesThroughCollisions(t *testing.T) {
	publishtest.CheckUniqueness(t, func(t *testing.T, weak bool) engine.Engine {
		e := open(t)
		t.Cleanup(func() { e.Close() })
		if weak {
			spark.WeakenKeyHash(e, 3)
		}
		return e
	})
}
