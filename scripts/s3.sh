#!/usr/bin/env bash
# The S3 server the tests run against: versitygw (an S3 gateway over a
# local directory, which honours If-Match and If-None-Match with 412), built
# with `go install` into .cache/s3/bin, bound to 127.0.0.1 only, with a test
# bucket created.
#
#   bash scripts/s3.sh install   build versitygw once (a second run reuses it)
#   bash scripts/s3.sh start     start it, wait until it answers, print `export` lines for the
#                                AWS_* variables and ENGAGEMENT_S3_BUCKET the tests read
#   bash scripts/s3.sh stop      stop the server this script started
#   bash scripts/s3.sh log       print the server log (kept as .cache/s3/run/server.log)
#
# Environment: ENGAGEMENT_S3_PORT (default: a free port), VERSITYGW_VERSION (default v1.8.0).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${VERSITYGW_VERSION:-v1.8.0}
cache=$PWD/.cache/s3
bin=$cache/bin/versitygw
run=$cache/run
pidfile=$run/server.pid
portfile=$run/server.port
log=$run/server.log
bucket=engagement-test
# Test-only credentials for a server bound to 127.0.0.1; never real ones.
access=engagement-test-key
secret=engagement-test-secret

die() { echo "s3.sh: $*" >&2; exit 1; }

install() {
  if [ -x "$bin" ] && [ "$(cat "$cache/bin/.version" 2>/dev/null)" = "$version" ]; then
    return 0
  fi
  echo "s3.sh: building versitygw $version into $cache/bin" >&2
  mkdir -p "$cache/bin"
  GOBIN=$cache/bin go install "github.com/versity/versitygw/cmd/versitygw@$version" >&2 ||
    die "go install github.com/versity/versitygw/cmd/versitygw@$version failed"
  echo "$version" >"$cache/bin/.version"
}

name=versitygw
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh # the cd above makes the path relative to the repository

exports() {
  local port=$1
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  echo "export AWS_ACCESS_KEY_ID=$access"
  echo "export AWS_SECRET_ACCESS_KEY=$secret"
  echo "export AWS_REGION=us-east-1"
  echo "export ENGAGEMENT_S3_BUCKET=$bucket"
}

start() {
  install
  if running && answers "$(cat "$portfile")"; then
    exports "$(cat "$portfile")"
    return 0
  fi
  rm -rf "$run/data"
  mkdir -p "$run/data/$bucket"
  local port=${ENGAGEMENT_S3_PORT:-$(free_port)}
  echo "$port" >"$portfile"
  ROOT_ACCESS_KEY=$access ROOT_SECRET_KEY=$secret \
    nohup "$bin" --port "127.0.0.1:$port" posix "$run/data" >"$log" 2>&1 &
  echo $! >"$pidfile"
  await "$port"
  echo "s3.sh: versitygw ready on 127.0.0.1:$port, bucket $bucket (log: $log)" >&2
  exports "$port"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  log) cat "$log" ;;
  *) die "usage: bash scripts/s3.sh install|start|stop|log" ;;
esac
