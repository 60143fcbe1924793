package s3_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// client is the process's S3 client, pointed at endpoint when not "".
func client(t *testing.T, endpoint string) *awss3.Client {
	t.Helper()
	_, c, err := open.S3(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if endpoint == "" {
		return c
	}
	opts := c.Options()
	opts.BaseEndpoint = aws.String(endpoint)
	return awss3.New(opts)
}

// TestDeletePrefixDirectoryMarkers: keys ending in "/" (the S3 console's
// "Create folder", s3fs, Hadoop's S3A) under a staging prefix, and on the
// prefix itself, go with it. Refused as keys, they stopped gc part way
// through the prefix on every run (exit 1).
func TestDeletePrefixDirectoryMarkers(t *testing.T) {
	loc := s3test.Location(t)
	c := client(t, "")
	b := s3.New(c, loc)
	if _, err := b.Put(t.Context(), "staging/job_id=a/_attempt.json", []byte("{}"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), "staging/job_id=b/_attempt.json", []byte("{}"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	// And a key with a backslash, which Delete refuses as a name.
	for _, marker := range []string{"staging/job_id=a/", "staging/job_id=a/fact_lesson_engagement/_temporary/0/", `staging/job_id=a/fact\part-0.parquet`} {
		if _, err := c.PutObject(t.Context(), &awss3.PutObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key + "/" + marker), Body: bytes.NewReader(nil)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeletePrefix(t.Context(), "staging/job_id=a"); err != nil {
		t.Fatalf("delete a prefix holding directory markers: %v", err)
	}
	left, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range left {
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "staging/job_id=b/_attempt.json" {
		t.Errorf("left %v, want only staging/job_id=b/_attempt.json", keys)
	}
}

// TestCheckListsOwnPrefix: the check that opens a location lists under
// the location, not the bucket's root, which a least-privilege policy
// (s3:ListBucket granted under some prefixes) refuses: every command
// failed there as "access denied".
func TestCheckListsOwnPrefix(t *testing.T) {
	proxy := s3test.StartProxy(t)
	proxy.SetRule(func(r s3test.Request) s3test.Fault {
		if r.Method == "GET" && r.Key == "" && r.Prefix == "" {
			return s3test.Denied // a listing of the root
		}
		return s3test.Pass
	})
	c := client(t, proxy.URL)
	loc := s3test.Location(t)
	if err := s3.New(c, loc).Check(t.Context()); err != nil {
		t.Errorf("check of %s, listing granted under it: %v", loc, err)
	}
	loc.Key = ""
	if err := s3.New(c, loc).Check(t.Context()); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("check of the bucket's root, its listing denied: %v, want access denied", err)
	}
}

// TestDeletePrefixAbortsUploads: a writer stopped mid-upload (DuckDB's
// httpfs on a SIGTERM) leaves a multipart upload, with a stored part,
// under the staging prefix. No object listing shows it; deleting the
// prefix aborts it (gc left it, and its parts, for ever). An upload under
// another prefix is left alone.
func TestDeletePrefixAbortsUploads(t *testing.T) {
	loc := s3test.Location(t)
	c := client(t, "")
	b := s3.New(c, loc)
	if _, err := b.Put(t.Context(), "staging/job_id=a/_attempt.json", []byte("{}"), storage.Cond{}); err != nil {
		t.Fatal(err)
	}
	start := func(key string) {
		up, err := c.CreateMultipartUpload(t.Context(), &awss3.CreateMultipartUploadInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key + "/" + key)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadPart(t.Context(), &awss3.UploadPartInput{Bucket: aws.String(loc.Bucket), Key: aws.String(loc.Key + "/" + key),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("PAR1 part of a file"))}); err != nil {
			t.Fatal(err)
		}
	}
	start("staging/job_id=a/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet")
	start("staging/job_id=a/course_day/event_date=2026-03-02/part-00000.parquet")
	start("staging/job_id=b/course_day/event_date=2026-03-02/part-00000.parquet")
	if err := b.DeletePrefix(t.Context(), "staging/job_id=a"); err != nil {
		t.Fatalf("delete a prefix holding uploads: %v", err)
	}
	out, err := c.ListMultipartUploads(t.Context(), &awss3.ListMultipartUploadsInput{Bucket: aws.String(loc.Bucket), Prefix: aws.String(loc.Key + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, strings.TrimPrefix(aws.ToString(u.Key), loc.Key+"/"))
	}
	if want := []string{"staging/job_id=b/course_day/event_date=2026-03-02/part-00000.parquet"}; strings.Join(left, ",") != strings.Join(want, ",") {
		t.Errorf("uploads left %q, want %q", left, want)
	}
}
