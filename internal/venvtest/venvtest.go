// Package venvtest finds the Python tools the tests run from virtual
// environments that scripts under scripts/ install into .cache (Airflow,
// pyarrow), with the repo's one rule when one is missing: fail, never skip
// silently, so CI cannot pass without running them.
package venvtest

import (
	"os"
	"testing"
)

// Tool returns the path in the environment variable env (scripts/test.sh
// exports it from `bash <script> install`), or fails the test. A developer
// without the tool may set skipEnv=1 to skip on purpose; under CI that is
// ignored and a missing tool fails the run.
func Tool(t testing.TB, env, skipEnv, script string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v (run `bash %s install`)", env, p, err, script)
		}
		return p
	}
	if os.Getenv(skipEnv) == "1" && os.Getenv("CI") == "" {
		t.Skipf("%s=1: skipped on purpose", skipEnv)
	}
	t.Fatalf("%s is not set: run the tests with scripts/test.sh, which installs it, "+
		"or export %s=$(bash %s install)", env, env, script)
	return ""
}
