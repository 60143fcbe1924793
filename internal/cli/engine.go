package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// openEngine starts the engine the job names.
func openEngine(ctx context.Context, log *slog.Logger, j config.Job) (engine.Engine, error) {
	// Both engines' own refusals, whichever runs: a config that passed on
	// one would otherwise fail the day a scheduler switches engines.
	if err := duckdb.CheckSettings(j.DuckDB); err != nil {
		return nil, exitcode.UsageError(settingWhere(j, err))
	}
	if k, msg := spark.ForcedConflict(j.Spark); k != "" {
		return nil, exitcode.UsageError(fmt.Errorf("%s (%s)%s", k, cmp.Or(j.Where[k], "the config"), msg))
	}
	switch j.Engine {
	case "duckdb":
		settings := map[string]string{}
		for k, v := range j.DuckDB {
			settings[k] = v
		}
		if dir := settings["temp_directory"]; dir != "" {
			if err := spillOutsideData(j, dir); err != nil {
				return nil, err
			}
		}
		// DuckDB spills an in-memory database to ./.tmp by default; keep
		// spill files out of the user's working directory (the engine
		// spills into a directory of its own under this one).
		if _, ok := settings["temp_directory"]; !ok && j.Warehouse != "" {
			// One a user: another user's, made first, is not writable.
			settings["temp_directory"] = filepath.Join(os.TempDir(), fmt.Sprintf("engagement-duckdb-spill-%d", os.Getuid()))
		}
		e, err := duckdb.Open(ctx, settings)
		if err != nil {
			// A signal while the engine starts cancels the run.
			if ctx.Err() != nil {
				return nil, fmt.Errorf("open duckdb: %w", ctx.Err())
			}
			return nil, openError(j, err)
		}
		if url := onS3(j.Warehouse, j.Raw, j.Lessons, j.Enrollments); url != "" {
			if err := enableS3(ctx, e, url, j.DuckDBExtensions); err != nil {
				e.Close()
				return nil, settingWhere(j, err)
			}
		}
		return e, nil
	case "spark":
		// s3:// locations reach the cluster as s3a:// URLs: the cluster
		// reads and writes them with its own S3A connector and credentials
		// (docs/spark.md), and the job moves the pointer itself.
		// A server that is down or refuses a setting is an error (exit 1),
		// not a usage error: the same command works once the server is up.
		e, err := spark.Open(ctx, j.SparkRemote, j.Spark)
		if se := (*spark.SettingError)(nil); errors.As(err, &se) && j.Where[se.Key] != "" {
			// The server's line names the key, not the config line to fix.
			return nil, fmt.Errorf("%s (%s): %w", se.Key, j.Where[se.Key], err)
		}
		if err != nil {
			return nil, err
		}
		for _, k := range e.UnknownSettings() {
			log.Warn("a spark.sql setting the Spark server does not know (misspelt, or of another Spark version): it is set on the session, and nothing reads it",
				"key", k, "where", cmp.Or(j.Where[k], "the config"))
		}
		e.SetUI(j.SparkUI)
		return e, nil
	}
	return nil, exitcode.UsageError(fmt.Errorf("%s %q: want duckdb or spark", config.KeyEngine, j.Engine))
}

// spillOutsideData refuses a duckdb.temp_directory in the warehouse or an
// input, but under a hidden name: the engine's spill directories would be
// listed with what the job reads (every later publish failed its listing
// of raw).
func spillOutsideData(j config.Job, dir string) error {
	places, err := job.Locations(j)
	if err != nil {
		return err
	}
	name, loc, ok, err := places.Holding(dir)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("duckdb.temp_directory (%s) %s: %w", cmp.Or(j.Where["duckdb.temp_directory"], "the config"), dir, err))
	}
	if ok && !underHidden(loc.Path, dir) {
		return exitcode.UsageError(fmt.Errorf("duckdb.temp_directory (%s) %s lies in %s %s: the engine's spill directories would be listed with what the job reads or readers follow; put it beside them",
			cmp.Or(j.Where["duckdb.temp_directory"], "the config"), dir, name, loc))
	}
	return nil
}

// underHidden reports whether dir lies below root under a name starting
// with "." or "_", which no listing of an input reads.
func underHidden(root, dir string) bool {
	r, err1 := filepath.Abs(root)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(r, d)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return false
	}
	return slices.ContainsFunc(strings.Split(rel, string(filepath.Separator)), inputs.Hidden)
}

// jobAndEngine resolves the shared job flags, checks the job with check and
// starts its engine; the caller closes the engine.
func jobAndEngine(ctx context.Context, log *slog.Logger, jf *jobFlags, check func(config.Job) error) (config.Job, engine.Engine, error) {
	j, err := jf.resolve(check)
	if err != nil {
		return config.Job{}, nil, err
	}
	// Before any bucket is opened (config.Resolve checked the value).
	open.PathStyle = j.S3PathStyle
	eng, err := openEngine(ctx, log, j)
	return j, eng, err
}

// openError is why the engine did not start, with its exit code: only a
// setting DuckDB or the engine refuses is the user's mistake (exit 2). An
// allocation failure on a busy worker, or a spill directory that cannot be
// made, is not: exit 1, which a scheduler retries (it was exit 2, and the
// DAG failed fast with "fix the command").
func openError(j config.Job, err error) error {
	var se *duckdb.SettingError
	if errors.As(err, &se) {
		return exitcode.UsageError(settingWhere(j, err))
	}
	return err
}

// settingWhere is err with the config's FILE:LINE of the duckdb.* key a
// *duckdb.SettingError names, when the key came from a file; the code
// stays err's.
func settingWhere(j config.Job, err error) error {
	var se *duckdb.SettingError
	if errors.As(err, &se) && j.Where["duckdb."+se.Key] != "" {
		return exitcode.UsageError(errors.New(se.In(j.Where["duckdb."+se.Key])))
	}
	return err
}
