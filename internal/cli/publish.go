package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/version"
)

// openEngine starts the engine the job names.
func openEngine(ctx context.Context, j config.Job) (engine.Engine, error) {
	switch j.Engine {
	case "duckdb":
		settings := map[string]string{}
		for k, v := range j.DuckDB {
			settings[k] = v
		}
		// DuckDB spills an in-memory database to ./.tmp by default; keep
		// spill files out of the user's working directory.
		if _, ok := settings["temp_directory"]; !ok && j.Warehouse != "" {
			settings["temp_directory"] = filepath.Join(os.TempDir(), "engagement-duckdb-spill")
		}
		e, err := duckdb.Open(ctx, settings)
		if err != nil {
			// A signal while the engine starts cancels the run; only a
			// setting DuckDB refuses is the user's mistake.
			if ctx.Err() != nil {
				return nil, fmt.Errorf("open duckdb: %w", ctx.Err())
			}
			return nil, exitcode.UsageError(err)
		}
		if url := onS3(j.Warehouse, j.Raw, j.Lessons, j.Enrollments); url != "" {
			if err := enableS3(ctx, e, url, j.DuckDBExtensions); err != nil {
				e.Close()
				return nil, err
			}
		}
		return e, nil
	case "spark":
		if url := onS3(j.Warehouse, j.Raw, j.Lessons, j.Enrollments); url != "" {
			return nil, exitcode.UsageError(fmt.Errorf("%s: %s spark: s3:// locations are read and written by the duckdb engine only for now; run with --engine duckdb", url, config.KeyEngine))
		}
		// A server that is down or refuses a setting is an error (exit 1),
		// not a usage error: the same command works once the server is up.
		return spark.Open(ctx, j.SparkRemote, j.Spark)
	}
	return nil, exitcode.UsageError(fmt.Errorf("%s %q: want duckdb or spark", config.KeyEngine, j.Engine))
}

// jobAndEngine parses the shared job flags, checks the job with check and
// starts its engine; the caller closes the engine.
func jobAndEngine(ctx context.Context, env Env, name string, args []string, check func(config.Job) error) (config.Job, engine.Engine, error) {
	j, err := parseJob(env, name, args, check)
	if err != nil {
		return config.Job{}, nil, err
	}
	// Before any bucket is opened (config.Resolve checked the value).
	open.PathStyle = j.S3PathStyle
	eng, err := openEngine(ctx, j)
	return j, eng, err
}

func runPublish(ctx context.Context, env Env, args []string) error {
	j, eng, err := jobAndEngine(ctx, env, "publish", args, config.Job.CheckPublish)
	if err != nil {
		return err
	}
	defer eng.Close()
	// Progress goes to stderr with the logs: a live line on a terminal, a
	// line every few seconds otherwise, and one "phase" log record per phase.
	prog := progress.New(env.Stderr, env.Log, progress.Options{})
	defer prog.Close()
	if prog.Live() {
		// On a terminal the log lines go through the printer, so they land
		// above the live line instead of inside it.
		env.Log = slog.New(slog.NewJSONHandler(prog, nil))
		prog.SetLog(env.Log)
	}
	if d, ok := eng.(*duckdb.Engine); ok {
		d.SetProgress(prog)
	}
	if len(j.ProhibitedColumns) == 0 {
		env.Log.Warn("the prohibited-column check is off: engagement.prohibitedColumns is none", "job_id", j.JobID)
	}
	wh, store, err := warehouseStore(ctx, env, "--warehouse", j.Warehouse, j.LockTimeout)
	if err != nil {
		return err
	}
	p := &job.Publisher{Engine: eng, Warehouse: wh, Store: store, Inputs: inputs.NewSource(open.Input),
		Log: env.Log, Clock: time.Now, Version: version.String(), Progress: prog}
	res, err := p.Publish(ctx, j)
	prog.Close()
	printRejection(env, res, err)
	if err != nil {
		return err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "published job_id=%s generation=%d\n", res.JobID, res.Pointer.Generation)
	for _, d := range j.Dates {
		e := res.Entries[d]
		fmt.Fprintf(&out, "  %s event_count=%d unknown_lesson_count=%d unknown_lesson_rate=%.4f fact_files=%d course_day_files=%d\n",
			d, e.EventCount, e.UnknownLessonCount, e.UnknownLessonRate, len(e.FactFiles), len(e.CourseDayFiles))
	}
	// The pointer has moved: what the exit code reports is the publish, so a
	// closed stdout (a scheduler that stopped reading) only costs the
	// summary, which the log says.
	if _, err := io.WriteString(env.Stdout, out.String()); err != nil {
		env.Log.Warn("published, but the summary could not be printed to stdout", "job_id", res.JobID,
			"generation", res.Pointer.Generation, "error", err.Error())
	}
	return nil
}

func runExplain(ctx context.Context, env Env, args []string) error {
	j, eng, err := jobAndEngine(ctx, env, "explain", args, config.Job.CheckInputs)
	if err != nil {
		return err
	}
	defer eng.Close()
	spec, err := job.ListedSpec(ctx, inputs.NewSource(open.Input), j)
	if err != nil {
		return err
	}
	plan, err := eng.Explain(ctx, spec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(env.Stdout, plan)
	return err
}
