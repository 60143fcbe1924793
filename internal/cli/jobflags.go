package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// jobFlags are the inputs and overrides shared by publish and explain. Each
// maps to a config key; a flag that is set wins over the file.
type jobFlags struct {
	origin
	configPath string
	jobID      string
	dates      string
	allowOld   bool
	keyed      map[string]*string
}

var flagKeys = []struct{ flag, key, help string }{
	{"warehouse", config.KeyWarehouse, "warehouse directory or s3://bucket/prefix (pointer, staging, rejections)"},
	{"raw", config.KeyRaw, "raw events root holding ingest_date=YYYY-MM-DD partitions (a directory or s3:// URL)"},
	{"lessons", config.KeyLessons, "lesson manifest Parquet file or directory (or s3:// URL)"},
	{"enrollments", config.KeyEnrollments, "enrollment snapshot Parquet file or directory (or s3:// URL)"},
	{"manifest-id", config.KeyManifestID, "manifest pin to join (never 'latest')"},
	{"enrollment-snapshot-id", config.KeyEnrollmentSnapshotID, "enrollment snapshot pin to join"},
	{"unknown-cap", config.KeyUnknownCap, "largest unknown-lesson rate per date that may publish (default 0.02)"},
	{"hot-courses", config.KeyHotCourses, "comma-separated course ids to salt (spark engine)"},
	{"engine", config.KeyEngine, "duckdb (default) or spark"},
	{"spark-remote", config.KeySparkRemote, "Spark Connect URL, sc://HOST:PORT (default sc://127.0.0.1:15002)"},
	{"spark-ui", config.KeySparkUI, "Spark driver's UI, http://HOST:PORT, for task metrics (default: asked of the server)"},
	{"as-of", config.KeyAsOfDate, "run date: freshness is judged on it, and only dates before it (and before today, UTC) publish (default: today, UTC)"},
	{"lock-timeout", config.KeyLockTimeout, "longest wait for the pointer's writer lock before giving up (default 5m)"},
	{"duckdb-extensions", config.KeyDuckDBExtensions, "directory of DuckDB extensions holding httpfs, for s3:// paths (default $ENGAGEMENT_DUCKDB_EXTENSIONS, else DuckDB's own)"},
	{"s3-path-style", config.KeyS3PathStyle, "S3 addressing: auto (path style for an IP or localhost endpoint), true or false (default auto)"},
}

func addJobFlags(fs *pflag.FlagSet, withJobID bool) *jobFlags {
	f := &jobFlags{origin: origin{fs}, keyed: map[string]*string{}}
	fs.StringVar(&f.configPath, "config", "", "config file (Spark properties format)")
	fs.StringVar(&f.dates, "dates", "", "comma-separated event dates YYYY-MM-DD (required)")
	if withJobID {
		fs.StringVar(&f.jobID, "job-id", "", "unique id of this attempt; names its staging prefix (required)")
	}
	// explain takes it too, so a scheduler can run it with publish's flags.
	fs.BoolVar(&f.allowOld, "allow-outside-horizon", false, "restate dates outside the restatement horizon (logged)")
	for _, k := range flagKeys {
		f.keyed[k.flag] = fs.String(k.flag, "", k.help)
	}
	return f
}

// parseJob parses the shared job flags of command name (publish or
// explain) from args and the environment, as the command does, and checks
// the job with check, touching nothing but the config file: every refusal
// is a usage error before an engine starts (FuzzJobArgs holds it to that).
func parseJob(env Env, name string, args []string, check func(config.Job) error) (config.Job, error) {
	env = env.withDefaults()
	// publish and explain have the job flags and nothing else.
	c := &cobra.Command{Use: name, Args: noArgs}
	jf := addJobFlags(c.Flags(), name == "publish")
	setOnce(c)
	c.InitDefaultHelpFlag()
	if err := c.ParseFlags(args); err != nil {
		return config.Job{}, flagError(c, err)
	}
	if help, _ := c.Flags().GetBool("help"); help {
		return config.Job{}, pflag.ErrHelp
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return config.Job{}, err
	}
	if err := applyEnv(c.Flags(), env.Lookup); err != nil {
		return config.Job{}, err
	}
	return jf.resolve(check)
}

// places resolves the config and the flags alone (no dates, job id or
// checks): where the warehouse and inputs are, for a run that failed before
// its job resolved; ok is false when even that fails.
func (f *jobFlags) places() (config.Job, bool) {
	props, err := f.props()
	if err != nil {
		return config.Job{}, false
	}
	job, err := config.Resolve(props, f.overrides())
	return job, err == nil
}

// props reads the --config file; nil without one.
func (f *jobFlags) props() (*config.Properties, error) {
	if f.configPath == "" {
		if f.fs.Changed("config") && f.env("config") == "" {
			// A template or variable that rendered nothing (the DAG's
			// engagement_config) would run on the defaults: no memory
			// limit, no hot courses, another freshness bound.
			return nil, exitcode.UsageError(fmt.Errorf("--config is empty: give the config file, or leave the flag out to run on the defaults and the ENGAGEMENT_* variables"))
		}
		return nil, nil
	}
	p, err := config.ReadFile(f.configPath)
	if err != nil {
		return nil, f.wrap("config", exitcode.UsageError(err))
	}
	return p, nil
}

// overrides are the flags and variables that set config keys.
func (f *jobFlags) overrides() []config.Override {
	var out []config.Override
	for _, k := range flagKeys {
		if f.fs.Changed(k.flag) {
			// Named as the user gave it: the flag, or the variable.
			src := f.env(k.flag)
			if src == "" {
				src = "--" + k.flag
			}
			out = append(out, config.Override{Key: k.key, Value: *f.keyed[k.flag], Source: src})
		}
	}
	return out
}

// resolve merges the config file, the environment and the flags that were
// set into a Job (flag, then environment, then file) and checks it with check.
func (f *jobFlags) resolve(check func(config.Job) error) (config.Job, error) {
	props, err := f.props()
	if err != nil {
		return config.Job{}, err
	}
	job, err := config.Resolve(props, f.overrides())
	if err != nil {
		return config.Job{}, err
	}
	var ds []dates.Date
	switch {
	case !f.fs.Changed("dates"):
		return config.Job{}, exitcode.UsageError(fmt.Errorf("--dates is required: the comma-separated event dates to publish"))
	case strings.TrimSpace(f.dates) != "":
		if ds, err = dates.ParseList(f.dates); err != nil {
			return config.Job{}, f.wrap("dates", exitcode.UsageError(fmt.Errorf("--dates: %w", err)))
		}
	}
	// A list given but empty (a script's date computation that found
	// none) reaches check: explain refuses it, publish's gate rejects it.
	job.Dates, job.JobID, job.AllowOutsideHorizon = ds, f.jobID, f.allowOld
	if f.env("job-id") != "" {
		if err := config.CheckJobID(job.JobID); err != nil {
			return config.Job{}, f.wrap("job-id", err)
		}
	}
	if err := check(job); err != nil {
		return config.Job{}, err
	}
	return job, nil
}
