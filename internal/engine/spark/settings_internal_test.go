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
	} {
		k, msg := ForcedConflict(map[string]string{tc.key: tc.value})
		if refused := k != ""; refused != tc.refused || (refused && (k != tc.key || !strings.Contains(msg, "not settable"))) {
			t.Errorf("%s %s: refused %q %q, want refused %v", tc.key, tc.value, k, msg, tc.refused)
		}
	}
}
