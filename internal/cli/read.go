package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
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
A warehouse with no pointer.json is refused (exit 2), never shown as empty.`,
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

// changedFile is the first file of table (of date only, or of every
// date) not as the pointer recorded it, with how it differs; "" if none
// is, or a stat fails (the read's own error then stands).
func changedFile(ctx context.Context, b storage.Bucket, p pointer.Pointer, table string, only *dates.Date) (string, string) {
	ds := slices.Sorted(maps.Keys(p.Dates))
	for _, d := range ds {
		if only != nil && d != *only {
			continue
		}
		files := p.Dates[d].FactFiles
		if table == engine.CourseDayTable {
			files = p.Dates[d].CourseDayFiles
		}
		bad, err := warehouse.CheckFiles(ctx, b, files)
		if err != nil || len(bad) == 0 {
			continue
		}
		return b.Location().Join(bad[0].File.Path).String(), bad[0].Why()
	}
	return "", ""
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
	t, err := reader.Read(ctx, eng.DB(), b.Location(), p, o.table, only)
	if err != nil {
		// A file changed or removed since it was published fails the
		// read with DuckDB's words (a missing column, a bad footer),
		// naming no file: name it, as status --date does.
		if f, why := changedFile(ctx, b, p, o.table, only); f != "" {
			return fmt.Errorf("read: its file %s %s: readers of the date fail; republish it with a new job id", f, why)
		}
		return err
	}
	return reader.Write(env.Stdout, t, o.format)
}
