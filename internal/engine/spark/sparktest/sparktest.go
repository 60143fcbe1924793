// Package sparktest gives every test that talks to Spark one way to find the
// Spark Connect server, and one rule when there is none: fail, never skip
// silently, so CI cannot pass without running Spark.
package sparktest

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/testenv"
)

// RemoteEnv names the Spark Connect server the tests use; scripts/test.sh
// starts one (scripts/spark.sh) and exports its URL here.
const RemoteEnv = "ENGAGEMENT_SPARK_REMOTE"

// SkipEnv lets a developer without Java skip the Spark tests on purpose.
// scripts/test.sh and CI never set it, and under CI it is ignored: there a
// missing server fails the run.
const SkipEnv = "ENGAGEMENT_SKIP_SPARK"

// Remote returns the server URL or fails the test: a Spark test that
// silently skipped would let CI pass without ever running Spark.
func Remote(t testing.TB) string {
	t.Helper()
	return testenv.Require(t, RemoteEnv, SkipEnv, "run the tests with scripts/test.sh, which starts a Spark cluster, "+
		"or start one with `bash scripts/spark.sh start` and export "+RemoteEnv+"=<the sc:// URL it prints>")
}
