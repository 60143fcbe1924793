package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
)

func runStatus(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "status")
	wh := fs.String("warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	format := fs.String("format", "table", "table or json")
	s3f := addS3Flags(fs, false)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := s3f.apply(); err != nil {
		return err
	}
	if *wh == "" {
		return exitcode.UsageError(fmt.Errorf("status: --warehouse is required"))
	}
	_, store, err := warehouseStore(ctx, env, "--warehouse", *wh, 0)
	if err != nil {
		return err
	}
	p, _, err := store.Load(ctx)
	if err != nil {
		return err
	}
	rows := reader.Status(p)
	switch *format {
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"generation": p.Generation, "updated_by_job_id": p.UpdatedByJobID, "dates": rows})
	case "table":
		fmt.Fprintf(env.Stdout, "generation %d, updated by %s\n", p.Generation, p.UpdatedByJobID)
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "date\tjob_id\tmanifest_id\tenrollment_snapshot_id\tevent_count\tunknown_lesson_count\tunknown_lesson_rate\tfact_files\tfact_rows")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t%d\t%d\n", r.Date, r.JobID, r.ManifestID, r.EnrollmentSnapshotID,
				r.EventCount, r.UnknownLessonCount, r.UnknownLessonRate, r.FactFiles, r.FactRows)
		}
		return tw.Flush()
	}
	return exitcode.UsageError(fmt.Errorf("status: --format %q: want table or json", *format))
}

func runRead(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return exitcode.UsageError(fmt.Errorf("read: name the table first: engagement read fact_lesson_engagement|course_day --warehouse W"))
	}
	table := args[0]
	fs := newFlags(env, "read")
	wh := fs.String("warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	date := fs.String("date", "", "only this event date")
	format := fs.String("format", "table", "table, csv or json")
	s3f := addS3Flags(fs, true)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if err := s3f.apply(); err != nil {
		return err
	}
	if *wh == "" {
		return exitcode.UsageError(fmt.Errorf("read: --warehouse is required"))
	}
	if *format != "table" && *format != "csv" && *format != "json" {
		return exitcode.UsageError(fmt.Errorf("read: --format %q: want table, csv or json", *format))
	}
	var only *dates.Date
	if *date != "" {
		d, err := dates.Parse(*date)
		if err != nil {
			return exitcode.UsageError(fmt.Errorf("--date: %w", err))
		}
		only = &d
	}
	b, store, err := warehouseStore(ctx, env, "--warehouse", *wh, 0)
	if err != nil {
		return err
	}
	p, _, err := store.Load(ctx)
	if err != nil {
		return err
	}
	if _, err := reader.Query(b.Location(), p, table, only); err != nil {
		return exitcode.UsageError(err)
	}
	eng, err := duckdb.Open(ctx, nil)
	if err != nil {
		return err
	}
	defer eng.Close()
	if b.Location().Scheme == storage.S3 {
		if err := enableS3(ctx, eng, *wh, *s3f.extensions); err != nil {
			return err
		}
	}
	t, err := reader.Read(ctx, eng.DB(), b.Location(), p, table, only)
	if err != nil {
		return err
	}
	return reader.Write(env.Stdout, t, *format)
}
