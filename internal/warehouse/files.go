package warehouse

import (
	"context"
	"fmt"

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
	var out []FileMismatch
	for _, f := range files {
		a, err := b.Stat(ctx, f.Path)
		switch {
		case storage.IsNotExist(err):
			out = append(out, FileMismatch{File: f, Missing: true})
		case err != nil:
			return out, fmt.Errorf("check %s: %w", b.Location().Join(f.Path), err)
		case a.Size != f.Bytes:
			out = append(out, FileMismatch{File: f, Size: a.Size})
		}
	}
	return out, nil
}
