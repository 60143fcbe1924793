#!/usr/bin/env bash
# The whole test suite, as CI runs it. Installs what the tests need (Go
# modules, which go test fetches for this platform alone; the DuckDB engine is
# embedded through cgo, so gcc must be on the machine; the Spark engine's tests
# need a Spark cluster, which scripts/spark.sh installs from the pyspark
# package and the S3A jars from Maven Central and starts on 127.0.0.1: a
# standalone master, one worker and the Spark Connect server; the object-storage tests need an S3 server,
# which scripts/s3.sh builds (versitygw) and starts on 127.0.0.1, and DuckDB's
# httpfs extension, which scripts/httpfs.sh fetches from PyPI; the metrics
# tests need a Pushgateway, which scripts/pushgateway.sh builds and starts on
# 127.0.0.1; the Trino form of `views` is tested on a Trino server, which
# scripts/trino.sh downloads from Maven Central and starts on 127.0.0.1; the
# report's browser test needs Chromium, which
# scripts/chromium.sh installs from Debian's packages; the Airflow example's
# test needs apache-airflow and the reader snippet's test pyarrow and pandas,
# which scripts/airflow.sh and scripts/pyarrow.sh install from PyPI into
# virtual environments) and fails
# loudly rather than skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=""
cleanup() {
  status=$?
  if [ "$status" -ne 0 ] && [ -f .cache/spark/run/server.log ]; then
    kept=.cache/spark/server-failed-$(date -u +%Y%m%dT%H%M%SZ).log
    bash scripts/spark.sh log >"$kept" 2>&1 || true
    echo "== the run failed; the Spark cluster's logs (master, worker, Connect server) are kept as $kept (last 100 lines):" >&2
    tail -n 100 "$kept" >&2
  fi
  if [ "$status" -ne 0 ] && [ -f .cache/s3/run/server.log ]; then
    kept=.cache/s3/server-failed-$(date -u +%Y%m%dT%H%M%SZ).log
    cp .cache/s3/run/server.log "$kept"
    echo "== the S3 server log is kept as $kept" >&2
  fi
  if [ "$status" -ne 0 ] && [ -f .cache/trino/run/server.log ]; then
    kept=.cache/trino/server-failed-$(date -u +%Y%m%dT%H%M%SZ).log
    cp .cache/trino/run/server.log "$kept"
    echo "== the Trino server log is kept as $kept" >&2
  fi
  bash scripts/spark.sh stop || true
  bash scripts/trino.sh stop || true
  bash scripts/s3.sh stop || true
  bash scripts/pushgateway.sh stop || true
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
  exit "$status"
}
trap cleanup EXIT

# Each step's header carries the time, so a slow CI run shows where it went.
step() { echo "== $* ($(date -u +%H:%M:%S))"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi

step "go vet"
go vet ./...

step "S3 server (scripts/s3.sh) and DuckDB's httpfs extension (scripts/httpfs.sh)"
bash scripts/s3.sh install
eval "$(bash scripts/s3.sh start)"
ENGAGEMENT_DUCKDB_EXTENSIONS=$(bash scripts/httpfs.sh install)
export ENGAGEMENT_DUCKDB_EXTENSIONS
unset ENGAGEMENT_SKIP_S3

# After the S3 server: the cluster's S3A connector takes its endpoint and
# credentials from the AWS_* variables s3.sh exported.
step "Spark standalone cluster and Spark Connect server (scripts/spark.sh)"
bash scripts/spark.sh install
# The tests send hundreds of small statements, and the 2 cores are shared
# with the other packages' tests: the JIT's first tier and the serial
# collector spend less CPU on them than C2 and G1's concurrent threads (a
# fixture publish: 45 s cold and 19 s warm, against 62 s and 21 s). The
# benchmark keeps the JVM's defaults.
ENGAGEMENT_SPARK_JAVA_OPTS=${ENGAGEMENT_SPARK_JAVA_OPTS:-"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
export ENGAGEMENT_SPARK_JAVA_OPTS
ENGAGEMENT_SPARK_REMOTE=$(bash scripts/spark.sh start)
export ENGAGEMENT_SPARK_REMOTE
unset ENGAGEMENT_SKIP_SPARK

# After the S3 server too: the catalog's S3 endpoint and credentials are
# the AWS_* variables s3.sh exported.
step "Trino (scripts/trino.sh), which runs the statements of views --dialect trino"
bash scripts/trino.sh install
eval "$(bash scripts/trino.sh start)"
unset ENGAGEMENT_SKIP_TRINO

step "Pushgateway (scripts/pushgateway.sh), which publish's metrics tests push to"
bash scripts/pushgateway.sh install
eval "$(bash scripts/pushgateway.sh start)"

step "Chromium (scripts/chromium.sh), which the report's browser test drives"
ENGAGEMENT_CHROMIUM=$(bash scripts/chromium.sh install)
export ENGAGEMENT_CHROMIUM
unset ENGAGEMENT_SKIP_CHROMIUM
# The browser test's screenshot of the report lands here.
export ENGAGEMENT_ARTIFACTS=${ENGAGEMENT_ARTIFACTS:-$PWD/.cache/artifacts}

step "Airflow (scripts/airflow.sh) and pyarrow with pandas (scripts/pyarrow.sh), for examples/"
ENGAGEMENT_AIRFLOW=$(bash scripts/airflow.sh install)
ENGAGEMENT_PYARROW_PYTHON=$(bash scripts/pyarrow.sh install)
export ENGAGEMENT_AIRFLOW ENGAGEMENT_PYARROW_PYTHON
unset ENGAGEMENT_SKIP_AIRFLOW ENGAGEMENT_SKIP_PYARROW

# The packages where goroutines or processes race (the pointer stores, the
# job's publish and its unknown-outcome paths, progress, gc, the listing,
# the staging driver's overlapped writes)
# run under the race detector; the rest run plainly, once.
# The 64-writer stress of the pointer store runs once, without the race
# detector, which would only slow its thousands of requests down.
race_pkgs="./internal/pointer/... ./internal/job ./internal/progress ./internal/gc ./internal/history ./internal/signals ./internal/inputs ./internal/failpoint ./internal/storage/... ./internal/engine ./internal/warehouse ./internal/bounded"
step "go test -race ($race_pkgs; the pointer stress below)"
go test -race -count=1 -timeout 20m -skip '^TestStress$' $race_pkgs
# The DuckDB engine's goroutines are its uniqueness checks' (DuckDB's threads
# handing hashes to Go, Go's workers counting them: keyset.go) and its schema
# readers (inspect.go); the rest of the package runs plainly below, every
# publish of it through both.
step "go test -race, the DuckDB engine's uniqueness checks and schema readers"
go test -race -count=1 -timeout 10m -run '^(TestCountRepeats|TestUniqueness|TestKeepReadsVectors|TestVectorsFound|TestSchemasReadSideBySide|TestReadersCopySessionSettings|TestSchemaReadAgainOnOwnConnection)' ./internal/engine/duckdb
step "the pointer store's stress: 64 concurrent writers, 6 rounds on S3"
go test -count=1 -timeout 20m -run '^TestStress$' ./internal/pointer/objstore

step "go test (the other packages)"
# The Spark engine's package (its publish suite and the cross-engine
# equality on the cluster, with S3) is the long pole: 10 to 20 minutes on a
# 2-core machine (docs/testing.md), so its bound leaves room for a slower one.
# go test starts packages in the order given, two at a time here: listed
# first, the long pole starts at once and the others share the second slot,
# instead of the Spark package waiting ~8 minutes for the packages sorted
# before it (airflow, cli, crashtest, duckdb).
others=$(go list ./... | grep -v -E '/internal/(pointer|job|progress|gc|history|signals|inputs|failpoint|storage|engine|warehouse)$|/internal/(pointer|storage)/|/internal/engine/spark$')
go test -count=1 -timeout 35m -skip '^TestWorkerLostDuring(Inspect|Staging)$' ./internal/engine/spark $others

# They kill the cluster's worker (then start it again), so they run alone,
# after the packages that share the cluster.
step "the Spark worker lost at the schema reads and mid-stage"
go test -count=1 -timeout 10m -run '^TestWorkerLostDuring(Inspect|Staging)$' ./internal/engine/spark

step "fuzz, briefly (one fuzzer per run, as go test requires; seeds in each package's testdata/fuzz)"
# Budgets are execution counts, not durations: a duration -fuzztime can fail
# with a bare "context deadline exceeded" on a loaded machine (a race in Go's
# fuzz coordinator, golang/go#75804, unfixed in go1.26). Each runs for 5 to
# 20 s on a 2-core machine: FuzzJobArgs runs about 1,500 inputs a second
# (each builds the cobra command), the others several thousand. The suite
# runs these steps one after another, so each second here is a second of CI.
# Minimizing a new interesting input defaults to 60 s each, which a fresh
# cache can hit several times: it is bounded by count too.
for target in "FuzzDecode ./internal/pointer 150000x" "FuzzConfig ./internal/config 60000x" "FuzzJobArgs ./internal/cli 20000x" "FuzzPageStructures ./internal/inputs 60000x"; do
  set -- $target
  go test -run '^$' -fuzz "^$1\$" -fuzztime "$3" -fuzzminimizetime 200x "$2"
done

step "the README's fixture publish, into a scratch warehouse"
scratch=$(mktemp -d)
go run ./cmd/engagement publish --config config/fixture.conf --warehouse "$scratch" \
  --job-id "fixture-$(date -u +%Y%m%dT%H%M%SZ)" --dates 2026-03-02,2026-03-03 2>/dev/null
go run ./cmd/engagement status --warehouse "$scratch"

step "the same fixture publish on the Spark engine"
go run ./cmd/engagement publish --config config/fixture.conf --warehouse "$scratch/spark" --engine spark \
  --spark-remote "$ENGAGEMENT_SPARK_REMOTE" --job-id "fixture-spark-$(date -u +%Y%m%dT%H%M%SZ)" \
  --dates 2026-03-02,2026-03-03 2>/dev/null
go run ./cmd/engagement status --warehouse "$scratch/spark"
step "done"
