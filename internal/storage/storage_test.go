package storage

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
		str  string
	}{
		{"warehouse", Location{Scheme: File, Path: "warehouse"}, "warehouse"},
		{"/abs/raw?", Location{Scheme: File, Path: "/abs/raw?"}, "/abs/raw?"},
		// A colon past the first element, or "./" in front, is a local name.
		{"data/run:1", Location{Scheme: File, Path: "data/run:1"}, "data/run:1"},
		{"./s3:x", Location{Scheme: File, Path: "./s3:x"}, "./s3:x"},
		// A trailing slash is dropped, as from an S3 prefix: a file given
		// with one was looked for inside itself.
		{"lessons/part-0.parquet/", Location{Scheme: File, Path: "lessons/part-0.parquet"}, "lessons/part-0.parquet"},
		{"/data/wh//", Location{Scheme: File, Path: "/data/wh"}, "/data/wh"},
		{"/", Location{Scheme: File, Path: "/"}, "/"},
		// ".." by text, as a config's relative paths: the kernel's ".."
		// after a symlinked directory named another directory.
		{"/srv/current/../wh", Location{Scheme: File, Path: "/srv/wh"}, "/srv/wh"},
		{"data/x/../../wh/", Location{Scheme: File, Path: "wh"}, "wh"},
		{"./a/../s3:x", Location{Scheme: File, Path: "./s3:x"}, "./s3:x"},
		{"../wh", Location{Scheme: File, Path: "../wh"}, "../wh"},
		{"/srv/wh..x/./y", Location{Scheme: File, Path: "/srv/wh..x/./y"}, "/srv/wh..x/./y"},
		// Either alone reads.
		{`/tmp/a\b`, Location{Scheme: File, Path: `/tmp/a\b`}, `/tmp/a\b`},
		{"/s3:/x", Location{Scheme: File, Path: "/s3:/x"}, "/s3:/x"},
		{"file:///tmp/w", Location{Scheme: File, Path: "/tmp/w"}, "/tmp/w"},
		{"file://localhost/tmp/w", Location{Scheme: File, Path: "/tmp/w"}, "/tmp/w"},
		{"s3://bucket", Location{Scheme: S3, Bucket: "bucket"}, "s3://bucket"},
		{"s3://bucket/wh/", Location{Scheme: S3, Bucket: "bucket", Key: "wh"}, "s3://bucket/wh"},
		{"s3a://my.bucket-1/a/b", Location{Scheme: S3, Bucket: "my.bucket-1", Key: "a/b"}, "s3://my.bucket-1/a/b"},
		// A key is literal: a listed object's URL parses back to its key.
		{"s3://bucket/x?versionId=1", Location{Scheme: S3, Bucket: "bucket", Key: "x?versionId=1"}, "s3://bucket/x?versionId=1"},
		{"s3://bucket/p/part-[0]*?{a,b}#.parquet", Location{Scheme: S3, Bucket: "bucket", Key: "p/part-[0]*?{a,b}#.parquet"}, "s3://bucket/p/part-[0]*?{a,b}#.parquet"},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("Parse(%q) = %+v (%s), %v; want %+v (%s)", tc.in, got, got.String(), err, tc.want, tc.str)
		}
	}
	for _, tc := range []struct{ in, mention string }{
		{"", "empty"},
		{"gs://bucket/x", "unsupported URL scheme"},
		{"s3://", "no bucket"},
		{"s3:///key", "no bucket"},
		{"s3://Bucket/x", "not a valid S3 bucket name"},
		{"s3://bucket/a//b", "empty"},
		// The AWS CLI keeps the leading "/" in the key; it was dropped.
		{"s3://bucket//x", "empty"},
		// Taken as the bucket's root and as wh; the AWS CLI reads other keys.
		{"s3://bucket//", "empty"},
		{"s3://bucket/wh//", "empty"},
		{"s3://bucket/a/../b", `".."`},
		{"s3://user@bucket/x", "without user"},
		{"s3://bucket:9000/x", "without user or port"},
		// A mistyped "://" would publish into ./s3:/... and exit 0.
		{"s3:/bucket/x", `"s3:" mistyped`},
		{"s3:bucket/x", `"s3:" mistyped`},
		{"S3a:bucket", `"S3a:" mistyped`},
		{"s3//bucket/x", `"s3//" mistyped`},
		{"gs:/bucket", `"gs:" mistyped`},
		// No shell expanded it; DuckDB would, the Go side would not.
		{"~/wh", "a leading ~ is not expanded"},
		{"~", "a leading ~ is not expanded"},
		{"$HOME/wh", "a leading $ variable is not expanded"},
		{"${DATA}/wh", "a leading $ variable is not expanded"},
		// DuckDB cannot read such a path: the gate's read-back failed.
		{`/tmp/mv\w[1]`, "holds both a backslash and a glob character"},
		{`file:///tmp/a\b*`, "holds both a backslash and a glob character"},
		// A host, or a relative path: it was published into ./localhost/...
		{"file://wh", "names an absolute path"},
		{"file://localhost", "names an absolute path"},
		{"file://host/tmp/w", "names an absolute path"},
	} {
		if _, err := Parse(tc.in); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("Parse(%q) error %v, want one mentioning %q", tc.in, err, tc.mention)
		}
	}
}

func TestJoinDirBase(t *testing.T) {
	s3 := MustParse("s3://bkt/wh")
	if got := s3.Join("staging/job_id=x/a.parquet").String(); got != "s3://bkt/wh/staging/job_id=x/a.parquet" {
		t.Errorf("Join = %s", got)
	}
	f := MustParse("s3://bkt/in/lessons/part-0.parquet")
	if f.Dir().String() != "s3://bkt/in/lessons" || f.Base() != "part-0.parquet" {
		t.Errorf("Dir/Base = %s %s", f.Dir(), f.Base())
	}
	top := MustParse("s3://bkt/only")
	if top.Dir().String() != "s3://bkt" || top.Base() != "only" {
		t.Errorf("Dir/Base of a top key = %s %s", top.Dir(), top.Base())
	}
	l := MustParse("wh")
	if l.Join("a/b").String() != "wh/a/b" || MustParse("x/y.parquet").Dir().String() != "x" {
		t.Errorf("local Join/Dir: %s %s", l.Join("a/b"), MustParse("x/y.parquet").Dir())
	}
	// A local name that looks like a scheme keeps its "./" through Join
	// and Dir, so a listed file's path parses back to the same file: an
	// input given as ./s3:r could not be read at all (review CM).
	sch := MustParse("./s3:r")
	joined := sch.Join("ingest_date=2026-03-02/part-0.parquet")
	back, err := Parse(joined.String())
	if joined.String() != "./s3:r/ingest_date=2026-03-02/part-0.parquet" || err != nil || back != joined {
		t.Errorf("Join of ./s3:r = %s, parsed back %+v, %v", joined, back, err)
	}
	if d := joined.Dir().Dir().String(); d != "./s3:r" {
		t.Errorf("Dir of %s = %s, want ./s3:r", joined.Dir(), d)
	}
	if got := MustParse("/abs/s3:r").Join("x").String(); got != "/abs/s3:r/x" {
		t.Errorf("absolute Join = %s", got)
	}
}

// TestCheckKey: a backslash in a name (a raw file an S3 tool or a Linux
// disk allows) is refused saying what to do, not as a malformed key.
func TestCheckKey(t *testing.T) {
	for key, want := range map[string]string{
		"raw/ingest_date=2026-03-02/part-0.parquet":     "",
		`raw/ingest_date=2026-03-02/back\slash.parquet`: "holds a backslash, which engagement refuses in a file or object name: rename it",
		"/abs":   "want a relative, slash-separated key",
		"a//b":   `has an empty, "." or ".." element`,
		"a/../b": `has an empty, "." or ".." element`,
	} {
		err := CheckKey(key)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckKey(%q): %v, want %q", key, err, want)
		}
	}
}
