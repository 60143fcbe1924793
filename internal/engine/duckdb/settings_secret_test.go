package duckdb

import (
	"strings"
	"testing"
)

// TestSettingErrorsMaskSecrets: a secret-named setting DuckDB refuses (a
// misspelt key) is named without its value.
func TestSettingErrorsMaskSecrets(t *testing.T) {
	for _, key := range []string{"s3_secret_acess_key", "http_proxy_passwd"} {
		e, err := Open(t.Context(), map[string]string{key: "MARKER1"})
		if err == nil {
			e.Close()
			t.Fatalf("%s accepted", key)
		}
		if strings.Contains(err.Error(), "MARKER1") || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want the key named and its value masked", key, err)
		}
	}
}
