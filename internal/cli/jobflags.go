package cli

import (
	"flag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// jobFlags are the inputs and overrides shared by publish and explain. Each
// maps to a config key; a flag that is set wins over the file.
type jobFlags struct {
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
	{"spark-remote", config.KeySparkRemote, "Spark Connect URL, sc://HOST:PORT"},
	{"as-of", config.KeyAsOfDate, "run date for the freshness check (default: today, UTC)"},
	{"lock-timeout", config.KeyLockTimeout, "longest wait for the pointer's writer lock before giving up (default 5m)"},
	{"duckdb-extensions", config.KeyDuckDBExtensions, "directory of DuckDB extensions holding httpfs, for s3:// paths (default $ENGAGEMENT_DUCKDB_EXTENSIONS, else DuckDB's own)"},
	{"s3-path-style", config.KeyS3PathStyle, "S3 addressing: auto (path style for an IP or localhost endpoint), true or false"},
}

func addJobFlags(fs *flag.FlagSet, withJobID bool) *jobFlags {
	f := &jobFlags{keyed: map[string]*string{}}
	fs.StringVar(&f.configPath, "config", "", "config file (Spark properties format)")
	fs.StringVar(&f.dates, "dates", "", "comma-separated event dates YYYY-MM-DD (required)")
	if withJobID {
		fs.StringVar(&f.jobID, "job-id", "", "unique id of this attempt; names its staging prefix (required)")
		fs.BoolVar(&f.allowOld, "allow-outside-horizon", false, "restate dates outside the restatement horizon (logged)")
	}
	for _, k := range flagKeys {
		f.keyed[k.flag] = fs.String(k.flag, "", k.help)
	}
	return f
}

// parseJob parses the shared job flags of command name and checks the job
// with check, touching nothing but the config file: every refusal is a
// usage error before an engine starts (FuzzJobArgs holds it to that).
func parseJob(env Env, name string, args []string, check func(config.Job) error) (config.Job, error) {
	fs := newFlags(env, name)
	jf := addJobFlags(fs, name == "publish")
	if err := parse(fs, args); err != nil {
		return config.Job{}, err
	}
	j, err := jf.resolve(fs)
	if err != nil {
		return config.Job{}, err
	}
	if err := check(j); err != nil {
		return config.Job{}, err
	}
	return j, nil
}

// resolve merges the config file and the flags that were set into a Job.
func (f *jobFlags) resolve(fs *flag.FlagSet) (config.Job, error) {
	var props *config.Properties
	if f.configPath != "" {
		p, err := config.ReadFile(f.configPath)
		if err != nil {
			return config.Job{}, exitcode.UsageError(err)
		}
		props = p
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var overrides []config.Override
	for _, k := range flagKeys {
		if set[k.flag] {
			overrides = append(overrides, config.Override{Key: k.key, Value: *f.keyed[k.flag]})
		}
	}
	job, err := config.Resolve(props, overrides)
	if err != nil {
		return config.Job{}, err
	}
	ds, err := dates.ParseList(f.dates)
	if err != nil {
		return config.Job{}, exitcode.UsageError(err)
	}
	job.Dates, job.JobID, job.AllowOutsideHorizon = ds, f.jobID, f.allowOld
	return job, nil
}
