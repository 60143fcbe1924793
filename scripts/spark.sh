#!/usr/bin/env bash
# The Spark Connect server the tests run against: Spark 4.0.x as carried by the
# pyspark package from PyPI (its sdist holds Spark's jars, spark-connect included,
# and bin/spark-submit), run on Java 17, bound to 127.0.0.1 only, local[2].
#
#   bash scripts/spark.sh install   fetch pyspark into .cache/spark once (a second run reuses it)
#   bash scripts/spark.sh start     start the server, wait until it answers, print its sc:// URL
#   bash scripts/spark.sh stop      stop the server this script started
#   bash scripts/spark.sh log       print the server log (kept as .cache/spark/run/server.log)
#
# Environment: ENGAGEMENT_SPARK_PORT (default: a free port), ENGAGEMENT_SPARK_MEMORY
# (driver memory, default 2g), PYSPARK_VERSION (default 4.0.5).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${PYSPARK_VERSION:-4.0.5}
cache=$PWD/.cache/spark
spark_home=$cache/pyspark-$version/deps
run=$cache/run
pidfile=$run/server.pid
portfile=$run/server.port
log=$run/server.log
server_class=org.apache.spark.sql.connect.service.SparkConnectServer

die() { echo "spark.sh: $*" >&2; exit 1; }

java17() {
  if [ -n "${JAVA_HOME:-}" ] && "$JAVA_HOME/bin/java" -version 2>&1 | grep -q 'version "17'; then
    return 0
  fi
  for d in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/temurin-17-*; do
    if [ -x "$d/bin/java" ]; then
      export JAVA_HOME=$d
      return 0
    fi
  done
  return 1
}

install() {
  if ! java17; then
    echo "spark.sh: installing Java 17 (openjdk-17-jre-headless)" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >&2 ||
      die "no Java 17 and apt-get could not install openjdk-17-jre-headless"
    java17 || die "Java 17 installed but not found under /usr/lib/jvm"
  fi
  if [ -x "$spark_home/bin/spark-submit" ] && ls "$spark_home"/jars/spark-connect_*.jar >/dev/null 2>&1; then
    return 0
  fi
  echo "spark.sh: installing pyspark $version (Spark and its jars) into $cache" >&2
  mkdir -p "$cache/dl"
  # The sdist carries Spark itself; it is unpacked, not pip-installed, because
  # only its jars and bin/ are needed.
  python3 -m pip download --quiet --no-deps --no-binary :all: -d "$cache/dl" "pyspark==$version" >&2 ||
    die "pip download pyspark==$version failed"
  tar xzf "$cache/dl/pyspark-$version.tar.gz" -C "$cache" "pyspark-$version/deps/bin" "pyspark-$version/deps/jars" ||
    die "unpack pyspark-$version.tar.gz failed"
  rm -rf "$cache/dl"
  ls "$spark_home"/jars/spark-connect_*.jar >/dev/null 2>&1 ||
    die "pyspark $version has no spark-connect jar under $spark_home/jars"
}

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  install
  java17 || die "no Java 17"
  if running && answers "$(cat "$portfile")"; then
    echo "sc://127.0.0.1:$(cat "$portfile")"
    return 0
  fi
  mkdir -p "$run/tmp"
  local port=${ENGAGEMENT_SPARK_PORT:-$(free_port)}
  echo "$port" >"$portfile"
  local began=$SECONDS
  # Run from .cache/spark/run so nothing the server creates (spark-warehouse,
  # temp files) lands in the work tree. Static settings the job's config
  # files name (spark.speculation) are given here: Spark refuses to change
  # them on a running session, and the engine checks their values.
  (
    cd "$run"
    export SPARK_HOME=$spark_home
    exec setsid "$spark_home/bin/spark-submit" --class "$server_class" --name engagement-spark-connect \
      --master 'local[2]' --driver-memory "${ENGAGEMENT_SPARK_MEMORY:-2g}" \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf spark.connect.grpc.binding.port="$port" \
      --conf spark.driver.bindAddress=127.0.0.1 --conf spark.driver.host=127.0.0.1 \
      --conf spark.ui.enabled=false \
      --conf spark.speculation=false \
      --conf spark.sql.catalogImplementation=in-memory \
      --conf spark.sql.warehouse.dir="$run/spark-warehouse" \
      --conf spark.local.dir="$run/tmp" \
      --conf spark.sql.session.timeZone=UTC
  ) >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 240); do
    if answers "$port"; then
      echo "spark.sh: Spark Connect server ready on 127.0.0.1:$port after $((SECONDS - began))s (log: $log)" >&2
      echo "sc://127.0.0.1:$port"
      return 0
    fi
    if ! running; then
      tail -n 50 "$log" >&2
      die "the Spark Connect server exited while starting (log: $log)"
    fi
    sleep 0.5
  done
  tail -n 50 "$log" >&2
  stop
  die "the Spark Connect server did not answer on 127.0.0.1:$port within 120s (log: $log)"
}

stop() {
  running || { rm -f "$pidfile"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  # setsid made the server its own process group: stop the group it leads.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
log) cat "$log" 2>/dev/null || echo "spark.sh: no server log at $log" >&2 ;;
*) die "usage: scripts/spark.sh install|start|stop|log" ;;
esac
