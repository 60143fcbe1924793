// Package s3test gives every test that talks to S3 one way to find the test
// server, and one rule when there is none: fail, never skip silently, so CI
// cannot pass without running against a real S3 server.
package s3test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/testenv"
)

// BucketEnv names the test bucket; scripts/test.sh starts a server
// (scripts/s3.sh) and exports it with the standard AWS_* variables.
const BucketEnv = "ENGAGEMENT_S3_BUCKET"

// SkipEnv lets a developer skip the S3 tests on purpose; under CI it is
// ignored and a missing server fails the run.
const SkipEnv = "ENGAGEMENT_SKIP_S3"

var seq atomic.Int64

// Location returns a fresh, empty s3:// location in the test bucket, or
// fails the test when no server is configured.
func Location(t testing.TB) storage.Location {
	t.Helper()
	bucket := os.Getenv(BucketEnv)
	if bucket == "" || os.Getenv("AWS_ENDPOINT_URL") == "" {
		testenv.Missing(t, BucketEnv+" or AWS_ENDPOINT_URL is not set", SkipEnv,
			"run the tests with scripts/test.sh, which starts an S3 server, or run `eval \"$(bash scripts/s3.sh start)\"` first")
	}
	name := strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(t.Name())
	// Unique across processes and runs against one server: the test
	// harness may use the clock, the product never does.
	prefix := fmt.Sprintf("t/%s/%d-%d-%d", name, time.Now().UnixNano(), os.Getpid(), seq.Add(1))
	return storage.Location{Scheme: storage.S3, Bucket: bucket, Key: prefix}
}

// Bucket returns the bucket of a fresh location.
func Bucket(t testing.TB) storage.Bucket {
	t.Helper()
	b, err := open.Warehouse(t.Context(), Location(t), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
