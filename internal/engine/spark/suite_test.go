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

// s3Harness keeps the warehouse and every input in the test S3 server's
// bucket alone: the cluster reads and writes them as s3a:// URLs, the job
// moves the pointer by conditional writes, and each fixture's local copy
// is deleted before anything is published, so nothing under the test's
// directories can be read by Spark.
func s3Harness(t *testing.T) publishtest.Harness {
	h := harness(t)
	h.Backend = publishtest.S3
	h.NoLocalCopy = true
	return h
}

// TestPublishSuite runs the shared suite on the cluster with S3. The same
// engine on local disk is covered by TestRelativePaths, the hostile cases
// that have no S3 form and the test command's fixture publish.
func TestPublishSuite(t *testing.T) { publishtest.Run(t, s3Harness(t)) }
