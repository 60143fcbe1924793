package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/reader"
)

// viewsWarehouse publishes the fixture's two dates to warehouse and returns
// the pointer's figures per date.
func viewsWarehouse(t *testing.T, warehouse string) map[string]int64 {
	t.Helper()
	fx := publishtest.LoadFixture(t, "")
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), fx.Args(warehouse, "views-1", "2026-03-02", "2026-03-03"), &out, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	w, err := reader.Open(context.Background(), warehouse)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := w.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]int64{}
	for _, d := range snap.Dates() {
		figures[d.Date] = d.EventCount
	}
	// Hand-counted ground truth (testdata/fixture/expected.json).
	if figures["2026-03-02"] != 973 || figures["2026-03-03"] != 974 || len(figures) != 2 {
		t.Fatalf("pointer figures %v, want 973 and 974 (expected.json)", figures)
	}
	return figures
}

func views(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), append([]string{"views"}, args...), &out, &errb); code != 0 {
		t.Fatalf("views %v: exit %d\n%s", args, code, errb.String())
	}
	return out.String()
}

// TestViewsDuckDB runs the printed DuckDB statements in DuckDB over a
// warehouse whose path holds quotes, a backtick and glob characters: the
// SQL must still parse and read exactly the listed files, and the sums per
// date must be the published figures.
func TestViewsDuckDB(t *testing.T) {
	warehouse := filepath.Join(t.TempDir(), "wh 'q\" `b` [1]?*")
	figures := viewsWarehouse(t, warehouse)
	// A sibling the glob characters would match if they were not escaped:
	// a copy of the warehouse whose files would double every sum.
	if err := os.CopyFS(filepath.Join(filepath.Dir(warehouse), "wh 'q\" `b` 1xx"), os.DirFS(warehouse)); err != nil {
		t.Fatal(err)
	}
	schema := `sch'ema"x`
	sql := views(t, "--warehouse", warehouse, "--dialect", "duckdb", "--schema", schema)
	if !strings.Contains(sql, "CREATE OR REPLACE VIEW") {
		t.Fatalf("no CREATE OR REPLACE VIEW:\n%s", sql)
	}
	db := publishtest.DB(t)
	if _, err := db.Exec(sql); err != nil {
		t.Fatalf("run views in DuckDB: %v\n%s", err, sql)
	}
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		rows, err := db.Query(fmt.Sprintf(`SELECT strftime(event_date, '%%Y-%%m-%%d'), SUM(event_count)::BIGINT FROM "sch'ema""x".%s GROUP BY 1`, table))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for rows.Next() {
			var d string
			var n int64
			if err := rows.Scan(&d, &n); err != nil {
				t.Fatal(err)
			}
			got[d] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if fmt.Sprint(got) != fmt.Sprint(figures) {
			t.Errorf("%s: SUM(event_count) per date = %v, pointer = %v", table, got, figures)
		}
	}
}

// TestViewsSpark runs the printed Spark SQL on the Spark Connect server
// (ENGAGEMENT_SPARK_REMOTE), in a schema of its own.
func TestViewsSpark(t *testing.T) {
	remote := sparktest.Remote(t)
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	figures := viewsWarehouse(t, warehouse)
	schema := fmt.Sprintf("views_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	sql := views(t, "--warehouse", warehouse, "--dialect", "spark", "--schema", schema)
	ctx := context.Background()
	eng, err := spark.Open(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	defer eng.Query(ctx, "DROP SCHEMA IF EXISTS `"+schema+"` CASCADE")
	var body []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(l, "--") {
			body = append(body, l)
		}
	}
	stmts := strings.Split(strings.TrimSpace(strings.Join(body, "\n")), ";\n")
	if len(stmts) != 3 {
		t.Fatalf("want CREATE SCHEMA and two views, got %d statements:\n%s", len(stmts), sql)
	}
	for _, s := range stmts {
		if _, err := eng.Query(ctx, strings.TrimSuffix(s, ";")); err != nil {
			t.Fatalf("run %q: %v", s, err)
		}
	}
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		rows, err := eng.Query(ctx, fmt.Sprintf("SELECT CAST(event_date AS STRING), CAST(SUM(event_count) AS BIGINT) FROM `%s`.%s GROUP BY 1", schema, table))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, r := range rows {
			d, _ := r.At(0).(string)
			n, _ := r.At(1).(int64)
			got[d] = n
		}
		if fmt.Sprint(got) != fmt.Sprint(figures) {
			t.Errorf("%s: SUM(event_count) per date = %v, pointer = %v", table, got, figures)
		}
	}
}

func TestViewsTrinoRefused(t *testing.T) {
	var out, errb strings.Builder
	code := cli.Main(context.Background(), []string{"views", "--warehouse", t.TempDir(), "--dialect", "trino"}, &out, &errb)
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "Trino cannot read an explicit file list") {
		t.Fatalf("trino: exit %d, stdout %q, stderr %q; want exit 2 explaining why", code, out.String(), errb.String())
	}
}
