#!/usr/bin/env bash
# The design-day benchmark: builds the binaries once, generates each day once
# into .cache/bench/design-<events>-seed<seed> (reused on later runs), then
# measures the scan floor, the naive two-COPY baseline and `engagement
# publish` at every size, each as its own process with its peak RSS. It ends
# with a markdown table (also saved to .cache/bench/last-report.md).
#
#   bash bench/run.sh                                   # 6M and 60M events, memory_limit 6GB, and a 2GB publish
#   bash bench/run.sh --events 600000,6000000           # smaller days
#   bash bench/run.sh --memory-limit 4GB --repeat 3     # any flag of `bench run`
#   bash bench/run.sh --events "" --backfill 10:30000000
#       only the backfill: a design day over 10 dates of ~30M events each, its
#       first date published alone, then all 10 in one publish with
#       --allow-outside-horizon, both at --backfill-memory-limit (4GB); the ratio
#       and peak RSS are held to issue #12's targets (with --events, after the days)
#   bash bench/run.sh --with-s3 --events 6000000 --repeat 3
#       also publishes each day with inputs and warehouse on a local S3 server
#       (scripts/s3.sh, started and stopped here), right after each local publish
#   bash bench/run.sh --with-s3 --with-spark --events 6000000 --repeat 3 --low-memory-limit ""
#       also publishes each day on the Spark engine, on the standalone cluster of
#       scripts/spark.sh (started and stopped here, reading S3 through S3A), right
#       after each DuckDB publish on S3
#   bash bench/run.sh --with-pyspark --events 6000000 --repeat 1 --low-memory-limit ""
#       also runs the seed's PySpark design (bench/pyspark_design.py) on each day with
#       spark-submit on local[2] (Spark and its Python package from scripts/spark.sh
#       pyspark; no cluster), after the day's publishes; combines with the flags above
#   bash bench/run.sh --with-pyspark --with-spark-local --events 6000000,60000000 --repeat 2
#       also publishes each day twice on the Spark engine, on a Connect server running
#       local[2] (started and stopped here; the second publish finds its JIT warm),
#       then runs the PySpark design: the engine / design ratio (docs/benchmark.md)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache/bench/bin
extra=()
stop=()
# --with-pyspark and --with-spark-local may stand anywhere; the rest keep their order.
args=()
pyspark=0
spark_local=0
for a in "$@"; do
  case $a in
  --with-pyspark) pyspark=1 ;;
  --with-spark-local) spark_local=1 ;;
  *) args+=("$a") ;;
  esac
done
set -- "${args[@]}"
trap 'for s in "${stop[@]}"; do bash "scripts/$s.sh" stop || true; done' EXIT
if [ "${1:-}" = "--with-s3" ]; then
  shift
  bash scripts/s3.sh install >&2
  eval "$(bash scripts/s3.sh start)"
  stop+=(s3)
  ENGAGEMENT_DUCKDB_EXTENSIONS=$(bash scripts/httpfs.sh install)
  export ENGAGEMENT_DUCKDB_EXTENSIONS
  extra=(--s3 "s3://$ENGAGEMENT_S3_BUCKET/bench")
  if [ "${1:-}" = "--with-spark" ]; then
    shift
    # After the S3 server: the cluster's S3A connector reads the AWS_*
    # variables s3.sh exported.
    bash scripts/spark.sh install >&2
    stop=(spark "${stop[@]}")
    extra+=(--spark "$(bash scripts/spark.sh start)")
  fi
fi
if [ "$spark_local" = 1 ]; then
  # The Spark engine on a Connect server that runs its tasks itself on
  # local[2], the PySpark design's cores and memory; not beside --with-spark,
  # whose cluster uses the same run directory.
  [[ " ${extra[*]} " != *" --spark "* ]] || { echo "bench: --with-spark-local and --with-spark exclude each other" >&2; exit 2; }
  bash scripts/spark.sh install >&2
  stop=(spark "${stop[@]}")
  extra+=(--spark-local "$(ENGAGEMENT_SPARK_MASTER='local[2]' ENGAGEMENT_SPARK_MEMORY=8g ENGAGEMENT_SPARK_S3A=0 bash scripts/spark.sh start)")
fi
if [ "$pyspark" = 1 ]; then
  exports=$(bash scripts/spark.sh pyspark)
  eval "$exports"
  extra+=(--pyspark --spark-home "$SPARK_HOME")
fi
echo "bench: building" >&2
go build -o .cache/bench/bin/engagement ./cmd/engagement
go build -o .cache/bench/bin/bench ./bench/cmd/bench
start=$(date +%s)
.cache/bench/bin/bench run --bin .cache/bench/bin/engagement --cache .cache/bench "${extra[@]}" "$@" | tee .cache/bench/last-report.md
echo "bench: whole run including the build took $(( $(date +%s) - start ))s" | tee -a .cache/bench/last-report.md
