package duckdb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
)

// TestTildeNamedDirectory: a relative path that begins with "~" names a
// directory of that name, not one under $HOME: DuckDB expands a leading ~
// with no slash after it too ("~w" became "$HOMEw"), and read showed that
// directory's files while status showed the pointer's.
func TestTildeNamedDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", filepath.Join(dir, "home"))
	e, err := duckdb.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	// The decoy where DuckDB's expansion of ~w/a.parquet lands, and the file
	// the path names.
	for v, p := range map[int]string{2: filepath.Join(dir, "homew", "a.parquet"), 1: filepath.Join(dir, "~w", "a.parquet")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := e.DB().ExecContext(ctx, "COPY (SELECT "+string(rune('0'+v))+" AS v) TO "+duckdb.FileRef(p)+" (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	if err := e.DB().QueryRowContext(ctx, "SELECT v FROM read_parquet("+duckdb.FileRef("~w/a.parquet")+")").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Errorf("~w/a.parquet read the file of value %d, want 1 (2 is $HOME's)", got)
	}
	if got := duckdb.FileRef("~w/a.parquet"); got != "'./~w/a.parquet'" {
		t.Errorf("FileRef = %s", got)
	}
}
