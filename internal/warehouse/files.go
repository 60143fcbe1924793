package warehouse

import (
	"context"
	"fmt"
	"sync"

	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// FileMismatch is a file a pointer entry names that is not as the pointer
// recorded it: missing, or of another size.
type FileMismatch struct {
	File    pointer.File
	Missing bool
	Size    int64 // the size found, when not Missing
}

// Why says how the file differs: "is missing", or its size against the
// recorded one.
func (m FileMismatch) Why() string {
	if m.Missing {
		return "is missing"
	}
	return fmt.Sprintf("holds %d bytes, the pointer recorded %d", m.Size, m.File.Bytes)
}

// CheckFiles stats each of files and returns those not as recorded, in
// order. A stat that fails otherwise is the error, naming the file.
func CheckFiles(ctx context.Context, b storage.Bucket, files []pointer.File) ([]FileMismatch, error) {
	// A few at a time: on an object store each is a request, and read of a
	// table checks every file of every date before it reads (one at a
	// time, 285 files added about 6 s on S3).
	type result struct {
		m   *FileMismatch
		err error
	}
	results := make([]result, len(files))
	sem := make(chan struct{}, statWorkers)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			a, err := b.Stat(ctx, f.Path)
			switch {
			case storage.IsNotExist(err):
				results[i].m = &FileMismatch{File: f, Missing: true}
			case err != nil:
				results[i].err = fmt.Errorf("check %s: %w", b.Location().Join(f.Path), err)
			case a.Size != f.Bytes:
				results[i].m = &FileMismatch{File: f, Size: a.Size}
			}
		}()
	}
	wg.Wait()
	var out []FileMismatch
	for _, r := range results {
		if r.err != nil {
			return out, r.err
		}
		if r.m != nil {
			out = append(out, *r.m)
		}
	}
	return out, nil
}

// statWorkers is how many files CheckFiles stats at once.
const statWorkers = 8
