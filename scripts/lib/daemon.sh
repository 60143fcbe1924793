# Shared by the scripts that run a test server on 127.0.0.1 (s3.sh,
# pushgateway.sh): the caller sets name, pidfile and log, and defines die.

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# shellcheck source=port.sh
source scripts/lib/port.sh

# await PORT [SECONDS [CHECK]]: wait (10 s by default) until the server
# started in the background answers on PORT, or, with CHECK, until the
# command `CHECK PORT` succeeds (a server may answer before it is ready);
# die with its log's tail if it exits or the time runs out.
await() {
  local port=$1 seconds=${2:-10} check=${3:-answers}
  for _ in $(seq 1 $((seconds * 10))); do
    if "$check" "$port"; then
      return 0
    fi
    running || { tail -n 20 "$log" >&2; die "$name exited"; }
    sleep 0.1
  done
  tail -n 20 "$log" >&2
  die "$name did not answer on 127.0.0.1:$port in $seconds s"
}

# stop [SECONDS]: end the server this script started, waiting for it to
# exit (5 s by default), then killing it.
stop() {
  local seconds=${1:-5}
  if running; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 $((seconds * 10))); do running || break; sleep 0.1; done
    if running; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true; fi
  fi
  rm -f "$pidfile"
}
