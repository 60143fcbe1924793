package spark_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// RemoteEnv names the Spark Connect server the tests use; scripts/test.sh
// starts one (scripts/spark.sh) and exports its URL here.
const RemoteEnv = "ENGAGEMENT_SPARK_REMOTE"

// SkipEnv lets a developer without Java skip the Spark tests on purpose.
// scripts/test.sh and CI never set it, and under CI it is ignored: there a
// missing server fails the run.
const SkipEnv = "ENGAGEMENT_SKIP_SPARK"

// remote returns the server URL or fails the test: a Spark test that
// silently skipped would let CI pass without ever running Spark.
func remote(t *testing.T) string {
	t.Helper()
	if r := os.Getenv(RemoteEnv); r != "" {
		return r
	}
	if os.Getenv(SkipEnv) == "1" && os.Getenv("CI") == "" {
		t.Skipf("%s=1: Spark tests skipped on purpose", SkipEnv)
	}
	t.Fatalf("%s is not set: run the tests with scripts/test.sh, which starts a Spark Connect server, "+
		"or start one with `bash scripts/spark.sh start` and export %s=<the sc:// URL it prints>", RemoteEnv, RemoteEnv)
	return ""
}

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
	e, err := spark.Open(context.Background(), remote(t), fixtureSettings(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func harness(t *testing.T) publishtest.Harness {
	return publishtest.Harness{
		Engine: "spark",
		Open:   func(t *testing.T) engine.Engine { return open(t) },
		Args:   []string{"--spark-remote", remote(t)},
	}
}

func TestPublishSuite(t *testing.T) { publishtest.Run(t, harness(t)) }
