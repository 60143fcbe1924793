package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/exitcode"
	internalreader "github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/reader"
)

// viewsOptions are views' flags.
type viewsOptions struct {
	origin
	warehouse, dialect, catalog, schema string
	s3                                  s3Flags
}

func newViewsCmd(env *Env) *cobra.Command {
	o := &viewsOptions{}
	c := &cobra.Command{
		Use:   "views --warehouse W --dialect duckdb|spark|trino [--catalog NAME] [--schema NAME]",
		Short: "Print CREATE OR REPLACE VIEW statements over the current generation's files",
		Long: `views prints SQL that defines fact_lesson_engagement and course_day as views over
exactly the files the current pointer generation lists, each date's event_date taken
from the pointer: DuckDB reads them with read_parquet([...]), Spark SQL with one
parquet.` + "`dir/{a,b}`" + ` relation per directory (S3 files as s3a://) joined by UNION ALL. Trino's Hive connector takes
no file list, so the trino form first creates (if missing) one external PARQUET table
per published table over the warehouse's staging/ prefix, <table>_staging_<digest of its location>, which
lists every attempt, and defines each view as that table filtered by "$path" to the
generation's files, its event_date taken from the file's event_date=YYYY-MM-DD
directory; the catalog needs hive.recursive-directories=true (docs/readers.md). The
views name files, not directories, so they are fixed to the generation they were
printed from: print and run them again after every publish or rollback. A table none
of whose published dates has events gets a view of no rows with the same columns. A
warehouse with no pointer.json is refused (exit 2).`,
		Example: `  engagement views --warehouse warehouse --dialect duckdb | duckdb engagement.db
  engagement views --warehouse s3://curated/engagement --dialect spark --schema engagement
  engagement views --warehouse s3://curated/engagement --dialect trino --catalog lake --schema engagement >views.sql
  trino --server https://trino.example.com --file views.sql`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runViews(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.dialect, "dialect", "", "duckdb, spark or trino (required)")
	fs.StringVar(&o.catalog, "catalog", "", "trino only: qualify every name with this catalog (a Hive catalog; needs --schema)")
	fs.StringVar(&o.schema, "schema", "", "create the views in this schema (created if missing)")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runViews(ctx context.Context, env Env, o *viewsOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("views: --warehouse is required"))
	}
	switch o.dialect {
	case "duckdb", "spark", "trino":
	case "":
		return exitcode.UsageError(fmt.Errorf("views: --dialect is required: duckdb, spark or trino"))
	default:
		return exitcode.UsageError(fmt.Errorf("views: %s %q: want duckdb, spark or trino", o.ref("dialect"), o.dialect))
	}
	if o.catalog != "" && o.dialect != "trino" {
		return exitcode.UsageError(fmt.Errorf("views: %s is for --dialect trino only", o.ref("catalog")))
	}
	if o.catalog != "" && o.schema == "" {
		return exitcode.UsageError(fmt.Errorf("views: %s needs --schema: Trino names a table catalog.schema.table", o.ref("catalog")))
	}
	// Open through the reader package, as an outside program would; the
	// usage error for a missing warehouse is the one status and read give.
	wh, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	p, err := loadPublished(ctx, "views", o.ref("warehouse"), o.warehouse, store)
	if err != nil {
		return err
	}
	warnEdited(ctx, env, wh, store, p)
	w, err := reader.Open(ctx, o.warehouse)
	if err != nil {
		return err
	}
	snap, err := w.Current(ctx)
	if errors.Is(err, reader.ErrNoWarehouse) {
		// Removed between the two loads.
		return exitcode.UsageError(fmt.Errorf("views: %w", err))
	}
	if err != nil {
		return err
	}
	if snap.Generation() != p.Generation {
		// A publish or rollback landed between the two loads: the files
		// checked below would not be the ones the views name.
		return fmt.Errorf("views: the pointer moved from generation %d to %d while the views were built: run views again", p.Generation, snap.Generation())
	}
	sql, err := Views(w.Location(), snap, o.dialect, o.catalog, o.schema)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("views: %w", err))
	}
	// A view over a file that is gone fails every query on DuckDB and
	// Spark and read as no rows on Trino: refuse to write one (a stat a
	// file, as status --date).
	c, bad, err := firstChanged(ctx, wh, p, nil, "")
	if err != nil {
		return fmt.Errorf("views: %w", err)
	}
	if bad {
		return fmt.Errorf("views: %s of generation %d: its file %s %s: a view over it would fail or show other rows than were published; republish the date with a new job id",
			c.date, p.Generation, c.where, c.why)
	}
	_, err = fmt.Fprint(env.Stdout, sql)
	return err
}

// Views returns the statements defining both tables' views over snap's
// files in dialect (duckdb, spark or trino), each ending in ";\n": CREATE
// OR REPLACE VIEW, after CREATE SCHEMA IF NOT EXISTS with a schema, and for
// trino the CREATE TABLE IF NOT EXISTS of the external tables the views
// filter. catalog (trino only) qualifies every name. Every path and name
// reaches the SQL through the dialect's own quoting.
func Views(location string, snap *reader.Snapshot, dialect, catalog, schema string) (string, error) {
	ds := snap.Dates()
	var b strings.Builder
	// strconv.Quote: a location with a newline must not end the comment.
	fmt.Fprintf(&b, "-- engagement views over %s, pointer generation %d (%d dates).\n", strconv.Quote(location), snap.Generation(), len(ds))
	b.WriteString("-- The views name the generation's files; print and run them again after every publish or rollback.\n")
	s3 := strings.HasPrefix(location, "s3://")
	switch {
	case dialect == "duckdb" && s3:
		b.WriteString("-- S3: load httpfs with credentials, and SET s3_url_compatibility_mode = true so the URLs are read literally.\n")
	case dialect == "spark" && s3:
		b.WriteString("-- S3: the files are named s3a://, for the session's S3A connector (hadoop-aws) with credentials.\n")
	case dialect == "trino":
		b.WriteString("-- Trino: a Hive catalog with hive.recursive-directories=true and hive.timestamp-precision=MICROSECONDS")
		if s3 {
			b.WriteString(", and fs.native-s3.enabled=true with credentials.\n")
		} else {
			b.WriteString(", and fs.native-local.enabled=true with local.location=/ on every node.\n")
		}
		b.WriteString("-- The *_staging_* tables list every attempt under staging/; query the views, which read only the generation's files.\n")
	}
	if dialect == "duckdb" {
		// One transaction: a view that fails to bind (an unreadable file)
		// must not leave the other on the new generation and this one on
		// the old, which a join of the two would mix without an error.
		b.WriteString("BEGIN TRANSACTION;\n")
	}
	ident := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	if dialect == "spark" {
		ident = func(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
	}
	prefix := ""
	if catalog != "" {
		prefix = ident(catalog) + "."
	}
	if schema != "" {
		fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s%s;\n", prefix, ident(schema))
		prefix += ident(schema) + "."
	}
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		cols, err := internalreader.FileColumns(table)
		if err != nil {
			return "", err
		}
		if dialect == "trino" {
			stmts, err := trinoView(location, snap, table, cols, prefix, ident)
			if err != nil {
				return "", err
			}
			b.WriteString(stmts)
			continue
		}
		sel := strings.Join(cols, ", ")
		var parts []string
		for _, d := range ds {
			files, _ := d.Files(table)
			if len(files) == 0 {
				continue
			}
			date := "DATE '" + d.Date + "'" // d.Date is YYYY-MM-DD, parsed
			switch dialect {
			case "duckdb":
				uris := make([]string, len(files))
				for i, f := range files {
					uris[i] = f.URI
				}
				part, err := internalreader.SelectDate(table, d.Date, uris)
				if err != nil {
					return "", err
				}
				parts = append(parts, part)
			case "spark":
				uris := make([]string, len(files))
				withRows := 0
				for i, f := range files {
					uris[i] = f.URI
					if f.Rows > 0 {
						withRows++
					}
				}
				rels, err := spark.Relations(uris)
				if errors.Is(err, spark.ErrPathUnreadable) {
					return "", exitcode.UsageError(fmt.Errorf("--dialect spark: %w", err))
				}
				if err != nil {
					return "", err
				}
				guard := sparkGuard(table, d.Date, rels, withRows, snap.Generation())
				for _, rel := range rels {
					parts = append(parts, fmt.Sprintf("SELECT %s, %s AS event_date FROM %s%s", sel, date, rel, guard))
				}
			default:
				return "", fmt.Errorf("unknown dialect %q", dialect)
			}
		}
		if len(parts) == 0 {
			stmt, err := emptyView(dialect, table, cols, prefix+ident(table), ident)
			if err != nil {
				return "", err
			}
			b.WriteString(stmt)
			continue
		}
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s%s AS\n%s;\n", prefix, ident(table), strings.Join(parts, "\nUNION ALL\n"))
	}
	if dialect == "duckdb" {
		b.WriteString("COMMIT;\n")
	}
	return b.String(), nil
}

// sparkGuard is the WHERE clause of a Spark view's branches of one date
// that fails unless every file of the date that holds rows is read. A
// date's files are named by brace globs (spark.Relations), and Hadoop's glob
// drops an alternative that does not exist: one file of a split date gone
// (a gc that stopped part way, an object lost) read as a date with fewer
// rows, without an error, where DuckDB, read and status fail. In the branch
// itself, an uncorrelated scalar subquery run once: a branch of its own, of
// constant columns, was folded away by any filter on another column (a
// course_id, the IS NOT NULL of a join) and checked nothing. A query
// filtered to other dates prunes the branch, guard and all.
func sparkGuard(table, date string, rels []string, withRows int, generation int64) string {
	if withRows == 0 {
		return ""
	}
	scans := make([]string, len(rels))
	for i, rel := range rels {
		scans[i] = "SELECT _metadata.file_path AS f FROM " + rel
	}
	msg := fmt.Sprintf("engagement %s view of generation %d: a file of %s it lists is gone (gc ran since the view was made, or the warehouse was damaged): run engagement views again",
		table, generation, date)
	return fmt.Sprintf(" WHERE (SELECT IF(count(DISTINCT f) = %d, true, raise_error('%s')) FROM (%s))",
		withRows, strings.ReplaceAll(msg, "'", "\\'"), strings.Join(scans, " UNION ALL "))
}

// datedStagingFile reports whether rel (below staging/) is one of table's
// files of date as both engines stage them: job_id=<id>/<table>/event_date=<date>/<file>,
// or for a date split by bytes job_id=<id>/<table>/split/event_date=<date>/split_part=<i>/<file>.
func datedStagingFile(rel, table, date string) bool {
	parts := strings.Split(rel, "/")
	if len(parts) < 4 || !strings.HasPrefix(parts[0], "job_id=") || parts[1] != table {
		return false
	}
	rest := parts[2:]
	if rest[0] == "split" {
		if len(rest) != 4 || !strings.HasPrefix(rest[2], "split_part=") {
			return false
		}
		rest = []string{rest[1], rest[3]}
	}
	return len(rest) == 2 && rest[0] == "event_date="+date && rest[1] != ""
}

// columnTypes are the written files' column types in each dialect's SQL,
// by dialect (Trino's as its Hive connector names them, timestamp at the
// catalog's hive.timestamp-precision; the files hold microseconds in UTC).
var columnTypes = map[string]map[string]string{
	"duckdb": {"string": "VARCHAR", "int64": "BIGINT", "timestamp": "TIMESTAMPTZ", "bool": "BOOLEAN", "date": "DATE"},
	"spark":  {"string": "STRING", "int64": "BIGINT", "timestamp": "TIMESTAMP", "bool": "BOOLEAN", "date": "DATE"},
	"trino":  {"string": "varchar", "int64": "bigint", "timestamp": "timestamp(6)", "bool": "boolean", "date": "date"},
}

// columnKinds are the kinds of columnTypes of every column of both tables.
var columnKinds = map[string]string{
	"learner_key": "string", "lesson_id": "string", "course_id": "string", "manifest_id": "string",
	"lesson_title": "string", "event_count": "int64", "first_event_time": "timestamp",
	"last_event_time": "timestamp", "enrolled": "bool", "enrollment_snapshot_id": "string",
	"job_id": "string", "matched_lesson_count": "int64", "unknown_lesson_count": "int64",
	"enrolled_event_count": "int64", "learner_count": "int64", "event_date": "date",
}

// columnType is column's type in dialect.
func columnType(dialect, table, column string) (string, error) {
	typ, ok := columnTypes[dialect][columnKinds[column]]
	if !ok {
		return "", fmt.Errorf("no %s type for column %s of %s", dialect, column, table)
	}
	return typ, nil
}

// emptyView defines table's view when the generation lists none of its
// files (every published date had no events): no rows, the columns and
// types of a view over files, so a query of it reads zero, not an error.
func emptyView(dialect, table string, cols []string, name string, ident func(string) string) (string, error) {
	sel := make([]string, 0, len(cols)+1)
	for _, c := range append(slices.Clone(cols), "event_date") {
		typ, err := columnType(dialect, table, c)
		if err != nil {
			return "", err
		}
		sel = append(sel, fmt.Sprintf("CAST(NULL AS %s) AS %s", typ, ident(c)))
	}
	return fmt.Sprintf("-- %s: no published date has events, so no files: a view of no rows.\nCREATE OR REPLACE VIEW %s AS\nSELECT %s WHERE false;\n",
		table, name, strings.Join(sel, ", ")), nil
}

// trinoEventDate takes event_date from the file's partition directory, the
// last one in its path but a split date's split_part=<i>/, so a warehouse
// path holding "event_date=" cannot match instead.
const trinoEventDate = `CAST(regexp_extract("$path", '/event_date=(\d{4}-\d{2}-\d{2})/(split_part=\d+/)?[^/]*$', 1) AS date)`

// trinoView is the Trino form of table's view: the external table over
// staging/ (created once; its location never changes with the generation)
// and the view that keeps only the generation's files of it. Trino's Hive
// connector drops files whose "$path" the predicate excludes while it lists
// them, before it opens any, so rejected or half-written attempts are never
// read. The staging paths Trino reports are the location it is given joined
// with each file's relative path, so the literals are built the same way.
// TrinoStagingTable is the name of the external table over location's
// staging/ prefix that table's Trino view filters. The name holds a digest
// of the location: the table is created only if missing, and a second
// warehouse's views in the same schema, or a moved warehouse's, found the
// first one's table and filtered it for files it does not hold, every date
// empty without an error.
func TrinoStagingTable(location, table string) string {
	sum := sha256.Sum256([]byte(location + "/staging"))
	return table + "_staging_" + hex.EncodeToString(sum[:4])
}

func trinoView(location string, snap *reader.Snapshot, table string, cols []string, prefix string, ident func(string) string) (string, error) {
	root := location
	if !strings.HasPrefix(location, "s3://") {
		// Trino's local file system reads local://<path under local.location>;
		// with local.location=/ that is the absolute path.
		root = "local://" + location
	}
	staging := location + "/staging/"
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	defs := make([]string, len(cols))
	nulls := make([]string, 0, len(cols)+1) // the guard's row, below
	for i, c := range cols {
		typ, err := columnType("trino", table, c)
		if err != nil {
			return "", err
		}
		defs[i] = "  " + ident(c) + " " + typ
		nulls = append(nulls, fmt.Sprintf("CAST(NULL AS %s)", typ))
	}
	nulls = append(nulls, "CAST(NULL AS date)")
	var paths []string
	withRows := 0
	for _, d := range snap.Dates() {
		files, _ := d.Files(table)
		for _, f := range files {
			if f.Rows > 0 {
				withRows++
			}
			rel, ok := strings.CutPrefix(f.URI, staging)
			// The view takes event_date from the path: a file outside its
			// date's directory would be given another date, or none.
			if !ok || !datedStagingFile(rel, table, d.Date) {
				return "", fmt.Errorf("%s file %s of %s is not under %sjob_id=*/%s/event_date=%s/: the trino form cannot date it", table, f.URI, d.Date, staging, table, d.Date)
			}
			paths = append(paths, "  "+lit(root+"/staging/"+rel))
		}
	}
	if len(paths) == 0 {
		return emptyView("trino", table, cols, prefix+ident(table), ident)
	}
	ext := prefix + ident(TrinoStagingTable(location, table))
	// The guard: Trino reads a listed file that is gone (gc after the
	// view was made, or a damaged warehouse) as no rows, where DuckDB and
	// Spark fail; a dashboard showed zeros. The second branch is one row
	// of an aggregate, so its filter runs even when no file is left, and
	// fails unless every listed file that holds rows shows its path.
	msg := fmt.Sprintf("engagement %s view of generation %d: a file it lists is gone (gc ran since the view was made, or the warehouse was damaged): run engagement views again", table, snap.Generation())
	in := strings.Join(paths, ",\n")
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n%s\n) WITH (external_location = %s, format = 'PARQUET');\n"+
		"CREATE OR REPLACE VIEW %s%s AS\nSELECT %s, %s AS event_date\nFROM %s\nWHERE \"$path\" IN (\n%s\n)\n"+
		"UNION ALL\nSELECT %s\nFROM (SELECT count(DISTINCT \"$path\") AS files FROM %s WHERE \"$path\" IN (\n%s\n))\nWHERE IF(files = %d, false, fail(%s));\n",
		ext, strings.Join(defs, ",\n"), lit(root+"/staging"),
		prefix, ident(table), strings.Join(cols, ", "), trinoEventDate, ext, in,
		strings.Join(nulls, ", "), ext, in, withRows, lit(msg)), nil
}
