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
	ext := os.Getenv(duckdb.ExtensionsEnv)
	if ext == "" {
		t.Fatalf("%s is not set: run the tests with scripts/test.sh, which installs httpfs", duckdb.ExtensionsEnv)
	}
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
