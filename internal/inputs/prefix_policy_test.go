package inputs

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestListPathListsNothingAbove: a pin's first open of its bucket checked
// the bucket by listing the pin's parent (the bucket's root for
// s3://b/lessons), which a policy granting s3:ListBucket under the inputs'
// prefixes only refuses: exit 2, access denied. The listing is now the
// pin's own prefix. The proxy refuses any listing above the pin.
func TestListPathListsNothingAbove(t *testing.T) {
	proxy := s3test.StartProxy(t)
	root := s3test.Location(t)
	pin := root
	pin.Key += "/lessons"
	proxy.SetRule(func(r s3test.Request) s3test.Fault {
		if r.Method == "GET" && r.Key == "" && !strings.HasPrefix(r.Prefix, pin.Key) {
			return s3test.Denied
		}
		return s3test.Pass
	})
	_, c, err := open.S3(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.New(c, pin).Put(t.Context(), "part-0.parquet", []byte("PAR1"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	opts := c.Options()
	opts.BaseEndpoint = aws.String(proxy.URL)
	via := awss3.New(opts)
	// As open.Input: one check per bucket, at its first open.
	checked := map[string]bool{}
	src := NewSource(func(ctx context.Context, loc storage.Location) (storage.Bucket, error) {
		b := s3.New(via, loc)
		if !checked[loc.Bucket] {
			if err := b.Check(ctx); err != nil {
				return nil, err
			}
			checked[loc.Bucket] = true
		}
		return b, nil
	})
	files, err := src.ListPath(t.Context(), "lessons", pin)
	if err != nil || len(files) != 1 || !strings.HasSuffix(files[0].Path, "/lessons/part-0.parquet") {
		t.Fatalf("ListPath %s with listing granted under it: %v, %v", pin, files, err)
	}
}

// TestListControlCharacterNamed: an object whose name holds a control
// character comes back from an S3 listing with U+FFFD in its place (XML
// cannot carry it), and the read of that name failed as "no such key".
// The listing refuses it, naming it and saying why.
func TestListControlCharacterNamed(t *testing.T) {
	root := s3test.Location(t)
	pin := root
	pin.Key += "/lessons-ctl"
	_, c, err := open.S3(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b := s3.New(c, pin)
	// A name that truly holds U+FFFD is read as any other.
	for _, key := range []string{"c.parquet", "d\ufffde.parquet"} {
		if _, err := b.Put(t.Context(), key, []byte("PAR1"), storage.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	src := NewSource(func(_ context.Context, loc storage.Location) (storage.Bucket, error) { return s3.New(c, loc), nil })
	if files, err := src.ListPath(t.Context(), "lessons", pin); err != nil || len(files) != 2 {
		t.Errorf("ListPath with a name truly holding U+FFFD: %v, %v; want both files", files, err)
	}
	if _, err := b.Put(t.Context(), "a\x01b.parquet", []byte("PAR1"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, err = src.ListPath(t.Context(), "lessons", pin)
	if err == nil || !strings.Contains(err.Error(), `"a\ufffdb.parquet": the store listed a name holding U+FFFD`) {
		t.Errorf("ListPath over a name with a control character: %v, want it refused naming it", err)
	}
	// In a raw partition outside the read window it is not read, so not
	// judged: every daily run failed on it, exit 1, for good.
	raw := root
	raw.Key += "/raw-ctl"
	rb := s3.New(c, raw)
	for _, key := range []string{"ingest_date=2020-01-01/a\x01b.parquet", "ingest_date=2026-03-02/c.parquet"} {
		if _, err := rb.Put(t.Context(), key, []byte("PAR1"), storage.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	d := dates.MustParse("2026-03-02")
	if _, files, err := src.ListRaw(t.Context(), raw, d, d); err != nil || len(files) != 1 {
		t.Errorf("ListRaw of 2026-03-02 beside an old partition holding such a name: %v, %v; want its one file", files, err)
	}
}
