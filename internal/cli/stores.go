package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// warehouseStore opens the warehouse at where (a local path or an s3:// URL)
// and the pointer on it. A malformed location is a usage error naming flag.
func warehouseStore(ctx context.Context, env Env, flag, where string, lockTimeout time.Duration) (storage.Bucket, *objstore.Store, error) {
	if err := edgeSpace(flag, where); err != nil {
		return nil, nil, err
	}
	loc, err := storage.Parse(where)
	if err != nil {
		return nil, nil, exitcode.UsageError(fmt.Errorf("%s: %w", flag, err))
	}
	if !loc.IsS3() {
		// A file where the warehouse should be is the command's mistake
		// (a retry would meet it again), not a failure to read.
		if fi, err := os.Stat(loc.Path); err == nil && !fi.IsDir() {
			return nil, nil, exitcode.UsageError(fmt.Errorf("%s %s is a file, not a warehouse directory", flag, where))
		}
	}
	// A bucket the store refuses for good (missing, denied) or no
	// credentials at all come marked as usage errors from the store.
	b, err := open.Warehouse(ctx, loc, open.Options{LockTimeout: lockTimeout, Log: env.Log})
	if err != nil {
		return nil, nil, err
	}
	return b, objstore.New(b), nil
}

// loadPublished loads the pointer of the warehouse at where for a reader
// (status, read). A warehouse with no pointer.json (a mistyped path, or
// nothing published yet) is a usage error naming it: an empty table would
// read as "nothing published" when the command looked in the wrong place.
func loadPublished(ctx context.Context, cmd, flag, where string, store *objstore.Store) (pointer.Pointer, error) {
	p, v, err := store.Load(ctx)
	if err != nil {
		return pointer.Pointer{}, err
	}
	if v == pointer.NoVersion {
		// A history without its pointer is a warehouse that lost
		// pointer.json, not a mistyped path: the person on call must not
		// be sent looking for one.
		newest, lost, err := pointer.Lost(ctx, store)
		if err != nil {
			return pointer.Pointer{}, fmt.Errorf("%s: no pointer.json at %s, and its history cannot be listed: %w", cmd, where, err)
		}
		if lost {
			return pointer.Pointer{}, fmt.Errorf("%s: %w", cmd, pointer.LostError(where, newest))
		}
		if newest == 1 {
			// Not the command's mistake: the next publish rolls generation
			// 1 forward, and a retry then sees it (exit 1; status and read
			// of one date say it is not published yet, exit 5).
			return pointer.Pointer{}, fmt.Errorf("%s: %w", cmd, &loneFirstError{pointer.LoneFirst(where)})
		}
		begun, err := attemptsBegun(ctx, store.Bucket())
		if err != nil {
			// Not "no warehouse" (exit 2, failed at once): the listing
			// may work on a retry.
			return pointer.Pointer{}, fmt.Errorf("%s: no pointer.json at %s, and its staging/ and rejections/ cannot be listed: %w", cmd, where, err)
		}
		if newest == 0 && begun {
			// A first publish running, or rejected: a warehouse all the
			// same. A sensor asking for a date waits on it (notYet).
			return pointer.Pointer{}, exitcode.UsageError(&noneYetError{fmt.Sprintf("%s: nothing is published at %s yet: it holds attempts (staging/ or rejections/) but no pointer.json, as while its first publish runs or after it was rejected", cmd, where)})
		}
		return pointer.Pointer{}, exitcode.UsageError(fmt.Errorf("%s: no warehouse at %s (no pointer.json): nothing was published there; check %s", cmd, where, flag))
	}
	return p, nil
}

// noneYetError: a warehouse whose first publish has not moved the
// pointer yet (exit 2, but for one date asked: exit 5, notYet).
type noneYetError struct{ msg string }

func (e *noneYetError) Error() string { return e.msg }

// attemptsBegun reports whether the warehouse root holds engagement's own
// attempts: a staging/job_id=<id>/_attempt.json or a
// rejections/job_id=<id>.json. A staging/ of another tool's (a data
// lake's layer, a mistyped --warehouse) is none: that path stays "no
// warehouse", exit 2.
func attemptsBegun(ctx context.Context, b storage.Bucket) (bool, error) {
	files, _, err := b.ListDir(ctx, warehouse.RejectionsRoot)
	if err != nil && !storage.IsNotExist(err) {
		return false, err
	}
	for _, f := range files {
		if _, ok := warehouse.RecordJobID(path.Base(f.Key)); ok {
			return true, nil
		}
	}
	_, dirs, err := b.ListDir(ctx, warehouse.StagingRoot)
	if storage.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, d := range dirs {
		id, ok := warehouse.StagingJobID(d)
		if !ok {
			continue
		}
		if _, err := b.Stat(ctx, warehouse.AttemptPath(id)); err == nil {
			return true, nil
		} else if !storage.IsNotExist(err) {
			return false, err
		}
	}
	return false, nil
}

// loneFirstError: the warehouse's first publish stopped after committing
// generation 1 and before pointer.json; readers see nothing yet.
type loneFirstError struct{ msg string }

func (e *loneFirstError) Error() string { return e.msg }

// notYet is err as exit 5 (D not published yet) when it is a first publish
// not yet visible and the command asked about one date, which a sensor
// waits on; err otherwise.
func notYet(err error, date string) error {
	var lf *loneFirstError
	if date != "" && errors.As(err, &lf) {
		return exitcode.NotPublishedError(fmt.Errorf("%s is not published yet: %w", date, err))
	}
	// Not wrapped: the usage mark would win over exit 5.
	var ny *noneYetError
	if date != "" && errors.As(err, &ny) {
		return exitcode.NotPublishedError(fmt.Errorf("%s is not published yet: %s", date, ny.msg))
	}
	return err
}

// s3Flags are the S3 settings of the commands that take no config file
// (status, read, gc); publish and explain have them as config keys.
type s3Flags struct {
	origin
	pathStyle, extensions *string
}

func addS3Flags(fs *pflag.FlagSet, withExtensions bool) s3Flags {
	f := s3Flags{origin: origin{fs}, pathStyle: fs.String("s3-path-style", "auto", "S3 addressing: auto (path style for an IP or localhost endpoint), true or false")}
	if withExtensions {
		f.extensions = fs.String("duckdb-extensions", "", "directory of DuckDB extensions holding httpfs, for s3:// (default $ENGAGEMENT_DUCKDB_EXTENSIONS)")
	}
	return f
}

func (f s3Flags) apply() error { return setPathStyle(f.ref("s3-path-style"), *f.pathStyle) }

// setPathStyle sets S3 addressing before any bucket is opened.
func setPathStyle(name, v string) error {
	switch v {
	case "auto", "true", "false":
		open.PathStyle = v
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("%s %q: want auto, true or false", name, v))
}

// onS3 returns the first of the locations that is an s3:// URL, or "".
func onS3(locations ...string) string {
	for _, l := range locations {
		if loc, err := storage.Parse(l); err == nil && loc.Scheme == storage.S3 {
			return l
		}
	}
	return ""
}

// enableS3 hands DuckDB's httpfs the S3 configuration and credentials the
// tool's own client resolved through the AWS chain (duckdb.EnableAWS). url is the
// location that needs it, named in an error; extDir is
// engagement.duckdbExtensions or --duckdb-extensions.
func enableS3(ctx context.Context, eng *duckdb.Engine, url, extDir string) error {
	if err := eng.EnableAWS(ctx, extDir); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return exitcode.UsageError(fmt.Errorf("%s: %w", url, err))
	}
	return nil
}

// localDir refuses, for a flag that names a directory on this machine, a
// URL or a mistyped one (s3://b/x, s3:/b/x) and white space at an end:
// each would be written into a local directory of that name, exit 0.
func localDir(flag, p string) error {
	if err := edgeSpace(flag, p); err != nil {
		return err
	}
	loc, err := storage.Parse(p)
	if err == nil && loc.IsS3() || strings.Contains(p, "://") {
		return exitcode.UsageError(fmt.Errorf("%s %s: a directory on this machine, not a URL", flag, p))
	}
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("%s: %w", flag, err))
	}
	return nil
}

// sinkPath refuses a sink file's path that holds what a shell would have
// expanded (a leading ~, $HOME, ${TMPDIR} further on): from a scheduler's
// arguments, where no shell runs, --metrics-file '${HOME}/m.prom' failed to
// write after the run, a warning and exit 0, and the metrics never came.
// The location flags refuse the same (storage.Parse, the config's checks).
func sinkPath(flag, p string) error {
	if v := config.Unexpanded(p); v != "" {
		return exitcode.UsageError(fmt.Errorf("%s %s holds %s, which no shell expanded here: write the path in full", flag, p, v))
	}
	return nil
}

// edgeSpace refuses a path flag with white space at an end: a variable
// ending in a newline names another file or directory than the one meant
// ("engagement.prom " no textfile collector reads), and a message printing
// it would not show why.
func edgeSpace(flag, p string) error {
	if strings.TrimSpace(p) != p {
		return exitcode.UsageError(fmt.Errorf("%s %q has white space at an end: remove it", flag, p))
	}
	return nil
}
