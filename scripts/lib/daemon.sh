# Shared by the scripts that run a test server on 127.0.0.1 (s3.sh,
# pushgateway.sh): the caller sets name, pidfile and log, and defines die.

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# await PORT: wait (10 s at most) until the server started in the background
# answers on PORT; die with its log's tail if it exits or never answers.
await() {
  local port=$1
  for _ in $(seq 1 100); do
    if answers "$port"; then
      return 0
    fi
    running || { tail -n 20 "$log" >&2; die "$name exited"; }
    sleep 0.1
  done
  tail -n 20 "$log" >&2
  die "$name did not answer on 127.0.0.1:$port"
}

# stop ends the server this script started, waiting up to 5 s.
stop() {
  if running; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 50); do running || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
}
