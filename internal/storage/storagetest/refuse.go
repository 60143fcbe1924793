package storagetest

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/techlearningpro/engagement/internal/storage"
)

// RefusePut is a bucket whose every Put of Key is refused with a
// permission error, as a read-only or immutable file, or a policy that
// denies that one object, would refuse it; everything else passes through.
type RefusePut struct {
	storage.Bucket
	Key string
}

func (r RefusePut) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if key == r.Key {
		return storage.Attrs{}, fmt.Errorf("put %s: %w", key, fs.ErrPermission)
	}
	return r.Bucket.Put(ctx, key, data, c)
}
