package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// warehouseStore opens the warehouse at where (a local path or an s3:// URL)
// and the pointer on it. A malformed location is a usage error naming flag.
func warehouseStore(ctx context.Context, env Env, flag, where string, lockTimeout time.Duration) (storage.Bucket, *objstore.Store, error) {
	loc, err := storage.Parse(where)
	if err != nil {
		return nil, nil, exitcode.UsageError(fmt.Errorf("%s: %w", flag, err))
	}
	b, err := open.Warehouse(ctx, loc, open.Options{LockTimeout: lockTimeout, Log: env.Log})
	if err != nil {
		return nil, nil, err
	}
	return b, objstore.New(b), nil
}
