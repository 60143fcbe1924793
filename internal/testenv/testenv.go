// Package testenv holds the repo's one rule for the external parts tests
// talk to (the Spark Connect server, the S3 server, Chromium, the Python
// virtual environments): scripts/test.sh starts or installs each and
// exports where it is; a test that finds it missing fails, never skips
// silently, so CI cannot pass without running it. A developer without the
// part may skip on purpose with its ENGAGEMENT_SKIP_* variable, which is
// ignored under CI.
package testenv

import (
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// Require returns the value of env, or fails the test saying how to get
// one. With skipEnv=1 outside CI it skips instead.
func Require(t testing.TB, env, skipEnv, how string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	Missing(t, env+" is not set", skipEnv, how)
	return ""
}

// Missing fails the test for a missing part (what), or skips it when the
// developer set skipEnv=1 outside CI.
func Missing(t testing.TB, what, skipEnv, how string) {
	t.Helper()
	if os.Getenv(skipEnv) == "1" && os.Getenv("CI") == "" {
		t.Skipf("%s=1: skipped on purpose", skipEnv)
	}
	t.Fatalf("%s: %s", what, how)
}

// Tool returns the path of a tool that script installs into .cache and
// scripts/test.sh exports as env, or fails the test.
func Tool(t testing.TB, env, skipEnv, script string) string {
	t.Helper()
	p := Require(t, env, skipEnv, "run the tests with scripts/test.sh, which installs it, or export "+env+"=$(bash "+script+" install)")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v (run `bash %s install`)", env, p, err, script)
	}
	return p
}

// Silent listens on a local port, accepts every connection and never
// answers, as a stalled server, proxy or credentials endpoint does; it
// returns the address (host:port), closed with the test.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// ChdirDeep makes the test's working directory one whose absolute path is
// past the system's limit on a path (4,096 bytes), made and entered a
// level at a time, as only relative paths reach it: where a path cannot
// be resolved from /, a check comparing paths must not take it for
// another (reviews CV, CW).
func ChdirDeep(t *testing.T) {
	t.Helper()
	t.Chdir(t.TempDir())
	for depth := 0; depth < 4200; depth += 201 {
		name := strings.Repeat("d", 200)
		if err := os.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chdir(name); err != nil {
			t.Fatal(err)
		}
	}
}
