#!/usr/bin/env bash
# The Spark cluster the tests run against: Spark 4.0.x as carried by the
# pyspark package from PyPI (its sdist holds Spark's jars, spark-connect
# included, and bin/), run on Java 17, bound to 127.0.0.1 only. It is a
# standalone cluster, not local[*]: a master, one worker (2 cores, bounded
# memory) whose executors run in their own JVMs with their own working
# directory, and the Spark Connect server attached to the master as its
# driver. The server carries the Hadoop S3A connector (hadoop-aws of the
# Hadoop version inside the distribution and the AWS SDK v2 bundle its POM
# names, fetched from Maven Central and checked against their .sha1), and
# reads its S3 endpoint and credentials from the standard AWS_* variables.
#
#   bash scripts/spark.sh install   fetch pyspark and the S3A jars into .cache/spark once
#   bash scripts/spark.sh start     start master, worker and server, wait until the server
#                                   answers, print its sc:// URL
#   bash scripts/spark.sh ui        print the driver's UI URL (its REST API is /api/v1)
#   bash scripts/spark.sh pids      print the worker's and its executors' process ids
#   bash scripts/spark.sh worker    start the worker again if it died (the worker-loss test)
#   bash scripts/spark.sh stop      stop everything this script started
#   bash scripts/spark.sh log       print the logs (kept under .cache/spark/run/)
#   bash scripts/spark.sh pyspark   install Spark and its Python package (no cluster), print
#                                   the SPARK_HOME, PYTHONPATH and JAVA_HOME exports that run
#                                   a PySpark job with spark-submit (the benchmark's design job)
#
# Environment: ENGAGEMENT_SPARK_MASTER (e.g. local[2]: no master and no worker, the
# server runs the tasks in its own JVM, with ENGAGEMENT_SPARK_MEMORY; the benchmark's
# like-for-like run against a local[2] PySpark job; default: the standalone cluster),
# ENGAGEMENT_SPARK_PORT (the Connect port, default: a free one),
# ENGAGEMENT_SPARK_MEMORY (driver memory, default 2g), ENGAGEMENT_SPARK_WORKER_MEMORY
# (the worker's and its executor's memory, default 2g), ENGAGEMENT_SPARK_JAVA_OPTS (JVM
# options of the driver and the executors, default none), ENGAGEMENT_SPARK_S3A=0 (start
# without the S3A connector), PYSPARK_VERSION (default 4.0.5); AWS_ENDPOINT_URL
# (or AWS_ENDPOINT_URL_S3), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
# for S3A, read when the server starts.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${PYSPARK_VERSION:-4.0.5}
cache=$PWD/.cache/spark
spark_home=$cache/pyspark-$version/deps
s3a_jars=$cache/jars-s3a
run=$cache/run
pidfile=$run/server.pid
portfile=$run/server.port
uifile=$run/ui.url
log=$run/server.log
server_class=org.apache.spark.sql.connect.service.SparkConnectServer
maven=https://repo1.maven.org/maven2

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

install_spark() {
  if ! java17; then
    echo "spark.sh: installing Java 17 (openjdk-17-jre-headless)" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >&2 ||
      die "no Java 17 and apt-get could not install openjdk-17-jre-headless"
    java17 || die "Java 17 installed but not found under /usr/lib/jvm"
  fi
  if [ -x "$spark_home/bin/spark-submit" ] && ls "$spark_home"/jars/spark-connect_*.jar >/dev/null 2>&1; then
    return 0
  fi
  unpack_sdist deps/bin deps/jars pyspark
  ls "$spark_home"/jars/spark-connect_*.jar >/dev/null 2>&1 ||
    die "pyspark $version has no spark-connect jar under $spark_home/jars"
}

# unpack_sdist MEMBER...: download the pyspark sdist and unpack the named
# members of it. The install takes Spark's bin/ and jars/ and the pyspark
# Python package (a few MB beside the jars' hundreds, so a later `pyspark`
# needs no second download); the sdist is unpacked, not pip-installed, so
# nothing lands in the system Python.
unpack_sdist() {
  local members=()
  for m in "$@"; do members+=("pyspark-$version/$m"); done
  echo "spark.sh: installing pyspark $version's $* into $cache/pyspark-$version" >&2
  mkdir -p "$cache/dl"
  python3 -m pip download --quiet --no-deps --no-binary :all: -d "$cache/dl" "pyspark==$version" >&2 ||
    die "pip download pyspark==$version failed"
  tar xzf "$cache/dl/pyspark-$version.tar.gz" -C "$cache" "${members[@]}" ||
    die "unpack pyspark-$version.tar.gz failed"
  rm -rf "$cache/dl"
  # Marks a whole pyspark/: tar stops half-way when interrupted.
  [ ! -d "$cache/pyspark-$version/pyspark" ] || touch "$cache/pyspark-$version/pyspark/.unpacked"
}

# python_path is where the pyspark package (from the sdist) and py4j sit.
python_path=$cache/pyspark-$version/python

# install_python makes the pyspark Python package importable without pip:
# the sdist's pyspark/ (fetched again only by an install that predates it)
# and py4j, the one package pyspark requires, at the version of the py4j jar
# Spark ships, from its PyPI wheel (pure Python) unpacked beside it.
install_python() {
  install_spark
  # Only pyspark/: the jars may be in use by a running cluster.
  [ -f "$cache/pyspark-$version/pyspark/.unpacked" ] || unpack_sdist pyspark
  [ -f "$python_path/py4j/__init__.py" ] && return 0
  local j py4j
  j=$(ls "$spark_home"/jars/py4j-*.jar 2>/dev/null | head -n 1)
  [ -n "$j" ] || die "no py4j-*.jar under $spark_home/jars"
  py4j=${j##*/py4j-}
  py4j=${py4j%.jar}
  echo "spark.sh: installing py4j $py4j into $python_path" >&2
  rm -rf "$cache/dl-py4j" "$python_path"
  mkdir -p "$cache/dl-py4j" "$python_path"
  python3 -m pip download --quiet --no-deps --only-binary :all: -d "$cache/dl-py4j" "py4j==$py4j" >&2 ||
    die "pip download py4j==$py4j failed"
  python3 -m zipfile -e "$cache/dl-py4j/py4j-$py4j-py2.py3-none-any.whl" "$cache/dl-py4j/whl" ||
    die "unpack py4j-$py4j wheel failed"
  mv "$cache/dl-py4j/whl/py4j" "$python_path/py4j.part"
  ln -s ../pyspark "$python_path/pyspark"
  rm -rf "$cache/dl-py4j"
  # Renamed last: a directory without py4j/ is an unfinished install.
  mv "$python_path/py4j.part" "$python_path/py4j"
}

# pyspark installs what a PySpark job run with spark-submit needs (no cluster)
# and prints the exports that run it.
pyspark() {
  install_python
  java17 || die "no Java 17"
  echo "export SPARK_HOME=$spark_home PYTHONPATH=$python_path JAVA_HOME=$JAVA_HOME"
}

# hadoop_version is the Hadoop inside the distribution, from its client jar's name.
hadoop_version() {
  local j
  j=$(ls "$spark_home"/jars/hadoop-client-api-*.jar 2>/dev/null | head -n 1)
  [ -n "$j" ] || die "no hadoop-client-api-*.jar under $spark_home/jars"
  j=${j##*/hadoop-client-api-}
  echo "${j%.jar}"
}

# fetch GROUP ARTIFACT VERSION: one jar from Maven Central into $s3a_jars,
# checked against the .sha1 published beside it.
fetch() {
  local path="${1//.//}/$2/$3/$2-$3.jar" out="$s3a_jars/$2-$3.jar"
  [ -f "$out" ] && return 0
  echo "spark.sh: fetching $1:$2:$3 from Maven Central" >&2
  curl -fsSL --retry 3 -o "$out.part" "$maven/$path" || die "download $maven/$path failed"
  local want got
  want=$(curl -fsSL --retry 3 "$maven/$path.sha1" | cut -c1-40) || die "download $maven/$path.sha1 failed"
  got=$(sha1sum "$out.part" | cut -c1-40)
  [ "$want" = "$got" ] || { rm -f "$out.part"; die "$2-$3.jar: sha1 $got, Maven Central says $want"; }
  mv "$out.part" "$out"
}

# install_s3a fetches hadoop-aws of the distribution's Hadoop version and the
# exact AWS SDK v2 bundle that hadoop-aws's build names (hadoop-project's
# aws-java-sdk-v2.version), once.
install_s3a() {
  local hv sdk
  hv=$(hadoop_version)
  mkdir -p "$s3a_jars"
  if [ ! -f "$s3a_jars/sdk-$hv.version" ]; then
    sdk=$(curl -fsSL --retry 3 "$maven/org/apache/hadoop/hadoop-project/$hv/hadoop-project-$hv.pom" |
      sed -n 's:.*<aws-java-sdk-v2.version>\(.*\)</aws-java-sdk-v2.version>.*:\1:p' | head -n 1)
    [ -n "$sdk" ] || die "hadoop-project-$hv.pom names no aws-java-sdk-v2.version"
    echo "$sdk" >"$s3a_jars/sdk-$hv.version"
  fi
  sdk=$(cat "$s3a_jars/sdk-$hv.version")
  fetch org.apache.hadoop hadoop-aws "$hv"
  fetch software.amazon.awssdk bundle "$sdk"
}

install() {
  install_spark
  install_s3a
}

# s3a_jar_list is the --jars value: hadoop-aws and its SDK bundle.
s3a_jar_list() {
  local hv
  hv=$(hadoop_version)
  echo "$s3a_jars/hadoop-aws-$hv.jar,$s3a_jars/bundle-$(cat "$s3a_jars/sdk-$hv.version").jar"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

running() { alive "$pidfile"; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# shellcheck source=lib/port.sh
source scripts/lib/port.sh # the cd above makes the path relative to the repository

# await NAME PORT PIDFILE LOG SAYS: wait (120 s at most) for a JVM started in
# the background to answer on PORT with its log saying SAYS (a grep -F
# pattern): a port that answers may be another process's, so the JVM's own
# word that it bound it is what counts. Returns 0 when ready; else prints the
# log's tail and returns 2 when the JVM exited over a port it could not bind
# (start picks new ports), 1 otherwise.
await() {
  local name=$1 port=$2 pf=$3 lg=$4 says=$5
  for _ in $(seq 1 240); do
    if answers "$port" && grep -qF -- "$says" "$lg" 2>/dev/null; then
      alive "$pf" && return 0
    fi
    if ! alive "$pf"; then
      tail -n 50 "$lg" >&2
      echo "spark.sh: the Spark $name exited while starting (log: $lg)" >&2
      grep -qE 'BindException|Address already in use|Failed to bind' "$lg" 2>/dev/null && return 2
      return 1
    fi
    sleep 0.5
  done
  tail -n 50 "$lg" >&2
  echo "spark.sh: the Spark $name did not answer on 127.0.0.1:$port within 120s (log: $lg)" >&2
  return 1
}

# daemon NAME CLASS ARGS...: start a Spark JVM of its own process group
# from .cache/spark/run, recording its pid as run/NAME.pid. SPARK_LOCAL_DIRS
# keeps the worker's executor directories (each holds a copy of the S3A jars,
# about half a GB) under run/tmp, which stop removes: under /tmp, every
# stopped server left one behind.
daemon() {
  local name=$1
  shift
  (
    cd "$run"
    export SPARK_HOME=$spark_home SPARK_DAEMON_MEMORY=512m SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS=$run/tmp
    exec setsid "$spark_home/bin/spark-class" "$@"
  ) >"$run/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
}

worker_mem=${ENGAGEMENT_SPARK_WORKER_MEMORY:-2g}

# start_worker PORT WEBUI_PORT: start the worker (2 cores, bounded memory)
# and register it with the master. Its executors run in JVMs of their own,
# with a working directory of their own (run/worker/<app>/<id>): a path only
# the CLI's process can see fails there, as on a real cluster.
start_worker() {
  echo "$1" >"$run/worker.port"
  daemon worker org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --port "$1" --webui-port "$2" \
    --cores 2 --memory "$worker_mem" --work-dir "$run/worker" "spark://127.0.0.1:$(cat "$run/master.port")"
}

# await_worker: wait until the worker has bound its port.
await_worker() {
  local port
  port=$(cat "$run/worker.port")
  await worker "$port" "$run/worker.pid" "$run/worker.log" "service 'sparkWorker' on port $port."
}

# worker starts the worker again after it died (the worker-loss test kills
# it), and waits until it answers.
worker() {
  java17 || die "no Java 17"
  alive "$run/master.pid" || die "no master is running (bash scripts/spark.sh start)"
  alive "$run/worker.pid" && return 0
  local attempt p rc
  for attempt in 1 2 3; do
    p=$(free_port)
    start_worker "$p" "$(free_port "$p")"
    rc=0
    await_worker || rc=$?
    [ "$rc" -eq 0 ] && return 0
    halt "$run/worker.pid"
    [ "$rc" -eq 2 ] || die "the worker did not start"
  done
  die "the worker found no port to bind in 3 tries"
}

# s3a_properties writes the S3A settings from the AWS_* variables into a
# properties file of mode 600, so the keys never appear in a process list.
s3a_properties() {
  local out=$1 endpoint=${AWS_ENDPOINT_URL_S3:-${AWS_ENDPOINT_URL:-}}
  (
    umask 077
    {
      if [ -n "$endpoint" ]; then
        echo "spark.hadoop.fs.s3a.endpoint=$endpoint"
        # An S3-compatible server on a private address takes path-style
        # requests; so does AWS, so this is safe everywhere.
        echo "spark.hadoop.fs.s3a.path.style.access=true"
        case $endpoint in
        https://*) echo "spark.hadoop.fs.s3a.connection.ssl.enabled=true" ;;
        *) echo "spark.hadoop.fs.s3a.connection.ssl.enabled=false" ;;
        esac
      fi
      echo "spark.hadoop.fs.s3a.endpoint.region=${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
      if [ -n "${AWS_ACCESS_KEY_ID:-}" ]; then
        echo "spark.hadoop.fs.s3a.access.key=$AWS_ACCESS_KEY_ID"
        echo "spark.hadoop.fs.s3a.secret.key=${AWS_SECRET_ACCESS_KEY:-}"
        echo "spark.hadoop.fs.s3a.aws.credentials.provider=org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
      fi
      # Fail a request in seconds, not after S3A's default of minutes of
      # retries: the job reports the failure and a rerun is safe.
      echo "spark.hadoop.fs.s3a.attempts.maximum=3"
      echo "spark.hadoop.fs.s3a.retry.limit=3"
      echo "spark.hadoop.fs.s3a.connection.establish.timeout=15s"
      echo "spark.hadoop.fs.s3a.connection.timeout=60s"
    } >"$out"
  )
}

start() {
  install_spark
  [ "${ENGAGEMENT_SPARK_S3A:-1}" = 0 ] || install_s3a
  java17 || die "no Java 17"
  if running && answers "$(cat "$portfile")"; then
    echo "sc://127.0.0.1:$(cat "$portfile")"
    return 0
  fi
  if [ -n "${ENGAGEMENT_SPARK_PORT:-}" ] && answers "$ENGAGEMENT_SPARK_PORT"; then
    die "ENGAGEMENT_SPARK_PORT=$ENGAGEMENT_SPARK_PORT: another process listens on 127.0.0.1:$ENGAGEMENT_SPARK_PORT"
  fi
  local began=$SECONDS attempt rc
  # A JVM that lost one of its ports to another process exits at start;
  # new ports are picked for every JVM and the cluster starts again.
  for attempt in 1 2 3; do
    rc=0
    start_cluster || rc=$?
    if [ "$rc" -eq 0 ]; then
      echo "spark.sh: Spark cluster ready after $((SECONDS - began))s: master $(cat "$run/master.url"), Connect server on 127.0.0.1:$(cat "$portfile"), UI $(cat "$uifile") (logs: $run)" >&2
      echo "sc://127.0.0.1:$(cat "$portfile")"
      return 0
    fi
    stop
    [ "$rc" -eq 2 ] || die "the Spark cluster did not start (logs: $run)"
    echo "spark.sh: a port was taken under a Spark JVM (try $attempt of 3): starting again on new ports" >&2
  done
  die "the Spark cluster found no ports to bind in 3 tries (logs: $run)"
}

# start_cluster: one try at master, worker and Connect server, every port
# they listen on chosen here (none left to the kernel, which would pick from
# the range free_port stays out of). Returns as await does.
start_cluster() {
  stop
  rm -rf "$run/worker" "$run/tmp"
  mkdir -p "$run/tmp" "$run/worker" "$run/events"
  local ports=() p
  # port: the Connect port; then the master's two, the worker's two, and the
  # driver's UI, RPC and block manager ports, all distinct.
  p=${ENGAGEMENT_SPARK_PORT:-$(free_port)}
  ports+=("$p")
  for _ in 1 2 3 4 5 6 7; do
    p=$(free_port "${ports[@]}")
    ports+=("$p")
  done
  local port=${ports[0]} master_port=${ports[1]} web_port=${ports[2]} worker_port=${ports[3]} worker_web=${ports[4]}
  local ui_port=${ports[5]} driver_port=${ports[6]} block_port=${ports[7]}
  local master=${ENGAGEMENT_SPARK_MASTER:-}
  if [ -z "$master" ]; then
    daemon master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$master_port" --webui-port "$web_port"
    await master "$master_port" "$run/master.pid" "$run/master.log" "service 'sparkMaster' on port $master_port." || return $?
    echo "$master_port" >"$run/master.port"
    master=spark://127.0.0.1:$master_port
    # The worker and the server start side by side (each JVM takes seconds):
    # the server needs the worker only once it runs a job.
    start_worker "$worker_port" "$worker_web"
  fi
  echo "$master" >"$run/master.url"
  echo "$port" >"$portfile"
  echo "http://127.0.0.1:$ui_port" >"$uifile"
  local props=$run/server.properties jars=()
  s3a_properties "$props"
  [ "${ENGAGEMENT_SPARK_S3A:-1}" = 0 ] || jars=(--jars "$(s3a_jar_list)")
  # Run from .cache/spark/run so nothing the server creates (spark-warehouse,
  # temp files) lands in the work tree. Static settings the job's config
  # files name (spark.speculation) are given here: Spark refuses to change
  # them on a running session, and the engine checks their values. The UI
  # stays on for its REST API, which the skew and spill monitors read.
  (
    cd "$run"
    export SPARK_HOME=$spark_home SPARK_LOCAL_IP=127.0.0.1
    exec setsid "$spark_home/bin/spark-submit" --class "$server_class" --name engagement-spark-connect \
      --master "$master" --driver-memory "${ENGAGEMENT_SPARK_MEMORY:-2g}" \
      --driver-java-options "${ENGAGEMENT_SPARK_JAVA_OPTS:-}" --conf spark.executor.extraJavaOptions="${ENGAGEMENT_SPARK_JAVA_OPTS:-}" \
      --properties-file "$props" "${jars[@]}" \
      --conf spark.executor.memory="$worker_mem" --conf spark.executor.cores=2 --conf spark.cores.max=2 \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf spark.connect.grpc.binding.port="$port" \
      --conf spark.driver.bindAddress=127.0.0.1 --conf spark.driver.host=127.0.0.1 \
      --conf spark.driver.port="$driver_port" --conf spark.driver.blockManager.port="$block_port" \
      --conf spark.ui.enabled=true --conf spark.ui.port="$ui_port" --conf spark.port.maxRetries=0 \
      --conf spark.ui.retainedStages=2000 --conf spark.ui.retainedTasks=200000 \
      --conf spark.speculation=false \
      --conf spark.sql.catalogImplementation=in-memory \
      --conf spark.sql.warehouse.dir="$run/spark-warehouse" \
      --conf spark.local.dir="$run/tmp" \
      --conf spark.sql.session.timeZone=UTC
  ) >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  if [ -z "${ENGAGEMENT_SPARK_MASTER:-}" ]; then
    await_worker || return $?
  fi
  await "Connect server" "$port" "$pidfile" "$log" "Spark Connect server started at: 127.0.0.1:$port"
}

# halt PIDFILE: stop the process group a pid file names.
halt() {
  local pf=$1 pid
  alive "$pf" || { rm -f "$pf"; return 0; }
  pid=$(cat "$pf")
  # setsid made each JVM its own process group: stop the group it leads
  # (the worker's group holds its executors).
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pf"; return 0; }
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pf"
}

stop() {
  halt "$pidfile"
  halt "$run/worker.pid"
  halt "$run/master.pid"
  rm -rf "$run/tmp"
}

# pids prints the worker's pid, then its executors' (the worker's children).
pids() {
  alive "$run/worker.pid" || die "no worker is running"
  local w
  w=$(cat "$run/worker.pid")
  echo "$w"
  pgrep -P "$w" 2>/dev/null || true
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
ui) cat "$uifile" 2>/dev/null || die "no server started (no $uifile)" ;;
pids) pids ;;
worker) worker ;;
pyspark) pyspark ;;
log) for f in master worker server; do echo "== $run/$f.log"; cat "$run/$f.log" 2>/dev/null || true; done ;;
*) die "usage: scripts/spark.sh install|start|stop|ui|pids|worker|pyspark|log" ;;
esac
