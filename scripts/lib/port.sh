# Shared by the scripts that start a server on 127.0.0.1 (daemon.sh's
# callers, spark.sh).
#
# free_port [TAKEN...]: print a port free on 127.0.0.1 that is not one of
# TAKEN, chosen outside the kernel's ephemeral range. A port the kernel hands
# out for bind(0) or for an outgoing connection can be taken by any process
# between this pick and the server's bind: a Spark JVM binds several ports of
# its own at random before its Connect port, and once took the one picked for
# it (the server exited, the port still answered). A port outside that range
# is only ever taken by asking for it. Outside it too, a connect to a port
# nobody listens on cannot meet itself (a TCP self-connect, which answers).
free_port() {
  python3 - "$@" <<'PY'
import random, socket, sys

taken = {int(a) for a in sys.argv[1:]}
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = map(int, f.read().split())
except OSError:
    lo, hi = 32768, 60999
ranges = [(a, b) for a, b in ((10000, lo - 1), (hi + 1, 65535)) if b - a >= 1000]
for _ in range(500):
    if ranges:
        a, b = random.choice(ranges)
        port = random.randint(a, b)
    else:
        # No room outside the range: the kernel's pick is the best left.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
    if port in taken:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    sys.exit(0)
sys.exit("free_port: no free port on 127.0.0.1 after 500 tries")
PY
}
