package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/trinotest"
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
	snap := publishtest.Snapshot(t, warehouse)
	figures := map[string]int64{}
	for _, d := range snap.Dates() {
		figures[d.Date] = d.EventCount
	}
	// The generator's ground truth (testdata/fixture/expected.json).
	mon, tue := fx.Expected.ByDate[dates.MustParse("2026-03-02")].Events, fx.Expected.ByDate[dates.MustParse("2026-03-03")].Events
	if figures["2026-03-02"] != mon || figures["2026-03-03"] != tue || len(figures) != 2 || mon == 0 {
		t.Fatalf("pointer figures %v, want %d and %d (expected.json)", figures, mon, tue)
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

// TestViewsDuckDBAllOrNothing: the DuckDB statements are one transaction.
// With a course_day file unreadable, its view fails to bind; the fact
// view, created first, must not stand alone on the new generation beside
// the old course_day view (a join of the two mixed generations silently).
func TestViewsDuckDBAllOrNothing(t *testing.T) {
	warehouse := filepath.Join(t.TempDir(), "wh")
	viewsWarehouse(t, warehouse)
	sql := views(t, "--warehouse", warehouse, "--dialect", "duckdb")
	snap := publishtest.Snapshot(t, warehouse)
	d, err := snap.Date("2026-03-03")
	if err != nil {
		t.Fatal(err)
	}
	files, err := d.Files(reader.CourseDayTable)
	if err != nil || len(files) == 0 {
		t.Fatalf("course_day files of 2026-03-03: %v, %v", files, err)
	}
	if err := os.Remove(strings.TrimPrefix(files[0].URI, "file://")); err != nil {
		t.Fatal(err)
	}
	db := publishtest.DB(t)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), sql); err == nil {
		t.Fatal("the views were created over a missing file")
	}
	_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
	var n int
	if err := conn.QueryRowContext(context.Background(), "SELECT count(*) FROM duckdb_views() WHERE NOT internal").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d views created by statements that failed part way", n)
	}
}

// TestViewsSpark runs the printed Spark SQL on the Spark Connect server
// (ENGAGEMENT_SPARK_REMOTE), in a schema of its own.
func TestViewsSpark(t *testing.T) {
	remote := sparktest.Remote(t)
	// On S3 the files must be named s3a://, the cluster's S3A connector:
	// Hadoop has no s3:// filesystem, and the views named s3:// once.
	for _, backend := range []publishtest.Backend{publishtest.Local, publishtest.S3} {
		t.Run(backend.Name, func(t *testing.T) {
			warehouse := filepath.Join(t.TempDir(), "warehouse")
			if backend.OnS3() {
				warehouse = publishtest.Harness{Backend: backend}.NewWarehouse(t)
			}
			viewsSpark(t, remote, warehouse)
		})
	}
}

func viewsSpark(t *testing.T, remote, warehouse string) {
	figures := viewsWarehouse(t, warehouse)
	ctx := context.Background()
	eng, schema := sparkViews(t, remote, warehouse, "views_test")
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

// TestViewsSparkFileGone: a Spark view names a date's files by a brace
// glob, and Hadoop's glob drops an alternative that does not exist: one
// file of a split date gone read as a date with fewer rows and no error,
// where DuckDB, read and status fail. The view's guard fails it, naming the
// date; whole, the view reads the pointer's figures.
func TestViewsSparkFileGone(t *testing.T) {
	remote := sparktest.Remote(t)
	fx := publishtest.LoadFixture(t, "")
	conf, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(t.TempDir(), "small.conf")
	if err := os.WriteFile(small, append(conf, "\nengagement.targetFileBytes 2KB\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), publishtest.WithFlag(fx.Args(warehouse, "gone-1", "2026-03-02", "2026-03-03"), "--config", small), &out, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	day, err := publishtest.Snapshot(t, warehouse).Date("2026-03-02")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := day.Files(reader.FactTable)
	if len(files) < 3 {
		t.Fatalf("2026-03-02 has %d fact files: the test needs a split date", len(files))
	}
	ctx := context.Background()
	eng, schema := sparkViews(t, remote, warehouse, "views_gone")
	count := fmt.Sprintf("SELECT CAST(SUM(event_count) AS BIGINT) FROM `%s`.%s WHERE event_date = DATE '2026-03-02'", schema, reader.FactTable)
	rows, err := eng.Query(ctx, count)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := rows[0].At(0).(int64); n != day.EventCount {
		t.Fatalf("whole: SUM(event_count) %d, pointer %d", n, day.EventCount)
	}
	victim := strings.TrimPrefix(files[1].URI, "file://")
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	// Whatever else the query filters on or joins: a guard branch of its
	// own was folded away by a filter on another column and checked nothing.
	for _, q := range []string{
		count,
		fmt.Sprintf("SELECT CAST(SUM(event_count) AS BIGINT) FROM `%s`.%s WHERE course_id IS NOT NULL", schema, reader.FactTable),
		fmt.Sprintf("SELECT CAST(SUM(f.event_count) AS BIGINT) FROM `%[1]s`.%[2]s f JOIN (SELECT DISTINCT course_id FROM `%[1]s`.%[3]s) c ON f.course_id = c.course_id",
			schema, reader.FactTable, reader.CourseDayTable),
	} {
		rows, err := eng.Query(ctx, q)
		if err == nil {
			var n any
			if len(rows) > 0 {
				n = rows[0].At(0)
			}
			t.Errorf("one file of a split date gone: %s gave %v, no error", q, n)
		} else {
			t.Logf("%s: %v", q, err)
		}
	}
	// Another date, whole, still reads.
	rows, err = eng.Query(ctx, fmt.Sprintf("SELECT count(*) FROM `%s`.%s WHERE event_date = DATE '2026-03-03'", schema, reader.FactTable))
	if err != nil || len(rows) != 1 {
		t.Errorf("the whole date beside it: %v, %v", rows, err)
	}
}

// TestViewsSparkRefusesAColonGlobPath: a warehouse path holding ':' and a
// glob character is one Spark can neither read literally nor glob (the
// escaped character makes it a pattern, and Hadoop cannot parse the element
// with ':'): views exits 2 naming it, where it printed statements that
// failed on the server with an error naming neither.
func TestViewsSparkRefusesAColonGlobPath(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	warehouse := filepath.Join(t.TempDir(), "c:o[l]n")
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), fx.Args(warehouse, "colon-1", "2026-03-02"), &out, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	code := cli.Main(context.Background(), []string{"views", "--warehouse", warehouse, "--dialect", "spark"}, &out, &errb)
	if code != exitcode.Usage || !strings.Contains(errb.String(), "holds ':' and a glob character") || !strings.Contains(errb.String(), "c:o[l]n") {
		t.Errorf("views --dialect spark: exit %d, stderr %s; want exit 2 naming the path", code, errb.String())
	}
	// The other dialects read it.
	if code := cli.Main(context.Background(), []string{"views", "--warehouse", warehouse, "--dialect", "duckdb"}, &out, &errb); code != 0 {
		t.Errorf("views --dialect duckdb: exit %d", code)
	}
}

// sparkViews runs the Spark statements views prints for warehouse, in a
// schema of its own (dropped at the end of the test), and returns the
// engine they ran on and the schema.
func sparkViews(t *testing.T, remote, warehouse, prefix string) (*spark.Engine, string) {
	t.Helper()
	schema := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), time.Now().UnixNano())
	sql := views(t, "--warehouse", warehouse, "--dialect", "spark", "--schema", schema)
	ctx := context.Background()
	eng, err := spark.Open(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eng.Query(ctx, "DROP SCHEMA IF EXISTS `"+schema+"` CASCADE")
		eng.Close()
	})
	for _, s := range statements(t, sql, 3) {
		if _, err := eng.Query(ctx, s); err != nil {
			t.Fatalf("run %q: %v", s, err)
		}
	}
	return eng, schema
}

// TestViewsTrino runs the printed Trino statements on the Trino server
// (ENGAGEMENT_TRINO_URL) over a warehouse on local disk and one on S3, each
// also holding a rejected attempt (valid files of every date) and an
// abandoned one (a truncated part file, which Trino fails on if it opens
// it): the views must show exactly the published job's rows, with the
// figures of expected.json, and the statements must run again after a
// second publish, showing its rows instead.
func TestViewsTrino(t *testing.T) {
	server := trinotest.Connect(t)
	for _, backend := range []publishtest.Backend{publishtest.Local, publishtest.S3} {
		t.Run(backend.Name, func(t *testing.T) {
			h := publishtest.Harness{Backend: backend}
			warehouse := h.NewWarehouse(t)
			if !backend.OnS3() {
				// A quote and a space reach Trino in a path literal.
				warehouse = filepath.Join(warehouse, "wh 'q\" x")
			}
			viewsTrino(t, server, warehouse)
		})
	}
}

func viewsTrino(t *testing.T, server trinotest.Server, warehouse string) {
	fx := publishtest.LoadFixture(t, "")
	exp := fx.Expected
	figures := viewsWarehouse(t, warehouse)
	ds := []string{"2026-03-02", "2026-03-03"}
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), append(fx.Args(warehouse, "views-rejected", ds...), "--unknown-cap", "0.001"), &out, &errb); code != exitcode.GateRejected {
		t.Fatalf("rejected publish: exit %d, want %d\n%s", code, exitcode.GateRejected, errb.String())
	}
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		for _, d := range ds {
			if publishtest.Get(t, warehouse, "staging/job_id=views-rejected/"+table+"/event_date="+d+"/part-00000.parquet") == nil {
				t.Fatalf("the rejected attempt left no %s file for %s: the test would prove nothing", table, d)
			}
			publishtest.Put(t, warehouse, "staging/job_id=views-abandoned/"+table+"/event_date="+d+"/part-00000.parquet", []byte("PAR1 cut short"))
		}
	}

	schema := fmt.Sprintf("views_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	q := func(sql string) trinotest.Result {
		t.Helper()
		r, err := server.Query(sql)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Cleanup(func() {
		for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
			server.Query(fmt.Sprintf("DROP VIEW IF EXISTS %s.%s", schema, table))
			// External tables: dropping them leaves the files.
			server.Query(fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", schema, cli.TrinoStagingTable(warehouse, table)))
		}
		server.Query("DROP SCHEMA IF EXISTS " + schema)
	})
	run := func() {
		t.Helper()
		sql := views(t, "--warehouse", warehouse, "--dialect", "trino", "--catalog", server.Catalog, "--schema", schema)
		// CREATE SCHEMA, then each table's external table and view.
		for _, s := range statements(t, sql, 5) {
			q(s)
		}
	}
	// check compares each view's figures per date with expected.json and
	// the pointer, and returns the job ids the fact view shows per date.
	check := func() map[string]string {
		t.Helper()
		if cols := q(fmt.Sprintf("SELECT * FROM %s.%s LIMIT 0", schema, reader.FactTable)).Columns; fmt.Sprint(cols) != fmt.Sprint(engine.FactColumns) {
			t.Errorf("%s columns %v, want %v", reader.FactTable, cols, engine.FactColumns)
		}
		if cols := q(fmt.Sprintf("SELECT * FROM %s.%s LIMIT 0", schema, reader.CourseDayTable)).Columns; fmt.Sprint(cols) != fmt.Sprint(engine.CourseDayColumns) {
			t.Errorf("%s columns %v, want %v", reader.CourseDayTable, cols, engine.CourseDayColumns)
		}
		fact := rowsByDate(t, q(fmt.Sprintf(`SELECT CAST(event_date AS varchar), count(*), sum(event_count),
			sum(CASE WHEN manifest_id IS NULL THEN event_count ELSE 0 END), sum(CASE WHEN enrolled THEN event_count ELSE 0 END),
			count(DISTINCT learner_key), count(DISTINCT job_id), max(job_id),
			count_if(CAST(first_event_time AS date) <> event_date OR CAST(last_event_time AS date) <> event_date OR first_event_time > last_event_time)
			FROM %s.%s GROUP BY 1`, schema, reader.FactTable)))
		day := rowsByDate(t, q(fmt.Sprintf(`SELECT CAST(event_date AS varchar), count(*), sum(event_count),
			sum(unknown_lesson_count), sum(enrolled_event_count), sum(matched_lesson_count), count(DISTINCT job_id), max(job_id)
			FROM %s.%s GROUP BY 1`, schema, reader.CourseDayTable)))
		jobs := map[string]string{}
		for _, d := range ds {
			if len(fact[d]) != 8 || len(day[d]) != 7 {
				t.Errorf("%s: %s shows %v, %s %v", d, reader.FactTable, fact[d], reader.CourseDayTable, day[d])
				continue
			}
			e := exp.ByDate[dates.MustParse(d)]
			want := fmt.Sprint([]any{e.FactRows, e.Events, e.Unknown, e.Enrolled, e.Learners, 1})
			if got := fmt.Sprint(fact[d][:6]); got != want {
				t.Errorf("%s %s: rows, events, unknown, enrolled, learners, jobs = %s, want %s (expected.json)", reader.FactTable, d, got, want)
			}
			want = fmt.Sprint([]any{len(exp.ByDateCourse[dates.MustParse(d)]), e.Events, e.Unknown, e.Enrolled, e.Matched, 1})
			if got := fmt.Sprint(day[d][:6]); got != want {
				t.Errorf("%s %s: rows, events, unknown, enrolled, matched, jobs = %s, want %s (expected.json)", reader.CourseDayTable, d, got, want)
			}
			if fact[d][1] != figures[d] {
				t.Errorf("%s %s: %d events, the pointer says %d", reader.FactTable, d, fact[d][1], figures[d])
			}
			// The timestamps are read as the UTC instants the files hold
			// (the server runs in UTC): every one on its event date.
			if fact[d][7] != int64(0) {
				t.Errorf("%s %s: %v rows whose first or last event time is not on the event date, or out of order", reader.FactTable, d, fact[d][7])
			}
			jobs[d] = fmt.Sprint(fact[d][6])
			if day[d][6] != fact[d][6] {
				t.Errorf("%s: %s shows job %v, %s job %v", d, reader.FactTable, fact[d][6], reader.CourseDayTable, day[d][6])
			}
		}
		if len(fact) != len(ds) || len(day) != len(ds) {
			t.Errorf("dates shown: %s %v, %s %v; want %v", reader.FactTable, slices.Sorted(maps.Keys(fact)), reader.CourseDayTable, slices.Sorted(maps.Keys(day)), ds)
		}
		return jobs
	}

	run()
	if jobs := check(); fmt.Sprint(jobs) != "map[2026-03-02:views-1 2026-03-03:views-1]" {
		t.Errorf("jobs shown %v, want views-1 for both dates", jobs)
	}
	// The staging table itself lists both other attempts: the views'
	// "$path" filter keeps them out, and Trino applies it before it opens a
	// file (a LIKE on "$path" would not be: the truncated file fails it).
	root := warehouse
	if !strings.HasPrefix(warehouse, "s3://") {
		root = "local://" + warehouse
	}
	attempt := func(job string) string {
		var lits []string
		for _, d := range ds {
			lits = append(lits, "'"+strings.ReplaceAll(root+"/staging/job_id="+job+"/"+reader.FactTable+"/event_date="+d+"/part-00000.parquet", "'", "''")+"'")
		}
		return fmt.Sprintf(`SELECT count(*) FROM %s.%s WHERE "$path" IN (%s)`, schema, cli.TrinoStagingTable(warehouse, reader.FactTable), strings.Join(lits, ", "))
	}
	rejected := q(attempt("views-rejected"))
	if n := fmt.Sprint(rejected.Rows); n != fmt.Sprintf("[[%d]]", exp.ByDate[dates.MustParse(ds[0])].FactRows+exp.ByDate[dates.MustParse(ds[1])].FactRows) {
		t.Errorf("the staging table shows %s rows of the rejected attempt, want both dates' fact rows", n)
	}
	if _, err := server.Query(attempt("views-abandoned")); err == nil || !strings.Contains(err.Error(), "HIVE_BAD_DATA") {
		t.Errorf("reading the abandoned attempt's truncated files: %v, want HIVE_BAD_DATA (else the views' success proves no pruning)", err)
	}

	// A second publish of one date, then the same statements again: the
	// tables exist already, the views move to the new generation's files.
	// Its 2 KB target file size splits the date into several files under
	// split/event_date=<d>/split_part=<i>/, which the views must date too.
	conf, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(t.TempDir(), "split.conf")
	body := regexp.MustCompile(`(?m)^engagement\.targetFileBytes .*$`).ReplaceAllString(string(conf), "engagement.targetFileBytes 2KB")
	if body == string(conf) {
		t.Fatal("fixture.conf sets no engagement.targetFileBytes to shrink")
	}
	if err := os.WriteFile(small, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	args := fx.Args(warehouse, "views-2", ds[1])
	args[slices.Index(args, "--config")+1] = small
	if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("second publish: exit %d\n%s", code, errb.String())
	}
	snap := publishtest.Snapshot(t, warehouse)
	for _, d := range snap.Dates() {
		if files, _ := d.Files(reader.FactTable); d.Date == ds[1] && (len(files) < 2 || !strings.Contains(files[0].URI, "/split/")) {
			t.Fatalf("the second publish did not split %s (%d files, first %v): the test would prove nothing", ds[1], len(files), files)
		}
	}
	run()
	if jobs := check(); fmt.Sprint(jobs) != "map[2026-03-02:views-1 2026-03-03:views-2]" {
		t.Errorf("after publishing views-2 for %s: jobs shown %v", ds[1], jobs)
	}

	// A file the views list gone (gc since they were made, or damage):
	// Trino reads a missing listed file as no rows, and the date showed
	// as empty; the view fails instead, and views refuses to write one
	// over the warehouse, naming the file.
	d, err := snap.Date(ds[1])
	if err != nil {
		t.Fatal(err)
	}
	files, _ := d.Files(reader.CourseDayTable)
	gone := strings.TrimPrefix(files[0].URI, warehouse+"/")
	if err := publishtest.Bucket(t, warehouse).Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Query(fmt.Sprintf("SELECT count(*) FROM %s.%s", schema, reader.CourseDayTable)); err == nil || !strings.Contains(err.Error(), "a file it lists is gone") {
		t.Errorf("the course_day view with %s gone: %v, want it to fail saying a file it lists is gone", gone, err)
	}
	if r := q(fmt.Sprintf("SELECT count(*) FROM %s.%s", schema, reader.FactTable)); fmt.Sprint(r.Rows) == "[[0]]" {
		t.Errorf("the fact view, its files all there, shows no rows")
	}
	out.Reset()
	errb.Reset()
	code := cli.Main(context.Background(), []string{"views", "--warehouse", warehouse, "--dialect", "trino", "--catalog", server.Catalog, "--schema", schema}, &out, &errb)
	if code != exitcode.Error || out.Len() != 0 || !strings.Contains(errb.String(), path.Base(gone)) || !strings.Contains(errb.String(), "is missing") {
		t.Errorf("views with %s gone: exit %d, stdout %d bytes, stderr %q; want exit 1 naming the file", gone, code, out.Len(), errb.String())
	}
}

// statements splits views' output into its n statements, without the
// header comment or the semicolons, for servers that take one at a time.
func statements(t *testing.T, sql string, n int) []string {
	t.Helper()
	var body []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(l, "--") {
			body = append(body, l)
		}
	}
	stmts := strings.Split(strings.TrimSuffix(strings.TrimSpace(strings.Join(body, "\n")), ";"), ";\n")
	if len(stmts) != n {
		t.Fatalf("want %d statements, got %d:\n%s", n, len(stmts), sql)
	}
	return stmts
}

// rowsByDate keys a result's rows by their first column (a date), each row
// the rest of its columns, numbers as int64.
func rowsByDate(t *testing.T, r trinotest.Result) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	for _, row := range r.Rows {
		vals := make([]any, len(row)-1)
		for i, v := range row[1:] {
			if n, ok := v.(json.Number); ok {
				i64, err := n.Int64()
				if err != nil {
					t.Fatal(err)
				}
				v = i64
			}
			vals[i] = v
		}
		out[fmt.Sprint(row[0])] = vals
	}
	return out
}

// TestViewsTrinoUndatable: the trino form dates rows by their file's
// event_date directory, so a pointer entry naming a file of another date's
// directory is refused rather than shown under the wrong date.
func TestViewsTrinoUndatable(t *testing.T) {
	warehouse := filepath.Join(t.TempDir(), "wh")
	viewsWarehouse(t, warehouse)
	p := filepath.Join(warehouse, "pointer.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.ReplaceAll(string(data), "/event_date=2026-03-03/", "/event_date=2026-03-02/")
	if moved == string(data) {
		t.Fatal("pointer.json names no event_date=2026-03-03 file")
	}
	if err := os.WriteFile(p, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := cli.Main(context.Background(), []string{"views", "--warehouse", warehouse, "--dialect", "trino"}, &out, &errb)
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "event_date=2026-03-02/part-00000.parquet of 2026-03-03 is not under") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming the file and its date", code, out.String(), errb.String())
	}
}

func TestViewsCatalogFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--dialect", "duckdb", "--catalog", "lake", "--schema", "s"}, "--catalog is for --dialect trino only"},
		{[]string{"--dialect", "trino", "--catalog", "lake"}, "--catalog needs --schema"},
	} {
		var out, errb strings.Builder
		code := cli.Main(context.Background(), append([]string{"views", "--warehouse", t.TempDir()}, tc.args...), &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), tc.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, out.String(), errb.String(), tc.says)
		}
	}
}

// TestViewsNoEvents: a generation whose every date had no events lists no
// files. Its views must still be defined, in each dialect's real engine,
// with the columns and types of views over files, and show no rows.
func TestViewsNoEvents(t *testing.T) {
	full := filepath.Join(t.TempDir(), "full")
	viewsWarehouse(t, full)
	empty := filepath.Join(t.TempDir(), "empty")
	fx := publishtest.LoadFixture(t, "")
	// Its lateness partition too: a missing one, with later ones landed,
	// is an ingestion gap the publish refuses.
	publishtest.EmptyPartition(t, fx, "2026-02-27")
	publishtest.EmptyPartition(t, fx, "2026-02-28")
	var out, errb strings.Builder
	if code := cli.Main(context.Background(), append(fx.Args(empty, "views-empty", "2026-02-27"), "--allow-outside-horizon"), &out, &errb); code != 0 {
		t.Fatalf("publish the empty date: exit %d\n%s", code, errb.String())
	}
	if files, _ := publishtest.Snapshot(t, empty).Dates()[0].Files(reader.FactTable); len(files) != 0 {
		t.Fatalf("the empty date lists %d files: the test would prove nothing", len(files))
	}

	// Each dialect runs statements and returns a query's rows as text.
	type engineSQL struct {
		exec  func(t *testing.T, stmts []string)
		query func(t *testing.T, q string) [][]string
		quote func(string) string
		n     int // statements views prints over files
		empty int // and over none
		// describe lists a view's columns and types, two columns a row.
		describe func(view string) string
	}
	dialects := map[string]func(t *testing.T) engineSQL{
		"duckdb": func(t *testing.T) engineSQL {
			db := publishtest.DB(t)
			return engineSQL{
				exec: func(t *testing.T, stmts []string) {
					// One Exec, one connection: the views' BEGIN and COMMIT
					// hold for the statements between them.
					if _, err := db.Exec(strings.Join(stmts, ";\n")); err != nil {
						t.Fatalf("run %q: %v", stmts, err)
					}
				},
				query: func(t *testing.T, q string) [][]string {
					rows, err := db.Query(q)
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					defer rows.Close()
					var got [][]string
					for rows.Next() {
						var a, b any
						if err := rows.Scan(&a, &b); err != nil {
							t.Fatal(err)
						}
						got = append(got, []string{fmt.Sprint(a), fmt.Sprint(b)})
					}
					return got
				},
				quote:    func(s string) string { return `"` + s + `"` },
				n:        5, // in a transaction
				empty:    5,
				describe: func(v string) string { return "SELECT column_name, column_type FROM (DESCRIBE " + v + ")" },
			}
		},
		"spark": func(t *testing.T) engineSQL {
			remote := sparktest.Remote(t)
			ctx := context.Background()
			eng, err := spark.Open(ctx, remote, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			return engineSQL{
				exec: func(t *testing.T, stmts []string) {
					for _, s := range stmts {
						if _, err := eng.Query(ctx, s); err != nil {
							t.Fatalf("run %q: %v", s, err)
						}
					}
				},
				query: func(t *testing.T, q string) [][]string {
					rows, err := eng.Query(ctx, q)
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					var got [][]string
					for _, r := range rows {
						got = append(got, []string{fmt.Sprint(r.At(0)), fmt.Sprint(r.At(1))})
					}
					return got
				},
				quote:    func(s string) string { return "`" + s + "`" },
				n:        3,
				empty:    3,
				describe: func(v string) string { return "DESCRIBE " + v },
			}
		},
		"trino": func(t *testing.T) engineSQL {
			server := trinotest.Connect(t)
			return engineSQL{
				exec: func(t *testing.T, stmts []string) {
					for _, s := range stmts {
						if _, err := server.Query(s); err != nil {
							t.Fatalf("run %q: %v", s, err)
						}
					}
				},
				query: func(t *testing.T, q string) [][]string {
					r, err := server.Query(q)
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					var got [][]string
					for _, row := range r.Rows {
						got = append(got, []string{fmt.Sprint(row[0]), fmt.Sprint(row[1])})
					}
					return got
				},
				quote:    func(s string) string { return server.Catalog + "." + s },
				n:        5, // and each table's external table
				empty:    3,
				describe: func(v string) string { return "DESCRIBE " + v },
			}
		},
	}
	for _, dialect := range []string{"duckdb", "spark", "trino"} {
		t.Run(dialect, func(t *testing.T) {
			e := dialects[dialect](t)
			id := fmt.Sprintf("views_empty_%d_%d", os.Getpid(), time.Now().UnixNano())
			define := func(warehouse, schema string, n int) {
				args := []string{"--warehouse", warehouse, "--dialect", dialect, "--schema", schema}
				if dialect == "trino" {
					args = append(args, "--catalog", strings.Split(e.quote(""), ".")[0])
				}
				e.exec(t, statements(t, views(t, args...), n))
			}
			t.Cleanup(func() {
				for _, s := range []string{id + "_full", id + "_empty"} {
					for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
						e.exec(t, []string{"DROP VIEW IF EXISTS " + e.quote(s) + "." + table})
						if dialect == "trino" {
							for _, wh := range []string{full, empty} {
								e.exec(t, []string{"DROP TABLE IF EXISTS " + e.quote(s) + "." + cli.TrinoStagingTable(wh, table)})
							}
						}
					}
					e.exec(t, []string{"DROP SCHEMA IF EXISTS " + e.quote(s)})
				}
			})
			define(full, id+"_full", e.n)
			define(empty, id+"_empty", e.empty)
			for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
				want := e.query(t, e.describe(e.quote(id+"_full")+"."+table))
				got := e.query(t, e.describe(e.quote(id+"_empty")+"."+table))
				if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s of no events: columns and types\n%v\nwant those over files\n%v", table, got, want)
				}
				if n := e.query(t, "SELECT count(*), 0 FROM "+e.quote(id+"_empty")+"."+table); fmt.Sprint(n) != "[[0 0]]" {
					t.Errorf("%s of no events shows %v rows, want 0", table, n)
				}
			}
		})
	}
}

// TestTrinoStagingTablePerWarehouse: the trino form's external table is
// created only if missing, so each warehouse needs its own name in a schema:
// a second warehouse's views found the first one's table and filtered it for
// files it does not hold, every date empty without an error.
func TestTrinoStagingTablePerWarehouse(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, wh := range []string{a, b} {
		viewsWarehouse(t, wh)
	}
	sqlA := views(t, "--warehouse", a, "--dialect", "trino", "--catalog", "lake", "--schema", "s")
	sqlB := views(t, "--warehouse", b, "--dialect", "trino", "--catalog", "lake", "--schema", "s")
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		na, nb := cli.TrinoStagingTable(a, table), cli.TrinoStagingTable(b, table)
		if na == nb || !strings.HasPrefix(na, table+"_staging_") {
			t.Errorf("%s: staging tables %q and %q for two warehouses, want two names beginning %s_staging_", table, na, nb, table)
		}
		if !strings.Contains(sqlA, `CREATE TABLE IF NOT EXISTS "lake"."s"."`+na+`"`) || !strings.Contains(sqlB, `FROM "lake"."s"."`+nb+`"`) {
			t.Errorf("%s: the statements do not use each warehouse's table:\n%s\n%s", table, sqlA, sqlB)
		}
	}
	if again := views(t, "--warehouse", a, "--dialect", "trino", "--catalog", "lake", "--schema", "s"); again != sqlA {
		t.Errorf("views of one warehouse differ between runs: the table name must be stable")
	}
}
