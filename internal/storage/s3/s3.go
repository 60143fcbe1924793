// Package s3 is the storage.Bucket of an S3 bucket and key prefix, through
// aws-sdk-go-v2: any S3-compatible server that honours conditional writes
// (If-None-Match: * to create, If-Match: <etag> to replace, 412 when the
// condition fails). A 412 is ErrPrecondition, never a success; an access
// refusal or a missing bucket is ErrRefused; a missing object wraps
// fs.ErrNotExist.
// Every error names the object's s3:// URL and the service's error code.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Bucket is a storage.Bucket on S3.
type Bucket struct {
	client *awss3.Client
	loc    storage.Location
}

var (
	_ storage.Bucket = (*Bucket)(nil)
	_ storage.Prober = (*Bucket)(nil)
)

// New returns the bucket of loc (an s3:// location) through client.
func New(client *awss3.Client, loc storage.Location) *Bucket {
	return &Bucket{client: client, loc: loc}
}

// Location implements storage.Bucket.
func (b *Bucket) Location() storage.Location { return b.loc }

// full is the object key of a bucket-relative key.
func (b *Bucket) full(key string) string {
	if b.loc.Key == "" {
		return key
	}
	if key == "" {
		return b.loc.Key
	}
	return b.loc.Key + "/" + key
}

func (b *Bucket) uri(key string) string { return b.loc.Join(key).String() }

// rel turns an object key back into a bucket-relative key.
func (b *Bucket) rel(full string) string {
	if b.loc.Key == "" {
		return full
	}
	return strings.TrimPrefix(full, b.loc.Key+"/")
}

// wrap names the object and classifies the service's answer.
func (b *Bucket) wrap(op, key string, err error) error {
	code, status := classify(err)
	where := b.uri(key)
	switch {
	case code == "NoSuchBucket":
		// Not fs.ErrNotExist: a missing bucket must never read as "no
		// pointer yet" or "no partitions".
		return fmt.Errorf("%s %s: bucket %q does not exist (NoSuchBucket): check the URL and AWS_ENDPOINT_URL: %w", op, where, b.loc.Bucket, permanent)
	case (status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound") && code != userNotFound:
		return fmt.Errorf("%s %s: %w (%s)", op, where, fs.ErrNotExist, orStatus(code, status))
	case code == "ObjectParentIsFile":
		// A file-backed server's 409 for a key under an object: no retry
		// or new job id helps, and read as a failed condition it spun 256
		// times or blamed another attempt. (Its 409 for a directory in an
		// object's place, ExistingObjectIsDirectory, is a failed create
		// that storage.Create tells apart by listing.)
		return fmt.Errorf("%s %s: the server refuses the key (%s): an object stands where engagement needs a prefix; check the URL and move the stray object: %w",
			op, where, code, permanent)
	case code == "KeyTooLongError":
		// Read as a bare 400 it was a retryable exit 1, and a rerun meets
		// it again.
		return fmt.Errorf("%s %s: the server refuses the key as too long (%s): S3 keys are at most 1,024 bytes, and a file-backed server may allow no more than 255 between slashes; shorten the URL: %w",
			op, where, code, permanent)
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed" || code == "ConditionalRequestConflict" || status == http.StatusConflict:
		return fmt.Errorf("%s %s: %w (%s)", op, where, storage.ErrPrecondition, orStatus(code, status))
	case status == http.StatusForbidden || code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == userNotFound:
		return fmt.Errorf("%s %s: access denied (%s): check the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...) and their permissions on the bucket: %w",
			op, where, orStatus(code, status), permanent)
	case status == http.StatusNotImplemented:
		return fmt.Errorf("%s %s: the server does not implement this request (%s): %w", op, where, orStatus(code, status), permanent)
	case code == "AuthorizationHeaderMalformed" || code == "InvalidToken" || code == "ExpiredToken" || code == "InvalidRegion":
		return fmt.Errorf("%s %s: the request's signature was refused (%s): check AWS_REGION and the credentials (AWS_SESSION_TOKEN): %w",
			op, where, code, permanent)
	}
	return fmt.Errorf("%s %s: %w", op, where, err)
}

func orStatus(code string, status int) string {
	if code != "" {
		return code
	}
	return fmt.Sprintf("HTTP %d", status)
}

// userNotFound is versitygw's answer, a 404, to an access key it does not
// know: refused credentials, not a missing object.
const userNotFound = "XAdminUserNotFound"

// permanent marks a refusal no retry changes until someone changes the
// URL, the credentials or their permissions (a missing bucket, access
// denied, a request the server does not implement): it reads as
// storage.ErrRefused and is a usage error (exit 2) wherever it is met,
// an input's bucket as much as the warehouse's.
var permanent error = permanentRefusal{}

type permanentRefusal struct{}

// Error is true of a read as of a write: ErrRefused's own words ("refused
// before writing") ended a status's or a listing's refusal too.
func (permanentRefusal) Error() string { return "refused by the store" }
func (permanentRefusal) Is(target error) bool {
	return target == storage.ErrRefused || target == exitcode.ErrUsage
}

// classify returns the service's error code and HTTP status, if any.
func classify(err error) (string, int) {
	var code string
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return code, re.HTTPStatusCode()
	}
	return code, 0
}

// Get implements storage.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, storage.Attrs, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, storage.Attrs{}, err
	}
	in := &awss3.GetObjectInput{Bucket: aws.String(b.loc.Bucket), Key: aws.String(b.full(key))}
	data, out, err := b.getObject(ctx, key, in, -1)
	if err != nil {
		return nil, storage.Attrs{}, err
	}
	return data, storage.Attrs{Size: int64(len(data)), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
}

// ReadRange implements storage.Bucket with an HTTP range request, so only
// the bytes asked for cross the network.
func (b *Bucket) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	if n <= 0 {
		return []byte{}, nil
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	if off < 0 {
		rng = fmt.Sprintf("bytes=-%d", -off)
	}
	in := &awss3.GetObjectInput{Bucket: aws.String(b.loc.Bucket), Key: aws.String(b.full(key)), Range: aws.String(rng)}
	data, out, err := b.getObject(ctx, key, in, n)
	if err != nil {
		return nil, err
	}
	if out.ContentRange == nil && off != 0 {
		// A server that ignored the range sent the object from its
		// first byte: those bytes are not the ones asked for.
		return nil, b.wrap("read", key, fmt.Errorf("asked for %s, the server sent the whole object (no Content-Range)", rng))
	}
	return data, nil
}

// bodyAttempts is how many times a GET is sent when its body fails part
// way (a reset, a stall): the SDK retries a request only until its
// headers arrive, and a single lost connection failed a publish whose
// pointer had moved ("outcome unknown").
const bodyAttempts = 4

// BodyIdleTimeout ends a GET whose body sends nothing for this long (tests
// shorten it): the headers' timeout is over once they arrive, and a
// stalled peer still answers TCP keepalives.
var BodyIdleTimeout = 30 * time.Second

// bodyError is a GET whose reply began and whose body then failed.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// getObject sends in and reads at most limit bytes of its body (limit < 0:
// all), sending it again when the body fails part way.
func (b *Bucket) getObject(ctx context.Context, key string, in *awss3.GetObjectInput, limit int64) ([]byte, *awss3.GetObjectOutput, error) {
	var last error
	for attempt := range bodyAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, nil, b.wrap("read", key, errors.Join(ctx.Err(), last))
			case <-time.After((100 * time.Millisecond) << attempt):
			}
		}
		data, out, err := b.getOnce(ctx, in, limit)
		var be *bodyError
		if err != nil && errors.As(err, &be) && ctx.Err() == nil {
			last = err // the body broke off: send it again
			continue
		}
		if err != nil {
			return nil, nil, b.wrap("read", key, err)
		}
		return data, out, nil
	}
	return nil, nil, b.wrap("read", key, fmt.Errorf("%d attempts: %w", bodyAttempts, last))
}

func (b *Bucket) getOnce(ctx context.Context, in *awss3.GetObjectInput, limit int64) ([]byte, *awss3.GetObjectOutput, error) {
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, err := b.client.GetObject(reqCtx, in)
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	var stalled atomic.Bool
	timer := time.AfterFunc(BodyIdleTimeout, func() { stalled.Store(true); cancel() })
	defer timer.Stop()
	var r io.Reader = &idleReader{r: out.Body, timer: timer}
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		if stalled.Load() {
			err = fmt.Errorf("no byte for %v: %w", BodyIdleTimeout, err)
		}
		return nil, nil, &bodyError{err}
	}
	return data, out, nil
}

// idleReader restarts timer on every read that returns bytes.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(BodyIdleTimeout)
	}
	return n, err
}

// Stat implements storage.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (storage.Attrs, error) {
	if err := storage.CheckKey(key); err != nil {
		return storage.Attrs{}, err
	}
	out, err := b.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(b.loc.Bucket), Key: aws.String(b.full(key))})
	if err != nil {
		return storage.Attrs{}, b.wrap("stat", key, err)
	}
	return storage.Attrs{Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Put implements storage.Bucket: one PutObject, with If-None-Match: * for
// IfAbsent and If-Match for IfMatch. A PUT is whole or not at all on S3.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, c storage.Cond) (storage.Attrs, error) {
	if err := storage.CheckKey(key); err != nil {
		return storage.Attrs{}, err
	}
	in := &awss3.PutObjectInput{
		Bucket: aws.String(b.loc.Bucket), Key: aws.String(b.full(key)),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	}
	switch {
	case c.IfAbsent:
		in.IfNoneMatch = aws.String("*")
	case c.IfMatch != "":
		in.IfMatch = aws.String(c.IfMatch)
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		err = b.wrap("write", key, err)
		if c.IfMatch != "" && storage.IsNotExist(err) {
			// S3 answers If-Match on a missing object with 404: the
			// version asked for is not there, as with a 412.
			return storage.Attrs{}, fmt.Errorf("%w: %w", storage.ErrPrecondition, err)
		}
		return storage.Attrs{}, err
	}
	return storage.Attrs{Size: int64(len(data)), Version: aws.ToString(out.ETag)}, nil
}

// List implements storage.Bucket with ListObjectsV2 pages.
func (b *Bucket) List(ctx context.Context, prefix string) ([]storage.Object, error) {
	p := awss3.NewListObjectsV2Paginator(b.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(b.loc.Bucket), Prefix: aws.String(b.full(prefix)),
	})
	var out []storage.Object
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, b.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, b.object(o))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (b *Bucket) object(o types.Object) storage.Object {
	return storage.Object{Key: b.rel(aws.ToString(o.Key)), Attrs: storage.Attrs{
		Size: aws.ToInt64(o.Size), Version: aws.ToString(o.ETag), ModTime: aws.ToTime(o.LastModified)}}
}

// ListDir implements storage.Bucket with a "/" delimiter: the common
// prefixes are the directories.
func (b *Bucket) ListDir(ctx context.Context, dir string) ([]storage.Object, []string, error) {
	prefix := b.full(dir)
	if prefix != "" {
		prefix += "/"
	}
	p := awss3.NewListObjectsV2Paginator(b.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(b.loc.Bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/"),
	})
	var files []storage.Object
	var dirs []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, b.wrap("list", dir, err)
		}
		for _, o := range page.Contents {
			if aws.ToString(o.Key) == prefix {
				continue // a "directory marker" object some tools write
			}
			files = append(files, b.object(o))
		}
		for _, cp := range page.CommonPrefixes {
			dirs = append(dirs, path.Base(strings.TrimSuffix(aws.ToString(cp.Prefix), "/")))
		}
	}
	sort.Strings(dirs)
	sort.Slice(files, func(i, j int) bool { return files[i].Key < files[j].Key })
	return files, dirs, nil
}

// Delete implements storage.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := storage.CheckKey(key); err != nil {
		return err
	}
	return b.delete(ctx, key)
}

func (b *Bucket) delete(ctx context.Context, key string) error {
	if _, err := b.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(b.loc.Bucket), Key: aws.String(b.full(key))}); err != nil {
		if err := b.wrap("delete", key, err); !storage.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// DeletePrefix implements storage.Bucket: every object under prefix, one
// DeleteObject at a time (a batch delete is an optional feature of
// S3-compatible servers).
func (b *Bucket) DeletePrefix(ctx context.Context, prefix string) error {
	dir := strings.TrimSuffix(prefix, "/")
	if err := storage.CheckKey(dir); err != nil {
		return err
	}
	objs, err := b.List(ctx, dir+"/")
	if err != nil {
		return err
	}
	for _, o := range objs {
		// Each listed key as the server listed it, under the checked
		// prefix: a "directory marker" (a key ending in "/": the S3
		// console's "Create folder", s3fs, Hadoop's S3A) or a key with a
		// backslash is no key Delete accepts, and refused, it stopped
		// every later gc at this prefix, exit 1, the prefix half deleted.
		if err := b.delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return b.abortUploads(ctx, dir+"/")
}

// AbortUploads implements storage.UploadAborter.
func (b *Bucket) AbortUploads(ctx context.Context, prefix string) error {
	dir := strings.TrimSuffix(prefix, "/")
	if err := storage.CheckKey(dir); err != nil {
		return err
	}
	return b.abortUploads(ctx, dir+"/")
}

// abortUploads aborts the multipart uploads under prefix. A writer stopped
// while it uploaded a file (DuckDB's httpfs, a SIGTERM mid-write) leaves
// its upload open: no listing of objects shows it, its parts are stored
// and billed, and deleting the prefix's objects leaves it for ever. A
// server or a policy that does not allow listing or aborting them is no
// failure of the delete: docs/s3.md asks for a lifecycle rule as well.
func (b *Bucket) abortUploads(ctx context.Context, prefix string) error {
	in := &awss3.ListMultipartUploadsInput{Bucket: aws.String(b.loc.Bucket), Prefix: aws.String(b.full(prefix))}
	for {
		out, err := b.client.ListMultipartUploads(ctx, in)
		if err != nil {
			if werr := b.wrap("list uploads", prefix, err); !errors.Is(werr, permanent) {
				return werr
			}
			return nil
		}
		for _, u := range out.Uploads {
			_, err := b.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String(b.loc.Bucket), Key: u.Key, UploadId: u.UploadId})
			if err != nil {
				if werr := b.wrap("abort upload", prefix, err); !storage.IsNotExist(werr) && !errors.Is(werr, permanent) {
					return werr
				}
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// WriteURI implements storage.Bucket: nothing to prepare on S3.
func (b *Bucket) WriteURI(ctx context.Context, dir string) (string, error) {
	if err := storage.CheckKey(dir); err != nil {
		return "", err
	}
	return b.uri(dir), nil
}

// Seal implements storage.Bucket: an object is durable once its PUT
// returned, so sealing is listing.
func (b *Bucket) Seal(ctx context.Context, prefix string) ([]storage.Object, error) {
	return b.List(ctx, prefix)
}

// Check asks for one key of the bucket so that a missing bucket, refused
// credentials, a wrong region or an unreachable endpoint is one line
// naming the URL before anything else is tried. A listing, not
// HeadBucket: a HEAD answer has no body, so its error has no code, and a
// wrong region or an unknown access key read as a missing bucket.
//
// The listing is of the location's own prefix: a least-privilege policy
// grants s3:ListBucket under some prefixes only (a condition on
// s3:prefix), and a listing of the bucket's root was refused there, so
// every command failed as "access denied".
func (b *Bucket) Check(ctx context.Context) error {
	in := &awss3.ListObjectsV2Input{Bucket: aws.String(b.loc.Bucket), MaxKeys: aws.Int32(1)}
	if b.loc.Key != "" {
		in.Prefix = aws.String(b.loc.Key + "/")
	}
	_, err := b.client.ListObjectsV2(ctx, in)
	if err == nil {
		return nil
	}
	if code, status := classify(err); code == "NoSuchBucket" || (code == "" && status == http.StatusNotFound) {
		return fmt.Errorf("%s: bucket %q does not exist (check the URL and AWS_ENDPOINT_URL): %w", b.loc, b.loc.Bucket, permanent)
	}
	return b.wrap("open bucket", "", err)
}

// probeTries is how many probe objects Probe creates twice before it
// calls the server one that ignores If-None-Match.
const probeTries = 3

// Probe checks, before the first pointer write, that the server honours
// If-None-Match: a second create of the same probe object must be refused
// with 412. A server that ignores the condition would let two writers take
// one generation. The probe objects, under key, are removed afterwards.
//
// A server that ignores the condition ignores it every time, so a refusal
// on any of probeTries fresh objects proves it honours it. One try alone
// was not enough: in CI, versitygw once let a second create through while
// another publisher probed beside it (why was not found), and refusing a
// sound server fails a publish that was safe. The pointer's own writes stay
// conditional either way.
func (b *Bucket) Probe(ctx context.Context, key string) error {
	for i := range probeTries {
		k := key
		if i > 0 {
			k = fmt.Sprintf("%s.%d", key, i+1)
		}
		honoured, err := b.probeOnce(ctx, k)
		if err != nil || honoured {
			return err
		}
	}
	return fmt.Errorf("the server ignores If-None-Match (a second create of %s succeeded, %d times out of %d): it cannot hold the pointer safely; use a server with conditional writes: %w",
		b.uri(key), probeTries, probeTries, permanent)
}

// probeOnce creates key twice with If-None-Match and reports whether the
// second create was refused.
func (b *Bucket) probeOnce(ctx context.Context, key string) (bool, error) {
	if _, err := b.Put(ctx, key, []byte("probe\n"), storage.Cond{IfAbsent: true}); err != nil && !errors.Is(err, storage.ErrPrecondition) {
		return false, fmt.Errorf("probe conditional writes: %w", err)
	}
	_, err := b.Put(ctx, key, []byte("probe again\n"), storage.Cond{IfAbsent: true})
	_ = b.Delete(ctx, key)
	switch {
	case errors.Is(err, storage.ErrPrecondition):
		return true, nil
	case err == nil:
		return false, nil
	}
	return false, fmt.Errorf("probe conditional writes: %w", err)
}
