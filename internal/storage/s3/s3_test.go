package s3_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
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
