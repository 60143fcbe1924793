// Package open turns a Location into the Bucket of its backend: the one
// place that knows every backend, so nothing else switches on a scheme.
package open

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// Options are what the backends take from the command.
type Options struct {
	// LockTimeout and Log are for a local warehouse's lock.
	LockTimeout time.Duration
	Log         *slog.Logger
}

// Warehouse opens the bucket of a warehouse: writes never go through a
// symlink below its root.
func Warehouse(ctx context.Context, loc storage.Location, o Options) (storage.Bucket, error) {
	return bucket(ctx, loc, local.Options{LockTimeout: o.LockTimeout, Log: o.Log, SweepTemps: true})
}

// Input opens the bucket of an input for reading; a local input may be laid
// out with symlinks.
func Input(ctx context.Context, loc storage.Location) (storage.Bucket, error) {
	return bucket(ctx, loc, local.Options{FollowLinks: true})
}

func bucket(ctx context.Context, loc storage.Location, lo local.Options) (storage.Bucket, error) {
	switch loc.Scheme {
	case storage.File:
		return local.New(loc.Path, lo), nil
	case storage.S3:
		return s3Bucket(ctx, loc)
	}
	return nil, fmt.Errorf("%s: unsupported location scheme %q", loc, loc.Scheme)
}
