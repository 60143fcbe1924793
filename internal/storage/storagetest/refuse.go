package storagetest

import (
	"context"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/techlearningpro/engagement/internal/storage"
)

// RefusePut is a bucket whose Puts of Key fail, everything else passing
// through: with Err (a permission error when nil, as a read-only or
// immutable file, or a policy that denies that one object, gives), every
// time, or the next Left times when Left is set (a server's 503s).
type RefusePut struct {
	storage.Bucket
	Key  string
	Err  error
	Left *atomic.Int32
}

func (r RefusePut) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if key == r.Key && (r.Left == nil || r.Left.Add(-1) >= 0) {
		err := r.Err
		if err == nil {
			err = fs.ErrPermission
		}
		return storage.Attrs{}, fmt.Errorf("put %s: %w", key, err)
	}
	return r.Bucket.Put(ctx, key, data, c)
}
