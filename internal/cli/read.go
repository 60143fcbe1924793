package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
)

// readOptions are read's table argument and flags.
type readOptions struct {
	origin
	table, warehouse, date, format string
	s3                             s3Flags
}

func newReadCmd(env *Env) *cobra.Command {
	o := &readOptions{}
	c := &cobra.Command{
		Use:   "read TABLE --warehouse W [--date D] [--format table|csv|json]",
		Short: "Print a published table as readers see it",
		Long: `read prints fact_lesson_engagement or course_day as a reader sees it: the pointer
first, then exactly the files it lists, with event_date taken from the pointer.
A warehouse with no pointer.json is refused (exit 2), never shown as empty; but with
--date, one whose first publish has written its attempt is "not published yet" (exit 5),
and one whose pointer.json was lost (its history is there) is exit 1.`,
		Example: `  engagement read course_day --warehouse warehouse --date 2026-03-02
  engagement read fact_lesson_engagement --warehouse s3://curated/engagement --format csv > fact.csv`,
		ValidArgs: []cobra.Completion{engine.FactTable, engine.CourseDayTable},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "" {
				return exitcode.UsageError(fmt.Errorf("read: name the table first: engagement read %s|%s --warehouse W", engine.FactTable, engine.CourseDayTable))
			}
			return noArgs(c, args[1:])
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.table = args[0]
			return runRead(c.Context(), *env, o)
		},
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.date, "date", "", "only this event date; exit 5 when it is not published")
	fs.StringVar(&o.format, "format", "table", "table, csv or json")
	o.s3 = addS3Flags(fs, true)
	return c
}

func runRead(ctx context.Context, env Env, o *readOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	if o.warehouse == "" {
		return exitcode.UsageError(fmt.Errorf("read: --warehouse is required"))
	}
	if o.format != "table" && o.format != "csv" && o.format != "json" {
		return exitcode.UsageError(fmt.Errorf("read: %s %q: want table, csv or json", o.ref("format"), o.format))
	}
	only, err := o.origin.date("", "date", o.date)
	if err != nil {
		return err
	}
	// The table first: a sensor's misspelt table is its mistake (exit
	// 2), never a date to wait on.
	if _, err := reader.FileColumns(o.table); err != nil {
		return exitcode.UsageError(fmt.Errorf("read: %w", err))
	}
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	p, err := loadPublished(ctx, "read", o.ref("warehouse"), o.warehouse, store)
	if err != nil {
		day := ""
		if only != nil {
			day = only.String()
		}
		return notYet(err, day)
	}
	if _, err := reader.Query(b.Location(), p, o.table, only); err != nil {
		return exitcode.UsageError(err)
	}
	if only != nil {
		if _, ok := p.Dates[*only]; !ok {
			// Not an empty table: a reader must not take "nothing yet"
			// for "nothing happened" (exit 5, as status --date).
			return exitcode.NotPublishedError(fmt.Errorf("read: %s is not published in %s (generation %d)", *only, o.warehouse, p.Generation))
		}
	}
	warnEdited(ctx, env, b, store, p)
	// Every listed file first, by its recorded size and rows, as status
	// --date does: a file replaced by another valid one (a rewrite with
	// fewer rows) read without an error, and printed part of a day, exit 0.
	if c, ok, err := firstChanged(ctx, b, p, only, o.table); err != nil {
		return fmt.Errorf("read: %w", err)
	} else if ok {
		return fmt.Errorf("read: its file %s %s: readers of the date fail or see other rows than were published; republish it with a new job id", c.where, c.why)
	}
	eng, err := duckdb.Open(ctx, nil)
	if err != nil {
		return err
	}
	defer eng.Close()
	if b.Location().Scheme == storage.S3 {
		if err := enableS3(ctx, eng, o.warehouse, *o.s3.extensions); err != nil {
			return err
		}
	}
	// Rows stream to stdout, none held (a date's fact rows are millions on
	// a design day). A failed read still prints no row: the query's ORDER
	// BY has DuckDB read every file before it returns the first, so a file
	// it cannot read fails the query first.
	rw, err := reader.NewRowWriter(env.Stdout, reader.Columns(o.table), o.format)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("read: %w", err))
	}
	rows := 0
	err = reader.Each(ctx, eng.DB(), b.Location(), p, o.table, only, func(r []any) error {
		rows++
		return rw.Row(r)
	})
	if err != nil && rows == 0 && ctx.Err() == nil {
		// Every file had its published size (checked above), yet one
		// fails the read with DuckDB's words (a page it cannot decode),
		// naming no file: each file is read alone to name it.
		if bad, why := unreadableFile(ctx, eng, b, p, only, o.table); bad != "" && ctx.Err() == nil {
			return fmt.Errorf("read: its file %s cannot be read (%s), though its size is the one published: it was damaged in place; readers of the date fail; republish it with a new job id", bad, why)
		}
		return err
	}
	if err != nil {
		return err
	}
	return rw.Close()
}

// unreadableFile is the first file of table (of date only, when given)
// that DuckDB fails to read alone, and its error's first line; "" when
// each reads.
func unreadableFile(ctx context.Context, eng *duckdb.Engine, b storage.Bucket, p pointer.Pointer, only *dates.Date, table string) (string, string) {
	cols, err := reader.FileColumns(table)
	if err != nil {
		return "", ""
	}
	for _, d := range slices.Sorted(maps.Keys(p.Dates)) {
		if only != nil && d != *only {
			continue
		}
		files := p.Dates[d].FactFiles
		if table == engine.CourseDayTable {
			files = p.Dates[d].CourseDayFiles
		}
		for _, f := range files {
			if ctx.Err() != nil {
				// A signal: no file is to blame.
				return "", ""
			}
			uri := b.Location().Join(f.Path).String()
			// Every value decoded: a count alone reads only the footer.
			q := "SELECT count(DISTINCT hash(" + strings.Join(cols, ", ") + ")) FROM read_parquet(" + duckdb.FileList([]string{uri}) + ")"
			var n int64
			if err := eng.DB().QueryRowContext(ctx, q).Scan(&n); err != nil && ctx.Err() == nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				return uri, first
			}
		}
	}
	return "", ""
}
