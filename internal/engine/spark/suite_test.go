package spark_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// fixtureSettings are the spark.* keys of config/fixture.conf, the settings
// every engine of the suite runs with.
func fixtureSettings(t *testing.T) map[string]string {
	t.Helper()
	props, err := config.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := config.Resolve(props, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j.Spark
}

func open(t *testing.T) *spark.Engine {
	t.Helper()
	e, err := spark.Open(context.Background(), sparktest.Remote(t), fixtureSettings(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func harness(t *testing.T) publishtest.Harness {
	return publishtest.Harness{
		Engine: "spark",
		Open:   func(t *testing.T) engine.Engine { return open(t) },
		Args:   []string{"--spark-remote", sparktest.Remote(t)},
	}
}

func TestPublishSuite(t *testing.T) { publishtest.Run(t, harness(t)) }
