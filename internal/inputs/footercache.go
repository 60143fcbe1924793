package inputs

import (
	"context"
	"sync"

	"github.com/techlearningpro/engagement/internal/storage"
)

// footerCache keeps the footers of listed files that the checks have read,
// so that a file's footer is fetched once an attempt: the magic check's
// read of a file's end holds most footers whole, and the raw-footer, page
// and row checks after it read the same bytes. On an object store each read
// is a request; a small file was read four times before an engine opened
// it. Past cacheBytes nothing more is kept and a check reads as before, so
// a window of very many files costs requests, not memory.
type footerCache struct {
	mu    sync.Mutex
	kept  map[footerID][]byte
	bytes int64
	limit int64 // cacheBytes (NewSource); a field for the tests
}

// footerID is a file as the listing saw it: a file rewritten under its
// name (another size or version) is another entry, and is read again.
type footerID struct {
	path    string
	size    int64
	version string
}

// cacheBytes bounds the footers an attempt keeps: a raw window of 10,000
// files with footers of a few KB each fits well inside it.
const cacheBytes = 64 << 20

func idOf(f File) footerID { return footerID{f.Path, f.Bytes, f.Version} }

func (c *footerCache) get(f File) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, ok := c.kept[idOf(f)]
	return buf, ok
}

// put keeps a copy of buf, f's footer, while the cache has room: buf may
// be a slice of a much larger read.
func (c *footerCache) put(f File, buf []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := idOf(f)
	if _, ok := c.kept[id]; ok || c.bytes+int64(len(buf)) > c.limit {
		return
	}
	if c.kept == nil {
		c.kept = map[footerID][]byte{}
	}
	c.kept[id] = append([]byte(nil), buf...)
	c.bytes += int64(len(buf))
}

// footer is the footer of the listed file f (key in b), kept or read.
// Its bytes are shared: callers only read them.
func (s *Source) footer(ctx context.Context, b storage.Bucket, key string, f File, name string) ([]byte, error) {
	if buf, ok := s.footers.get(f); ok {
		return buf, nil
	}
	buf, err := footer(ctx, b, key, f.Bytes, name)
	if err == nil {
		s.footers.put(f, buf)
	}
	return buf, err
}
