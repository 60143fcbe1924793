package duckdb_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestSavedSecretsIgnored: a secret saved on the host (an analyst's
// CREATE PERSISTENT SECRET, in ~/.duckdb/stored_secrets) scoped to the raw
// prefix won over the engine's unscoped one, and DuckDB read the raw files
// from the server it names: a stale mirror's rows published, exit 0. The
// engine's own secret is the one a read of that prefix uses.
func TestSavedSecretsIgnored(t *testing.T) {
	ext := httpfsDir(t)
	s3test.Location(t) // the engine's secret is made from the AWS variables
	home := t.TempDir()
	t.Setenv("HOME", home)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SET extension_directory = '" + ext + "'",
		"LOAD httpfs",
		"SET secret_directory = '" + filepath.Join(home, ".duckdb", "stored_secrets") + "'",
		"CREATE PERSISTENT SECRET mirror (TYPE s3, PROVIDER config, KEY_ID 'k', SECRET 's', ENDPOINT '127.0.0.1:1', SCOPE 's3://landing/raw')",
	} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	e, err := duckdb.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.EnableAWS(context.Background(), ext); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := e.DB().QueryRowContext(context.Background(), "SELECT name FROM which_secret('s3://landing/raw/ingest_date=2026-03-02/part-0.parquet', 's3')").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != "engagement_s3" {
		t.Errorf("a read of the raw prefix uses secret %q, want the engine's engagement_s3", name)
	}
}

// TestHTTPDefaults: with S3 enabled, DuckDB's requests retry for about 13 s
// and give a request that gets no answer up after 10 s (DuckDB's own: 3
// retries in half a second, and 30 s a request, which held a publish on a
// frozen server for minutes and a SIGTERM as long).
func TestHTTPDefaults(t *testing.T) {
	ext := httpfsDir(t)
	s3test.Location(t)
	e, err := duckdb.Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.EnableAWS(t.Context(), ext); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"http_retries": "8", "http_retry_wait_ms": "100", "http_retry_backoff": "2.0", "http_timeout": "10"} {
		if got, err := duckdb.Setting(e, key); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %s", key, got, err, want)
		}
	}
}

// httpfsDir is the directory of DuckDB extensions the test command
// installs httpfs into; the test fails, never skips, without it.
func httpfsDir(t *testing.T) string {
	t.Helper()
	ext := os.Getenv(duckdb.ExtensionsEnv)
	if ext == "" {
		t.Fatalf("%s is not set: run the tests with scripts/test.sh, which installs httpfs", duckdb.ExtensionsEnv)
	}
	return ext
}
