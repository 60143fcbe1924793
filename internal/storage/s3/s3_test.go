package s3_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket { return s3test.Bucket(t) })
}

// TestKeyUnderAnObject: the test server stores objects as files, so a key
// under an object is refused (409 ObjectParentIsFile). That is no failed
// condition: read as one, a pointer write retried 256 times (two minutes)
// and a staging claim blamed another attempt. It is a permanent refusal
// (exit 2), naming the key and the code, at once.
func TestKeyUnderAnObject(t *testing.T) {
	b := s3test.Bucket(t)
	if _, err := b.Put(t.Context(), "pointer-history", []byte("stray"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	for _, cond := range []storage.Cond{{}, {IfAbsent: true}} {
		_, err := b.Put(t.Context(), "pointer-history/1.json", []byte("{}"), cond)
		if errors.Is(err, storage.ErrPrecondition) || !errors.Is(err, storage.ErrRefused) ||
			!strings.Contains(err.Error(), "pointer-history/1.json") || !strings.Contains(err.Error(), "ObjectParentIsFile") {
			t.Errorf("put under an object (%+v): %v, want a refusal naming the key and ObjectParentIsFile", cond, err)
		}
	}
}

// TestKeyTooLong: a key the server refuses as too long is a permanent
// refusal naming the key, on a read and on a write, not a failure to retry.
// The test server, file-backed, says KeyTooLongError for a 300-byte name
// at the bucket's top level (under a prefix it answers as if the key were
// absent), so the bucket is opened at its root; the PUT is refused, so
// nothing is left there.
func TestKeyTooLong(t *testing.T) {
	loc := s3test.Location(t)
	loc.Key = ""
	b, err := open.Warehouse(t.Context(), loc, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("k", 300) + "/pointer.json"
	_, _, getErr := b.Get(t.Context(), key)
	_, putErr := b.Put(t.Context(), key, []byte("{}"), storage.Cond{IfAbsent: true})
	for op, err := range map[string]error{"get": getErr, "put": putErr} {
		if !errors.Is(err, storage.ErrRefused) || !errors.Is(err, exitcode.ErrUsage) ||
			!strings.Contains(err.Error(), "KeyTooLongError") || !strings.Contains(err.Error(), key) {
			t.Errorf("%s of a 300-byte name: %v, want a refusal naming the key and KeyTooLongError", op, err)
		}
	}
}
