package cli

import (
	"context"
	"errors"
	"fmt"
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
	warehouse, dialect, schema string
	s3                         s3Flags
}

func newViewsCmd(env *Env) *cobra.Command {
	o := &viewsOptions{}
	c := &cobra.Command{
		Use:   "views --warehouse W --dialect duckdb|spark|trino [--schema NAME]",
		Short: "Print CREATE OR REPLACE VIEW statements over the current generation's files",
		Long: `views prints SQL that defines fact_lesson_engagement and course_day as views over
exactly the files the current pointer generation lists, each date's event_date taken
from the pointer: DuckDB reads them with read_parquet([...]), Spark SQL with one
parquet.` + "`file`" + ` relation per file joined by UNION ALL. The views name files, not
directories, so they are fixed to the generation they were printed from: print and
run them again after every publish or rollback. Trino has no faithful form (its
connectors read directories or table metadata, never a file list) and is refused
(exit 2), as is a warehouse with no pointer.json.`,
		Example: `  engagement views --warehouse warehouse --dialect duckdb | duckdb engagement.db
  engagement views --warehouse s3://curated/engagement --dialect spark --schema engagement`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runViews(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.dialect, "dialect", "", "duckdb, spark or trino (required)")
	fs.StringVar(&o.schema, "schema", "", "create the views in this schema (created if missing)")
	o.s3 = addS3Flags(fs, false)
	return c
}

// trinoRefusal is why views has no Trino form.
const trinoRefusal = "Trino cannot read an explicit file list: its Hive connector reads every file " +
	"under a table's directory and its Iceberg and Delta connectors read their own table metadata, " +
	"so a Trino view over this warehouse would also read abandoned and rejected attempts under staging/; " +
	"read through DuckDB or Spark (--dialect duckdb|spark), or the reader Go package"

func runViews(ctx context.Context, env Env, o *viewsOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("views: --warehouse is required"))
	}
	switch o.dialect {
	case "duckdb", "spark":
	case "trino":
		return exitcode.UsageError(fmt.Errorf("views: %s trino: %s", o.ref("dialect"), trinoRefusal))
	case "":
		return exitcode.UsageError(fmt.Errorf("views: --dialect is required: duckdb, spark or trino"))
	default:
		return exitcode.UsageError(fmt.Errorf("views: %s %q: want duckdb, spark or trino", o.ref("dialect"), o.dialect))
	}
	// Open through the reader package, as an outside program would; the
	// usage error for a missing warehouse is the one status and read give.
	_, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	if _, err := loadPublished(ctx, "views", o.ref("warehouse"), o.warehouse, store); err != nil {
		return err
	}
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
	sql, err := Views(w.Location(), snap, o.dialect, o.schema)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("views: %w", err))
	}
	_, err = fmt.Fprint(env.Stdout, sql)
	return err
}

// Views returns the CREATE OR REPLACE VIEW statements for both tables over
// snap's files in dialect (duckdb or spark), each ending in ";\n". Every
// path and name reaches the SQL through the dialect's own quoting.
func Views(location string, snap *reader.Snapshot, dialect, schema string) (string, error) {
	ds := snap.Dates()
	var b strings.Builder
	// strconv.Quote: a location with a newline must not end the comment.
	fmt.Fprintf(&b, "-- engagement views over %s, pointer generation %d (%d dates).\n", strconv.Quote(location), snap.Generation(), len(ds))
	b.WriteString("-- The views name the generation's files; print and run them again after every publish or rollback.\n")
	if strings.HasPrefix(location, "s3://") {
		switch dialect {
		case "duckdb":
			b.WriteString("-- S3: load httpfs with credentials, and SET s3_url_compatibility_mode = true so the URLs are read literally.\n")
		case "spark":
			b.WriteString("-- S3: the session needs an s3:// filesystem (hadoop-aws) with credentials.\n")
		}
	}
	ident := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	if dialect == "spark" {
		ident = func(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
	}
	prefix := ""
	if schema != "" {
		fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s;\n", ident(schema))
		prefix = ident(schema) + "."
	}
	for _, table := range []string{reader.FactTable, reader.CourseDayTable} {
		cols, err := internalreader.FileColumns(table)
		if err != nil {
			return "", err
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
				for _, f := range files {
					parts = append(parts, fmt.Sprintf("SELECT %s, %s AS event_date FROM %s", sel, date, spark.PathRef(f.URI)))
				}
			default:
				return "", fmt.Errorf("unknown dialect %q", dialect)
			}
		}
		if len(parts) == 0 {
			return "", fmt.Errorf("generation %d lists no %s files: nothing to define a view over", snap.Generation(), table)
		}
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s%s AS\n%s;\n", prefix, ident(table), strings.Join(parts, "\nUNION ALL\n"))
	}
	return b.String(), nil
}
