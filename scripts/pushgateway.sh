#!/usr/bin/env bash
# The Prometheus Pushgateway the metrics tests push to, built with
# the go command into .cache/pushgateway/bin and bound to 127.0.0.1 only.
#
#   bash scripts/pushgateway.sh install   build it once (a second run reuses it)
#   bash scripts/pushgateway.sh start     start it, wait until it answers, print
#                                         `export ENGAGEMENT_PUSHGATEWAY_URL=...`
#   bash scripts/pushgateway.sh stop      stop the server this script started
#   bash scripts/pushgateway.sh log       print the server log
#
# Environment: ENGAGEMENT_PUSHGATEWAY_PORT (default: a free port),
# PUSHGATEWAY_VERSION (default v1.11.1), PUSHGATEWAY_RUN (the run directory,
# default .cache/pushgateway/run; a private one lets two servers coexist).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${PUSHGATEWAY_VERSION:-v1.11.1}
cache=$PWD/.cache/pushgateway
bin=$cache/bin/pushgateway
run=${PUSHGATEWAY_RUN:-$cache/run}
pidfile=$run/server.pid
portfile=$run/server.port
log=$run/server.log

die() { echo "pushgateway.sh: $*" >&2; exit 1; }

install() {
  if [ -x "$bin" ] && [ "$(cat "$cache/bin/.version" 2>/dev/null)" = "$version" ]; then
    return 0
  fi
  echo "pushgateway.sh: building pushgateway $version into $cache/bin" >&2
  mkdir -p "$cache/bin"
  # `go install module@version` also asks the proxy for the module's version
  # list (for its deprecation notice), which some proxies refuse; a throwaway
  # module that requires the exact version builds the same binary without it.
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && go mod init pushgateway-build >/dev/null 2>&1 &&
    go get "github.com/prometheus/pushgateway@$version" >&2 &&
    go build -o "$bin" github.com/prometheus/pushgateway >&2) ||
    { rm -rf "$tmp"; die "building github.com/prometheus/pushgateway@$version failed"; }
  rm -rf "$tmp"
  echo "$version" >"$cache/bin/.version"
}

name=pushgateway
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh # the cd above makes the path relative to the repository

exports() { echo "export ENGAGEMENT_PUSHGATEWAY_URL=http://127.0.0.1:$1"; }

start() {
  install
  if running && answers "$(cat "$portfile")"; then
    exports "$(cat "$portfile")"
    return 0
  fi
  mkdir -p "$run"
  local port=${ENGAGEMENT_PUSHGATEWAY_PORT:-$(free_port)}
  echo "$port" >"$portfile"
  # No persistence file: every start begins with no pushed groups.
  nohup "$bin" --web.listen-address="127.0.0.1:$port" >"$log" 2>&1 &
  echo $! >"$pidfile"
  await "$port"
  echo "pushgateway.sh: pushgateway ready on 127.0.0.1:$port (log: $log)" >&2
  exports "$port"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  log) cat "$log" ;;
  *) die "usage: bash scripts/pushgateway.sh install|start|stop|log" ;;
esac
