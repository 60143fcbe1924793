package spark

import (
	"strings"
	"testing"
)

// TestForcedConflict: a forced setting at another value is refused
// naming the key; UTC under another spelling, which ran before the
// refusal existed, is not.
func TestForcedConflict(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		refused    bool
	}{
		{"spark.sql.session.timeZone", "America/Los_Angeles", true},
		{"spark.sql.session.timeZone", "Europe/London", true}, // UTC in winter only
		{"spark.sql.session.timeZone", "UTC", false},
		{"spark.sql.session.timeZone", "Etc/UTC", false},
		{"spark.sql.session.timeZone", "GMT", false},
		{"spark.sql.session.timeZone", "+00:00", false},
		{"spark.sql.parquet.filterPushdown", "true", true},
		{"spark.sql.parquet.filterPushdown", "false", false},
		{"spark.sql.shuffle.partitions", "8", false},
		{"spark.speculation", "true", true},
		{"spark.speculation", "yes", true}, // not off
		{"spark.speculation", "false", false},
		{"spark.speculation", " False ", false},
		// It let a core setting through that the server ignored (exit 0,
		// the monitors blind on a fake UI port).
		{"spark.sql.legacy.setCommandRejectsSparkCoreConfs", "false", true},
		{"spark.sql.legacy.setCommandRejectsSparkCoreConfs", "true", false},
		// Every publish failed, exit 1, naming no key.
		{"spark.sql.execution.arrow.useLargeVarTypes", "true", true},
		{"spark.sql.execution.arrow.useLargeVarTypes", "false", false},
		// Names are matched as written, as DuckDB matches a struct's fields.
		{"spark.sql.caseSensitive", "false", true},
		{"spark.sql.caseSensitive", "true", false},
		// Accepted and recorded as applied, of no effect on the cluster.
		{"spark.hadoop.fs.s3a.impl.disable.cache", "true", true},
		{"spark.hadoop.fs.s3a.secret.key", "not-the-secret", true},
	} {
		k, msg := ForcedConflict(map[string]string{tc.key: tc.value})
		if strings.Contains(msg, "not-the-secret") {
			t.Errorf("%s: the refusal shows the secret: %s", tc.key, msg)
		}
		if refused := k != ""; refused != tc.refused || (refused && (k != tc.key || !strings.Contains(msg, "not settable"))) {
			t.Errorf("%s %s: refused %q %q, want refused %v", tc.key, tc.value, k, msg, tc.refused)
		}
	}
}

// TestServerSpeculation: a server whose speculation is anything but false
// is refused, and the advice names false whatever its value.
func TestServerSpeculation(t *testing.T) {
	for _, tc := range []struct {
		value   string
		refused bool
	}{
		{"false", false},
		{"FALSE", false},
		{"true", true},
		{"TRUE", true},
		{"", true}, // read, but not off
	} {
		err := serverSpeculation("sc://h:1", tc.value)
		if (err != nil) != tc.refused {
			t.Errorf("%q: %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if err != nil && (!strings.HasSuffix(err.Error(), "--conf spark.speculation=false") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%q: %q, want one line ending in the --conf that turns it off", tc.value, err)
		}
	}
}
