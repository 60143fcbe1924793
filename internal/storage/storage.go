// Package storage is the one seam between the tool and where its bytes live:
// a Bucket of objects under a root Location, which is a local directory or
// an s3://bucket/prefix URL. The warehouse (pointer, history, staging,
// records) and the inputs are reached only through it; an engine is handed
// a URI to read or write and nothing else. Each backend is its own package
// (storage/local, storage/s3) and passes the one suite in
// storage/storagetest.
package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ErrPrecondition: a conditional Put found the object in another state
// than its condition asked for (present for IfAbsent, another version for
// IfMatch). Nothing was written. S3 answers it as 412.
var ErrPrecondition = errors.New("precondition failed")

// ErrRefused: the store refused a request before writing anything (a
// symlink where the tool would write, a lock it could not take, access
// denied), so a caller knows the write did not land without re-reading.
var ErrRefused = errors.New("refused before writing")

// ErrNotObject: a key names a directory, not an object (a local bucket).
// It comes with fs.ErrNotExist, since no object has the key, so a caller
// that only looks for an object finds none; one for which a directory in
// the object's place is damage (pointer.json) checks it first.
var ErrNotObject = errors.New("a directory, not an object")

// Attrs are what a backend knows of one object.
type Attrs struct {
	Size int64
	// Version names one stored state of the object: the ETag on S3, the
	// size, modification time and inode of a local file. Equal versions
	// mean the same bytes; an IfMatch Put compares it.
	Version string
	ModTime time.Time
	// Changed is a local file's inode change time, which no copy can set
	// back as cp -p sets ModTime; zero on S3, whose ModTime a client
	// cannot set at all.
	Changed time.Time
}

// Written is when a's bytes were last written, as far as the store can
// tell: the later of ModTime and Changed.
func (a Attrs) Written() time.Time {
	if a.Changed.After(a.ModTime) {
		return a.Changed
	}
	return a.ModTime
}

// Object is one object of a listing.
type Object struct {
	Key string // relative to the bucket root, slash-separated
	Attrs
	// Link marks a local symbolic link that a listing did not follow
	// (ListDir of a bucket that does not follow links, or one that points
	// at nothing); it is neither read nor deleted through. Never set on S3.
	Link bool
}

// Cond is the precondition of a Put. The zero Cond writes unconditionally.
type Cond struct {
	IfAbsent bool   // create only if no object has the key
	IfMatch  string // replace only if the stored version is this one
}

// Bucket is a flat namespace of objects under a root. Keys are relative,
// slash-separated and clean (no "..", no leading slash). Every method's
// error names the object's URI.
type Bucket interface {
	// Location is the root.
	Location() Location
	// Get reads a whole object; a missing one wraps fs.ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, Attrs, error)
	// ReadRange reads n bytes at off (off < 0 counts from the end, as S3's
	// suffix range does); a missing object wraps fs.ErrNotExist.
	ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	// Stat returns an object's attributes; a missing one wraps
	// fs.ErrNotExist.
	Stat(ctx context.Context, key string) (Attrs, error)
	// Put stores data under key, durably, whole or not at all, subject to
	// c: an unmet condition returns an error wrapping ErrPrecondition and
	// writes nothing.
	Put(ctx context.Context, key string, data []byte, c Cond) (Attrs, error)
	// List returns every object whose key begins with prefix, at any
	// depth, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// ListDir returns the objects directly in the directory dir ("" is the
	// root) and the names of its subdirectories (the common prefixes),
	// each sorted.
	ListDir(ctx context.Context, dir string) (files []Object, dirs []string, err error)
	// Delete removes an object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object under prefix (a directory key).
	DeletePrefix(ctx context.Context, prefix string) error
	// WriteURI prepares dir for an engine that writes files into it itself
	// (a COPY, a Spark write) and returns the URI to give the engine. A
	// local backend creates the directory without following a symlink.
	WriteURI(ctx context.Context, dir string) (string, error)
	// Seal makes every object under prefix durable (fsync of the files
	// and directories an engine wrote, on a local backend) and lists them:
	// an attempt finds its staged files this way, never by renaming.
	Seal(ctx context.Context, prefix string) ([]Object, error)
}

// UploadAborter is a Bucket whose writers may leave incomplete multipart
// uploads (S3): AbortUploads aborts those under prefix, touching no object.
type UploadAborter interface {
	AbortUploads(ctx context.Context, prefix string) error
}

// Locker is a Bucket that can hold its conditional writers still (the
// local backend's flock). The pointer store takes it around a whole swap
// and gc around its decisions, when the bucket has one.
type Locker interface {
	// Lock waits for the lock and returns a context that marks its
	// holder: a conditional Put made with it does not wait for the lock
	// again. unlock releases it.
	Lock(ctx context.Context) (held context.Context, unlock func(), err error)
}

// Prober is a Bucket whose conditional writes depend on the server (S3 and
// the S3-compatible servers): Probe proves, with an object of its own
// under key, that a create-if-absent is refused when the object exists. A
// publish probes before it writes anything, so a server that ignores the
// condition is refused rather than trusted with the pointer.
type Prober interface {
	Probe(ctx context.Context, key string) error
}

// Create writes data under key only if no object has it. A create that
// finds the very bytes it would write has succeeded: its first try landed
// and the reply was lost, and the retry (the SDK's, on S3) met its own
// object, which must not read as another writer's. Any other object under
// key is an error wrapping ErrPrecondition.
func Create(ctx context.Context, b Bucket, key string, data []byte) error {
	_, err := b.Put(ctx, key, data, Cond{IfAbsent: true})
	if errors.Is(err, ErrPrecondition) {
		got, _, gerr := b.Get(ctx, key)
		if gerr == nil && bytes.Equal(got, data) {
			return nil
		}
		if IsNotExist(gerr) {
			return DirectoryInPlace(ctx, b, key, err)
		}
	}
	return err
}

// DirectoryInPlace is what a create of key refused with err, although no
// object key exists, means: when keys under key/ exist, a directory holds
// the object's place (a server on a file system, versitygw, refuses the
// create for it), which no retry changes, so it is refused as
// ErrNotObject; otherwise err stands (the other writer's object may have
// gone since).
func DirectoryInPlace(ctx context.Context, b Bucket, key string, err error) error {
	if under, lerr := b.List(ctx, key+"/"); lerr == nil && len(under) > 0 {
		return Refused(fmt.Errorf("create %s: in its place is a directory (%s/ holds %s): %w", b.Location().Join(key), key, under[0].Key, ErrNotObject))
	}
	return err
}

// Refused marks err as ErrRefused (nothing was written) without changing
// its text.
func Refused(err error) error { return refusal{err} }

type refusal struct{ error }

func (r refusal) Unwrap() []error { return []error{r.error, ErrRefused} }

// IsNotExist reports whether err says an object is missing.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Scheme of a Location.
const (
	File = "file"
	S3   = "s3"
)

// Location is where a bucket's root is: a local directory, or a bucket and
// key prefix on S3. It is parsed in one place (Parse) for every path and
// URL the tool takes.
type Location struct {
	Scheme string // File or S3
	Path   string // File: the directory or file as given (relative paths stay relative)
	Bucket string // S3
	Key    string // S3: the key prefix or object key, no leading or trailing slash
}

// shellVariable is a path opening with $NAME or ${...}.
var shellVariable = regexp.MustCompile(`^\$(\{|[A-Za-z_])`)

// Parse reads a local path or an s3://bucket/prefix URL. Any other URL
// scheme, an S3 URL without a valid bucket, with a user or port, or a key
// with an empty, "." or ".." element is an error naming it.
func Parse(s string) (Location, error) {
	if s == "" {
		return Location{}, errors.New("empty path")
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		if bad, ok := mistypedURL(s); ok {
			return Location{}, fmt.Errorf("%s: looks like a URL with %q mistyped (want s3://bucket/prefix); a local directory of that name is written ./%s", s, bad, s)
		}
		if s == "~" || strings.HasPrefix(s, "~/") {
			// No shell expanded it: the tool would write a directory named
			// ~ while DuckDB, which expands it, read and wrote $HOME.
			return Location{}, fmt.Errorf("%s: a leading ~ is not expanded here (no shell did it): write the path in full; a local directory named ~ is written ./%s", s, s)
		}
		if shellVariable.MatchString(s) {
			// Nor a variable: a config's $HOME/wh published into a
			// directory named $HOME beside the config, exit 0.
			return Location{}, fmt.Errorf("%s: a leading $ variable is not expanded here (no shell did it): write the path in full; a local directory of that name is written ./%s", s, s)
		}
		return localPath(s)
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a":
	case "file":
		// A file URL's path is absolute: file://wh/x names host wh, and
		// file://localhost/x was taken as the relative ./localhost/x,
		// published into beside the command with exit 0.
		if after, ok := strings.CutPrefix(rest, "localhost/"); ok {
			rest = "/" + after
		}
		if !strings.HasPrefix(rest, "/") {
			return Location{}, fmt.Errorf("%s: a file URL names an absolute path, file:///dir (three slashes); a relative directory is written without file://", s)
		}
		return localPath(rest)
	default:
		return Location{}, fmt.Errorf("%s: unsupported URL scheme %q (want a local path or s3://bucket/prefix)", s, scheme)
	}
	// The key is everything after the bucket, taken literally as the AWS
	// CLI does: '?', '#', '[' and '*' are characters an object key may hold
	// (a listed file is named by its URL and parsed back), never a query,
	// a fragment or a pattern.
	bucket, key, _ := strings.Cut(rest, "/")
	switch {
	case bucket == "":
		return Location{}, fmt.Errorf("%s: no bucket: want s3://bucket/prefix", s)
	case strings.ContainsAny(bucket, "@:"):
		return Location{}, fmt.Errorf("%s: want s3://bucket/prefix, without user or port (the endpoint is AWS_ENDPOINT_URL)", s)
	case !validBucket(bucket):
		return Location{}, fmt.Errorf("%s: bucket %q is not a valid S3 bucket name", s, bucket)
	}
	// A trailing "/" names the same prefix; a leading one (s3://b//x) is
	// an empty element, which the AWS CLI keeps as part of the key. Only
	// one is trimmed: s3://b// was taken as the bucket's root, and
	// s3://b/x// as x, where the AWS CLI reads a key "/" and "x//".
	given := key
	key = strings.TrimSuffix(key, "/")
	if given != "" {
		for _, elem := range strings.Split(key, "/") {
			if elem == "" || elem == "." || elem == ".." {
				return Location{}, fmt.Errorf("%s: key %q has an empty, \".\" or \"..\" element", s, given)
			}
		}
	}
	return Location{Scheme: S3, Bucket: bucket, Key: key}, nil
}

// mistypedURL reports a path that is a URL with its "://" mistyped:
// s3:/bucket/x, s3:bucket/x or s3//bucket/x. Taken as a local path it would
// publish, exit 0, into a directory named "s3:" beside the command. A scheme
// and a colon in the first element are enough to refuse; "./" in front says
// a local name is meant.
func mistypedURL(s string) (string, bool) {
	first, _, _ := strings.Cut(s, "/")
	if i := strings.IndexByte(first, ':'); i > 0 && isScheme(first[:i]) {
		return first[:i+1], true
	}
	lower := strings.ToLower(s)
	for _, prefix := range []string{"s3//", "s3a//"} {
		if strings.HasPrefix(lower, prefix) {
			return s[:len(prefix)], true
		}
	}
	return "", false
}

// isScheme is RFC 3986's scheme: a letter, then letters, digits, + - or .
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// validBucket is S3's naming rule: 3 to 63 lower-case letters, digits,
// dots and hyphens, starting and ending with a letter or digit.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	first, last := b[0], b[len(b)-1]
	return first != '.' && first != '-' && last != '.' && last != '-'
}

// MustParse is Parse for constants in tests.
func MustParse(s string) Location {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

// IsS3 reports whether the location is on S3.
func (l Location) IsS3() bool { return l.Scheme == S3 }

// String is the location as the user wrote it: the path, or the URL.
func (l Location) String() string {
	if l.Scheme == S3 {
		if l.Key == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Key
	}
	return l.Path
}

// Join names rel (slash-separated, relative) under the location.
func (l Location) Join(rel string) Location {
	if rel == "" || rel == "." {
		return l
	}
	if l.Scheme == S3 {
		l.Key = strings.Trim(path.Join(l.Key, rel), "/")
		return l
	}
	l.Path = LocalName(filepath.Join(l.Path, filepath.FromSlash(rel)))
	return l
}

// LocalName keeps a cleaned relative path a local name: one whose first
// element holds a ':' (s3:r) reads as a mistyped URL when parsed again,
// as a listed file's path is (or a config's relative path joined to its
// directory), and filepath's cleaning drops the "./" that told it apart:
// an input given as ./s3:r could not be read at all.
func LocalName(p string) string {
	if first, _, _ := strings.Cut(p, string(filepath.Separator)); !filepath.IsAbs(p) && strings.Contains(first, ":") {
		return "." + string(filepath.Separator) + p
	}
	return p
}

// Base is the last element of the location.
func (l Location) Base() string {
	if l.Scheme == S3 {
		return path.Base(l.Key)
	}
	return filepath.Base(l.Path)
}

// Dir is the parent location.
func (l Location) Dir() Location {
	if l.Scheme == S3 {
		d := path.Dir(l.Key)
		if d == "." {
			d = ""
		}
		l.Key = d
		return l
	}
	l.Path = LocalName(filepath.Dir(l.Path))
	return l
}

// localPath is the location of local path p. A path holding both a
// backslash and a glob character is refused: DuckDB reads a path with a
// glob character as a pattern, where a backslash is an escape that no
// spelling turns back into itself, so every read of it (the gate's read-
// back, read, the views) failed with "no files found".
func localPath(p string) (Location, error) {
	if strings.Contains(p, `\`) && strings.ContainsAny(p, "[*?") {
		return Location{}, fmt.Errorf("%s: holds both a backslash and a glob character ([, * or ?), which no reader of it can take as one path (DuckDB reads the backslash as an escape): rename it", p)
	}
	// A trailing slash names a directory to a reader, but a file path given
	// with one (lessons/part-0.parquet/) was taken as a directory and its
	// file looked for inside it; an S3 prefix drops it too.
	if t := strings.TrimRight(p, "/"); t != "" {
		p = t
	}
	// ".." is taken by text, as a config's relative paths are joined: the
	// kernel's ".." after a symlinked directory named another directory,
	// so the store created its root there while every path joined to it
	// was cleaned by text, and the publish failed until the textual
	// directory existed, then published there. Only a path with ".." is
	// cleaned, and keeps a "./" that makes it a local name (LocalName).
	if slices.Contains(strings.Split(p, "/"), "..") {
		p = LocalName(filepath.Clean(p))
	}
	return Location{Scheme: File, Path: p}, nil
}

// CheckKey refuses a key that is not relative, slash-separated and clean.
func CheckKey(key string) error {
	if strings.Contains(key, "\\") {
		// A listed input may hold one (S3 and Linux allow it): say what
		// to do, not that the key is malformed.
		return fmt.Errorf("object key %q: holds a backslash, which engagement refuses in a file or object name: rename it", key)
	}
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsRune(key, 0) {
		return fmt.Errorf("object key %q: want a relative, slash-separated key", key)
	}
	for _, elem := range strings.Split(key, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return fmt.Errorf("object key %q: has an empty, \".\" or \"..\" element", key)
		}
	}
	return nil
}
