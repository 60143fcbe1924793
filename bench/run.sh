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
#   bash bench/run.sh --with-s3 --events 6000000 --repeat 3
#       also publishes each day with inputs and warehouse on a local S3 server
#       (scripts/s3.sh, started and stopped here), right after each local publish
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache/bench/bin
extra=()
if [ "${1:-}" = "--with-s3" ]; then
  shift
  bash scripts/s3.sh install >&2
  eval "$(bash scripts/s3.sh start)"
  trap 'bash scripts/s3.sh stop || true' EXIT
  ENGAGEMENT_DUCKDB_EXTENSIONS=$(bash scripts/httpfs.sh install)
  export ENGAGEMENT_DUCKDB_EXTENSIONS
  extra=(--s3 "s3://$ENGAGEMENT_S3_BUCKET/bench")
fi
echo "bench: building" >&2
go build -o .cache/bench/bin/engagement ./cmd/engagement
go build -o .cache/bench/bin/bench ./bench/cmd/bench
start=$(date +%s)
.cache/bench/bin/bench run --bin .cache/bench/bin/engagement --cache .cache/bench "${extra[@]}" "$@" | tee .cache/bench/last-report.md
echo "bench: whole run including the build took $(( $(date +%s) - start ))s" | tee -a .cache/bench/last-report.md
