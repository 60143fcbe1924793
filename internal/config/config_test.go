package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
)

func mustParse(t *testing.T, text, name string) *Properties {
	t.Helper()
	p, err := Parse(strings.NewReader(text), name)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return p
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string]string
		keys []string // first-appearance order
	}{
		{name: "space separated", text: "a.b value\n", want: map[string]string{"a.b": "value"}, keys: []string{"a.b"}},
		{name: "tab and many spaces", text: "a.b\t \t value with  inner   spaces  \n", want: map[string]string{"a.b": "value with  inner   spaces"}, keys: []string{"a.b"}},
		{name: "equals", text: "a.b=value\n", want: map[string]string{"a.b": "value"}, keys: []string{"a.b"}},
		{name: "equals with spaces", text: "a.b = value\n", want: map[string]string{"a.b": "value"}, keys: []string{"a.b"}},
		{name: "colon", text: "a.b: value\n", want: map[string]string{"a.b": "value"}, keys: []string{"a.b"}},
		{name: "colon no space", text: "a.b:value\n", want: map[string]string{"a.b": "value"}, keys: []string{"a.b"}},
		{name: "value keeps colons", text: "spark.remote sc://host:15002\n", want: map[string]string{"spark.remote": "sc://host:15002"}, keys: []string{"spark.remote"}},
		{name: "value keeps equals", text: "k a=b\n", want: map[string]string{"k": "a=b"}, keys: []string{"k"}},
		{name: "key only", text: "k\n", want: map[string]string{"k": ""}, keys: []string{"k"}},
		{name: "hash comment", text: "# a comment\na 1\n", want: map[string]string{"a": "1"}, keys: []string{"a"}},
		{name: "bang comment", text: "! a comment\na 1\n", want: map[string]string{"a": "1"}, keys: []string{"a"}},
		{name: "indented comment", text: "   # k v\n\t! k2 v2\na 1\n", want: map[string]string{"a": "1"}, keys: []string{"a"}},
		{name: "blank lines", text: "\n\n   \n\t\na 1\n\nb 2\n", want: map[string]string{"a": "1", "b": "2"}, keys: []string{"a", "b"}},
		{name: "later value wins", text: "a 1\nb 2\na 3\n", want: map[string]string{"a": "3", "b": "2"}, keys: []string{"a", "b"}},
		{name: "later wins across separators", text: "a=1\na: 2\na 4\n", want: map[string]string{"a": "4"}, keys: []string{"a"}},
		{name: "no trailing newline", text: "a 1", want: map[string]string{"a": "1"}, keys: []string{"a"}},
		{name: "crlf", text: "a 1\r\nb 2\r\n", want: map[string]string{"a": "1", "b": "2"}, keys: []string{"a", "b"}},
		{name: "empty file", text: "", want: map[string]string{}, keys: nil},
		{name: "byte order mark", text: "\ufeffa 1\nb 2\n", want: map[string]string{"a": "1", "b": "2"}, keys: []string{"a", "b"}},
		{name: "byte order mark before a comment", text: "\ufeff# c\na 1\n", want: map[string]string{"a": "1"}, keys: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.text, "test.conf")
			for k, v := range tc.want {
				got, ok := p.Get(k)
				if !ok || got != v {
					t.Errorf("Get(%q) = %q, %v; want %q", k, got, ok, v)
				}
			}
			if got := p.Keys(); !reflect.DeepEqual(got, tc.keys) {
				t.Errorf("Keys() = %q, want %q", got, tc.keys)
			}
			for _, k := range []string{"#", "!", "a comment", "k2"} {
				if _, ok := p.Get(k); ok {
					t.Errorf("comment text became key %q", k)
				}
			}
		})
	}
}

func TestParseLineNumbers(t *testing.T) {
	p := mustParse(t, "# c\n\nengagement.unknownCap 0.01\nengagement.saltBuckets 4\nengagement.unknownCap abc\n", "x.conf")
	if got := p.where(KeyUnknownCap); got != "x.conf:5" {
		t.Errorf("where(unknownCap) = %q, want x.conf:5 (the later line)", got)
	}
	if got := p.where(KeySaltBuckets); got != "x.conf:4" {
		t.Errorf("where(saltBuckets) = %q, want x.conf:4", got)
	}
	_, err := Resolve(p, nil)
	if err == nil || !strings.Contains(err.Error(), "x.conf:5") || !strings.Contains(err.Error(), `"abc"`) {
		t.Errorf("Resolve error %v: want it to name x.conf:5 and \"abc\"", err)
	}
}

func TestParseNoKey(t *testing.T) {
	_, err := Parse(strings.NewReader("a 1\n= value\n"), "x.conf")
	if err == nil || !strings.Contains(err.Error(), "x.conf:2") {
		t.Errorf("Parse of a line without key: err = %v, want x.conf:2", err)
	}
}

// TestParseLongLine: a line past the scanner's 1 MiB is named by its
// number, as any other refused line is.
func TestParseLongLine(t *testing.T) {
	_, err := Parse(strings.NewReader("a 1\nb 2\n# "+strings.Repeat("x", 1<<20)+"\n"), "x.conf")
	if err == nil || !strings.Contains(err.Error(), "x.conf:3: a line over 1 MiB") {
		t.Errorf("Parse of a 1 MiB comment: err = %v, want x.conf:3 named", err)
	}
}

func TestResolveDefaults(t *testing.T) {
	j, err := Resolve(nil, nil)
	if err != nil {
		t.Fatalf("Resolve(nil, nil): %v", err)
	}
	if j.Engine != "duckdb" {
		t.Errorf("Engine = %q, want duckdb", j.Engine)
	}
	if j.SparkRemote != "sc://127.0.0.1:15002" {
		t.Errorf("SparkRemote = %q", j.SparkRemote)
	}
	if j.UnknownCap != 0.02 {
		t.Errorf("UnknownCap = %v, want 0.02", j.UnknownCap)
	}
	if j.SaltBuckets != 8 || j.RestatementHorizonDays != 3 || j.LatenessDays != 2 || j.FreshnessMaxDays != 2 {
		t.Errorf("ints = salt %d horizon %d lateness %d freshness %d, want 8 3 2 2",
			j.SaltBuckets, j.RestatementHorizonDays, j.LatenessDays, j.FreshnessMaxDays)
	}
	if j.TargetFileBytes != 192*1024*1024 {
		t.Errorf("TargetFileBytes = %d, want %d", j.TargetFileBytes, 192*1024*1024)
	}
	if want := []string{"email", "payment_token", "card_number", "raw_ip"}; !reflect.DeepEqual(j.ProhibitedColumns, want) {
		t.Errorf("ProhibitedColumns = %q, want %q", j.ProhibitedColumns, want)
	}
	if j.Warehouse != "" || j.Raw != "" || j.ManifestID != "" || j.EnrollmentSnapshotID != "" || len(j.HotCourses) != 0 {
		t.Errorf("unset settings got values: %+v", j)
	}
	if j.AsOfSet {
		t.Errorf("AsOfSet without engagement.asOfDate")
	}
}

func TestResolveFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	confPath := filepath.Join(dir, "conf", "job.conf")
	text := strings.Join([]string{
		"engagement.engine duckdb",
		"engagement.warehouse ../wh",
		"engagement.raw raw-data",
		"engagement.lessons /abs/lessons",
		"engagement.enrollments enr",
		"engagement.manifestId dim-file",
		"engagement.enrollmentSnapshotId enr-file",
		"engagement.unknownCap 0.03",
		"engagement.hotCourses course-a, course-b ,,",
		"engagement.saltBuckets 4",
		"engagement.restatementHorizonDays 2",
		"engagement.latenessDays 0",
		"engagement.targetFileBytes 128MB",
		"engagement.prohibitedColumns Email, RAW_IP",
		"engagement.freshnessMaxDays 0",
		"engagement.asOfDate 2026-03-04",
		"spark.sql.shuffle.partitions 8",
		"spark.sql.session.timeZone UTC",
		"duckdb.threads 2",
		"duckdb.memory_limit 2GB",
	}, "\n") + "\n"
	p := mustParse(t, text, confPath)

	j, err := Resolve(p, nil)
	if err != nil {
		t.Fatalf("Resolve(file): %v", err)
	}
	confDir := filepath.Join(dir, "conf")
	checks := []struct{ name, got, want string }{
		{"warehouse", j.Warehouse, filepath.Join(dir, "wh")},
		{"raw", j.Raw, filepath.Join(confDir, "raw-data")},
		{"lessons (absolute kept)", j.Lessons, "/abs/lessons"},
		{"enrollments", j.Enrollments, filepath.Join(confDir, "enr")},
		{"manifest", j.ManifestID, "dim-file"},
		{"snapshot", j.EnrollmentSnapshotID, "enr-file"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("file %s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if j.UnknownCap != 0.03 || j.SaltBuckets != 4 || j.RestatementHorizonDays != 2 || j.LatenessDays != 0 ||
		j.FreshnessMaxDays != 0 || j.TargetFileBytes != 128<<20 {
		t.Errorf("file numbers: cap %v salt %d horizon %d lateness %d freshness %d target %d",
			j.UnknownCap, j.SaltBuckets, j.RestatementHorizonDays, j.LatenessDays, j.FreshnessMaxDays, j.TargetFileBytes)
	}
	if want := []string{"course-a", "course-b"}; !reflect.DeepEqual(j.HotCourses, want) {
		t.Errorf("HotCourses = %q, want %q", j.HotCourses, want)
	}
	if want := []string{"email", "raw_ip"}; !reflect.DeepEqual(j.ProhibitedColumns, want) {
		t.Errorf("ProhibitedColumns = %q, want %q (lower-cased)", j.ProhibitedColumns, want)
	}
	if !j.AsOfSet || j.AsOf != dates.MustParse("2026-03-04") {
		t.Errorf("AsOf = %v set=%v, want 2026-03-04", j.AsOf, j.AsOfSet)
	}
	if want := map[string]string{"spark.sql.shuffle.partitions": "8", "spark.sql.session.timeZone": "UTC"}; !reflect.DeepEqual(j.Spark, want) {
		t.Errorf("Spark = %v, want %v", j.Spark, want)
	}
	if want := map[string]string{"threads": "2", "memory_limit": "2GB"}; !reflect.DeepEqual(j.DuckDB, want) {
		t.Errorf("DuckDB = %v, want %v", j.DuckDB, want)
	}

	// Flags win over the file; flag paths are kept exactly as given.
	j, err = Resolve(p, []Override{
		{Key: KeyWarehouse, Value: "rel/wh"},
		{Key: KeyRaw, Value: "/flag/raw"},
		{Key: KeyManifestID, Value: "dim-flag"},
		{Key: KeyUnknownCap, Value: "0.05"},
		{Key: KeyHotCourses, Value: "course-z"},
		{Key: KeyEngine, Value: "spark"},
		{Key: KeySparkRemote, Value: "sc://spark:15002"},
		{Key: KeyAsOfDate, Value: "2026-03-10"},
	})
	if err != nil {
		t.Fatalf("Resolve(file, flags): %v", err)
	}
	if j.Warehouse != "rel/wh" {
		t.Errorf("flag warehouse = %q, want rel/wh as given", j.Warehouse)
	}
	if j.Raw != "/flag/raw" {
		t.Errorf("flag raw = %q", j.Raw)
	}
	if j.Enrollments != filepath.Join(confDir, "enr") {
		t.Errorf("file enrollments lost when other flags set: %q", j.Enrollments)
	}
	if j.ManifestID != "dim-flag" || j.EnrollmentSnapshotID != "enr-file" {
		t.Errorf("pins = %q %q, want dim-flag enr-file", j.ManifestID, j.EnrollmentSnapshotID)
	}
	if j.UnknownCap != 0.05 {
		t.Errorf("flag cap = %v, want 0.05", j.UnknownCap)
	}
	if !reflect.DeepEqual(j.HotCourses, []string{"course-z"}) {
		t.Errorf("flag hot courses = %q", j.HotCourses)
	}
	if j.Engine != "spark" || j.SparkRemote != "sc://spark:15002" {
		t.Errorf("engine %q remote %q", j.Engine, j.SparkRemote)
	}
	if j.AsOf != dates.MustParse("2026-03-10") {
		t.Errorf("flag as-of = %v", j.AsOf)
	}
	if j.SaltBuckets != 4 {
		t.Errorf("file saltBuckets lost: %d", j.SaltBuckets)
	}
}

func TestResolveRelativeConfigFile(t *testing.T) {
	// A config named by a relative path resolves its relative keys against
	// its own directory, not the working directory.
	p := mustParse(t, "engagement.raw ../testdata/fixture/raw\nengagement.warehouse wh\n", filepath.Join("config", "fixture.conf"))
	j, err := Resolve(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("testdata", "fixture", "raw"); j.Raw != want {
		t.Errorf("Raw = %q, want %q", j.Raw, want)
	}
	if want := filepath.Join("config", "wh"); j.Warehouse != want {
		t.Errorf("Warehouse = %q, want %q", j.Warehouse, want)
	}
	// A URL in a config file is not a path relative to it.
	p = mustParse(t, "engagement.raw s3://bkt/in/raw\nengagement.warehouse s3://bkt/wh\n", filepath.Join("config", "s3.conf"))
	if j, err = Resolve(p, nil); err != nil {
		t.Fatal(err)
	}
	if j.Raw != "s3://bkt/in/raw" || j.Warehouse != "s3://bkt/wh" {
		t.Errorf("Raw, Warehouse = %q, %q: want the URLs as written", j.Raw, j.Warehouse)
	}
	// A mistyped one is refused naming the key and its line: joined to
	// the file's directory it would have been a local directory named
	// s3:, which the location's parse then accepts.
	p = mustParse(t, "engagement.raw s3:bkt/in/raw\nengagement.warehouse s3:/curated/engagement\nengagement.lessons s3//bkt/l\n", filepath.Join("config", "s3.conf"))
	_, err = Resolve(p, nil)
	for _, want := range []string{"engagement.raw (config/s3.conf:1): s3:bkt/in/raw: looks like a URL", "engagement.warehouse (config/s3.conf:2)", "engagement.lessons (config/s3.conf:3)"} {
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("mistyped URLs in the file: %v, want exit 2 with %q", err, want)
		}
	}
	// A config in a directory named like a scheme: its relative paths
	// stay local names (review CO: refused as mistyped URLs, exit 2, with
	// no spelling in the file that avoided it).
	p = mustParse(t, "engagement.warehouse wh\n", filepath.Join(".", "s3:c", "job.conf"))
	if j, err = Resolve(p, nil); err != nil || j.Warehouse != "./s3:c/wh" {
		t.Errorf("a config in ./s3:c: warehouse %q, %v; want ./s3:c/wh", j.Warehouse, err)
	} else if loc, err := storage.Parse(j.Warehouse); err != nil || loc.Scheme != storage.File {
		t.Errorf("./s3:c/wh parses as %+v, %v; want a local path", loc, err)
	}
	// A directory holding " #" is the file's, not a comment in the value.
	p = mustParse(t, "engagement.warehouse wh\n", filepath.Join("Project #2", "job.conf"))
	if j, err = Resolve(p, nil); err != nil || j.Warehouse != filepath.Join("Project #2", "wh") {
		t.Errorf("a config in %q: warehouse %q, %v; want it beside the file", "Project #2", j.Warehouse, err)
	}
	p = mustParse(t, "engagement.raw s3:bkt/in/raw\nengagement.warehouse s3:/curated/engagement\nengagement.lessons s3//bkt/l\n", filepath.Join("config", "s3.conf"))
	// A flag or a variable has no comments: " #" in one is the path's.
	if j, err := Resolve(nil, []Override{{Key: KeyWarehouse, Value: "/data/Project #2/wh"}, {Key: KeyRaw, Value: "/data/Project #2/raw", Source: "ENGAGEMENT_RAW"}}); err != nil || j.Warehouse != "/data/Project #2/wh" {
		t.Errorf("a flag and a variable naming Project #2: %q, %v; want accepted", j.Warehouse, err)
	}
	// A flag's value wins, and is judged where it is parsed.
	if _, err = Resolve(p, []Override{{Key: KeyRaw, Value: "/in/raw"}, {Key: KeyWarehouse, Value: "/wh"}, {Key: KeyLessons, Value: "/l"}}); err != nil {
		t.Errorf("flags over the mistyped values: %v", err)
	}
}

// TestResolveWhiteSpace: a value from a flag or a variable with white
// space at an end (a ConfigMap's newline) is refused naming the key.
func TestResolveWhiteSpace(t *testing.T) {
	for _, v := range []string{"/data/wh\n", " /data/wh", "/data/wh "} {
		_, err := Resolve(nil, []Override{{Key: KeyWarehouse, Value: v, Source: "ENGAGEMENT_WAREHOUSE"}})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "ENGAGEMENT_WAREHOUSE") || !strings.Contains(fmt.Sprint(err), "white space at an end") {
			t.Errorf("%q: %v, want exit 2 naming the variable and the white space", v, err)
		}
	}
}

// TestResolvePipedConfig: a config read through a pipe (--config
// <(envsubst < tmpl)) has no directory; its relative paths were taken
// against /dev/fd and published there, exit 0. Absolute ones stay fine.
func TestResolvePipedConfig(t *testing.T) {
	for _, tc := range []struct {
		text, refused string
	}{
		{"engagement.warehouse wh\n", "engagement.warehouse"},
		{"engagement.warehouse /data/wh\nduckdb.temp_directory spill\n", "duckdb.temp_directory"},
		{"engagement.warehouse /data/wh\nengagement.raw s3://bkt/raw\n", ""},
	} {
		fifo := filepath.Join(t.TempDir(), "job.conf")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.WriteString(tc.text)
				f.Close()
			}
		}()
		p, err := ReadFile(fifo)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(p, nil)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%q through a pipe: %v, want accepted", tc.text, err)
		case tc.refused != "" && (exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), tc.refused+" ("+fifo+":") ||
			!strings.Contains(fmt.Sprint(err), "read through a pipe or a device")):
			t.Errorf("%q through a pipe: %v, want exit 2 naming %s, its line and the pipe", tc.text, err, tc.refused)
		}
	}
	// The same text in a regular file resolves beside it.
	conf := filepath.Join(t.TempDir(), "job.conf")
	if err := os.WriteFile(conf, []byte("engagement.warehouse wh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := Resolve(p, nil); err != nil || j.Warehouse != filepath.Join(filepath.Dir(conf), "wh") {
		t.Errorf("a regular file: warehouse %q, %v; want it beside the file", j.Warehouse, err)
	}
	// Named through /proc or /dev (--config /dev/stdin < job.conf), the
	// same regular file has /dev's directory: a warehouse was published
	// in /dev/wh, exit 0.
	f, err := os.Open(conf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, err = ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(p, nil); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "read through a pipe or a device") {
		t.Errorf("a regular file named through /proc/self/fd: %v, want its relative path refused", err)
	}
}

// TestDevicePath: the names of a descriptor under /dev and /proc have no
// directory of the config's; a real directory under /dev has.
func TestDevicePath(t *testing.T) {
	for path, want := range map[string]bool{
		"/dev/stdin": true, "/dev/fd/3": true, "/proc/self/fd/0": true, "/proc/1234/fd/5": true,
		"/dev/shm/conf/job.conf": false, "/srv/dev/job.conf": false, "config/job.conf": false,
	} {
		if got := devicePath(path); got != want {
			t.Errorf("devicePath(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestResolveInnerVariable: a shell variable no shell expanded, past the
// path's start (a leading one is the location's parse's): published into a
// directory named ${ENV}, exit 0.
func TestResolveInnerVariable(t *testing.T) {
	for _, tc := range []struct {
		v, want string
	}{
		{"/srv/${ENV}/wh", "${ENV}"},
		{"/data/$USER/wh", "$USER"},
		{"s3://bkt/${ENV}/wh", "${ENV}"},
		{"/data/wh-${", "${"},
	} {
		_, err := Resolve(nil, []Override{{Key: KeyWarehouse, Value: tc.v, Source: "--warehouse"}})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "holds a shell variable ("+tc.want+")") {
			t.Errorf("%q: %v, want exit 2 naming %s", tc.v, err, tc.want)
		}
	}
	for _, v := range []string{"/data/price$5/wh", "/data/a$b/wh", "/data/$5/wh"} {
		if _, err := Resolve(nil, []Override{{Key: KeyWarehouse, Value: v}}); err != nil {
			t.Errorf("%q: %v, want accepted (no variable a shell would expand)", v, err)
		}
	}
}

// TestUnexpanded: what a shell would have expanded in a path, at its start
// or further on, and what it would not have (a $ before a digit or inside a
// name).
func TestUnexpanded(t *testing.T) {
	for _, tc := range []struct{ p, want string }{
		{"~", "~"},
		{"~/m.prom", "~"},
		{"$HOME/m.prom", "$HOME"},
		{"${HOME}/m.prom", "${HOME}"},
		{"${HOME", "${HOME"},
		{"/var/lib/node_exporter/${JOB}.prom", "${JOB}"},
		{"/data/$USER/m.prom", "$USER"},
		{"out/$_x/m.prom", "$_x"},
		{"/var/lib/m.prom", ""},
		{"m.prom", ""},
		{"~user/m.prom", ""},
		{"/data/price$5/m.prom", ""},
		{"/data/a$b/m.prom", ""},
		{"$5/m.prom", ""},
	} {
		if got := Unexpanded(tc.p); got != tc.want {
			t.Errorf("Unexpanded(%q) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestResolveInvisible: a value holding what cannot be seen or is not
// UTF-8 is refused, naming the key, where it came from and the byte; an
// engine key's from its file line. Secrets stay masked.
func TestResolveInvisible(t *testing.T) {
	for _, tc := range []struct {
		over Override
		want string
	}{
		{Override{Key: KeyWarehouse, Value: "/data/wh\u200b", Source: "--warehouse"}, `engagement.warehouse (--warehouse): "/data/wh\u200b" holds the invisible character U+200B at byte 8`},
		{Override{Key: KeyManifestID, Value: "dim-\ufeff1", Source: "ENGAGEMENT_MANIFEST_ID"}, "U+FEFF at byte 4"},
		{Override{Key: KeyRaw, Value: "/data/\u202eraw"}, "U+202E"},
		{Override{Key: KeyEnrollmentSnapshotID, Value: "enr\xe9"}, `"enr\xe9" holds a byte that is not UTF-8 at byte 3`},
		{Override{Key: KeyLessons, Value: "/data/l\x00x"}, "U+0000"},
		{Override{Key: KeySparkRemote, Value: "sc://h:15002/;token=abcdefgh\u200b"}, "U+200B"},
		// A joiner beside ASCII or at an end: "wh" and "wh" + U+200D look alike.
		{Override{Key: KeyWarehouse, Value: "/data/wh\u200d"}, "U+200D at byte 8"},
		{Override{Key: KeyWarehouse, Value: "/data/w\u200ch"}, "U+200C at byte 7"},
		{Override{Key: KeyWarehouse, Value: "/data/wh\ufe0f"}, "U+FE0F"},
		{Override{Key: KeyWarehouse, Value: "/data/wh\u3164"}, "U+3164"},
		{Override{Key: KeyWarehouse, Value: "/data/\u034fwh"}, "U+034F"},
	} {
		_, err := Resolve(nil, []Override{tc.over})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s %q: %v, want exit 2 with %q", tc.over.Key, tc.over.Value, err, tc.want)
		}
		if strings.Contains(fmt.Sprint(err), "abcdefgh") {
			t.Errorf("%s: the refusal shows the token: %v", tc.over.Key, err)
		}
	}
	p := mustParse(t, "duckdb.temp_directory /tmp/spill\u200b\n", "job.conf")
	if _, err := Resolve(p, nil); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "duckdb.temp_directory (job.conf:1)") {
		t.Errorf("an engine key with U+200B: %v, want exit 2 naming it and its line", err)
	}
	// A tab between an engine setting's words is its own business.
	p = mustParse(t, "spark.driver.extraJavaOptions -Da=1\t-Db=2\n", "job.conf")
	if _, err := Resolve(p, nil); err != nil {
		t.Errorf("an engine setting with a tab between its words: %v, want accepted", err)
	}
	// Letters of any script are values like any other, the joiners
	// Persian spelling needs (U+200C) among them.
	for _, v := range []string{"dim-Ünïcode-日本", "/data/گزارش\u200cها", "/data/👩\u200d💻", "/data/❤\ufe0f/wh"} {
		if _, err := Resolve(nil, []Override{{Key: KeyWarehouse, Value: v}}); err != nil {
			t.Errorf("%q: %v, want accepted", v, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.conf")
	if err := os.WriteFile(path, []byte("engagement.raw raw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Get(KeyRaw); v != "raw" {
		t.Errorf("Get = %q", v)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.conf")); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("ReadFile(missing) = %v, want an error naming the file", err)
	}
}

func TestResolveUnknownKey(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		line    int
		key     string
		suggest string // "" for no suggestion
	}{
		{"one letter too many", "engagement.raw r\nengagement.unknownCapp 0.02\n", 2, "engagement.unknownCapp", KeyUnknownCap},
		{"missing letter", "engagment.raw r\n", 1, "engagment.raw", KeyRaw},
		{"wrong case", "engagement.saltbuckets 4\n", 1, "engagement.saltbuckets", KeySaltBuckets},
		{"bare duckdb prefix", "# x\n\nduckdb. 1\n", 3, "duckdb.", ""},
		{"far from everything", "zzz 1\n", 1, "zzz", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.text, "job.conf")
			_, err := Resolve(p, nil)
			if err == nil {
				t.Fatalf("Resolve accepted unknown key %q", tc.key)
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("exit code %d, want 2", code)
			}
			msg := err.Error()
			for _, s := range []string{"job.conf:" + itoa(tc.line), `"` + tc.key + `"`} {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
			if tc.suggest != "" {
				if want := `did you mean "` + tc.suggest + `"`; !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			} else if tc.key == "zzz" && strings.Contains(msg, "did you mean") {
				t.Errorf("error %q suggests a key for a far-off name", msg)
			}
		})
	}

	// An unknown key given as an override is refused too, as coming from a flag.
	_, err := Resolve(nil, []Override{{Key: "engagement.unknownCapp", Value: "0.1"}})
	if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "flag") ||
		!strings.Contains(err.Error(), `did you mean "engagement.unknownCap"`) {
		t.Errorf("Resolve(override with unknown key) = %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestResolveBadValues(t *testing.T) {
	tests := []struct {
		key, value string
	}{
		{KeyUnknownCap, "abc"},
		{KeyUnknownCap, "1.5"},
		{KeyUnknownCap, "-0.1"},
		{KeyUnknownCap, "NaN"},
		{KeyUnknownCap, "Inf"},
		{KeyUnknownCap, ""},
		{KeySaltBuckets, "0"},
		{KeySaltBuckets, "-3"},
		{KeySaltBuckets, "2.5"},
		// Every bucket copies a hot course's enrollments once more.
		{KeySaltBuckets, "1025"},
		{KeySaltBuckets, "100000"},
		{KeyRestatementHorizonDays, "x"},
		{KeyRestatementHorizonDays, "0"},
		{KeyLatenessDays, "-1"},
		{KeyFreshnessMaxDays, "two"},
		{KeyTargetFileBytes, "12XB"},
		{KeyTargetFileBytes, "0"},
		{KeyTargetFileBytes, "-5MB"},
		{KeyEngine, "flink"},
		{KeySparkRemote, "http://x:15002"},
		{KeyAsOfDate, "2026-02-30"},
		// A template that rendered nothing: today's date would replace
		// the pinned run date in silence.
		{KeyAsOfDate, ""},
		// An inline comment would be part of the value: a warehouse
		// named "wh # prod" published where no reader looks.
		{KeyWarehouse, "wh # the curated zone"},
		{KeyHotCourses, "course-k8s # hot"},
		{KeyManifestID, "dim-2026-03-04\t# pinned"},
		{KeyUnknownCap, "0.02 # signed"},
		// Nor do the engines' formats: the spill directory was
		// "/tmp/x # spill here", exit 0.
		{"duckdb.temp_directory", "/tmp/x # spill here"},
		{"spark.sql.shuffle.partitions", "4 # four"},
		// A key left with only a comment ("set by flag"), and quotes.
		{KeyWarehouse, "# set per environment with --warehouse"},
		{KeyHotCourses, "#none"},
		{KeyWarehouse, `"wh"`},
		{KeyManifestID, "'dim-2026-03-04'"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			// From the file: the error names the key and file:line.
			text := "# header\nengagement.engine duckdb\n" + tc.key + " " + tc.value + "\n"
			p := mustParse(t, text, "bad.conf")
			_, err := Resolve(p, nil)
			if err == nil {
				t.Fatalf("Resolve accepted %s = %q from the file", tc.key, tc.value)
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("file: exit code %d, want 2", code)
			}
			for _, s := range []string{tc.key, "bad.conf:3"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("file: error %q does not contain %q", err, s)
				}
			}

			if strings.Contains(tc.value, "#") && tc.key != KeyUnknownCap {
				return // a comment: only the file has them
			}
			// From a flag: the error names the key and says flag.
			_, err = Resolve(nil, []Override{{Key: tc.key, Value: tc.value}})
			if err == nil {
				t.Fatalf("Resolve accepted %s = %q from a flag", tc.key, tc.value)
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("flag: exit code %d, want 2", code)
			}
			for _, s := range []string{tc.key, "flag"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("flag: error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestResolveGoodNumbers(t *testing.T) {
	tests := []struct {
		key, value string
		check      func(Job) bool
	}{
		{KeyUnknownCap, "0", func(j Job) bool { return j.UnknownCap == 0 }},
		{KeyUnknownCap, "1", func(j Job) bool { return j.UnknownCap == 1 }},
		{KeyUnknownCap, "0.015", func(j Job) bool { return j.UnknownCap == 0.015 }},
		{KeySaltBuckets, "1", func(j Job) bool { return j.SaltBuckets == 1 }},
		{KeySaltBuckets, "1024", func(j Job) bool { return j.SaltBuckets == 1024 }},
		{KeyRestatementHorizonDays, "100000", func(j Job) bool { return j.RestatementHorizonDays == 100000 }},
		{KeyLatenessDays, "0", func(j Job) bool { return j.LatenessDays == 0 }},
		{KeyTargetFileBytes, "1", func(j Job) bool { return j.TargetFileBytes == 1 }},
		{KeyTargetFileBytes, "256MB", func(j Job) bool { return j.TargetFileBytes == 256<<20 }},
	}
	for _, tc := range tests {
		j, err := Resolve(nil, []Override{{Key: tc.key, Value: tc.value}})
		if err != nil {
			t.Errorf("Resolve(%s=%q): %v", tc.key, tc.value, err)
			continue
		}
		if !tc.check(j) {
			t.Errorf("Resolve(%s=%q) gave %+v", tc.key, tc.value, j)
		}
	}
}

func TestResolveReportsEveryBadValue(t *testing.T) {
	p := mustParse(t, "engagement.unknownCap abc\nengagement.saltBuckets 0\n", "two.conf")
	_, err := Resolve(p, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, s := range []string{"two.conf:1", "two.conf:2", KeyUnknownCap, KeySaltBuckets} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"10", 10, true},
		{"5B", 5, true},
		{"1KB", 1024, true},
		{"1kb", 1024, true},
		{"192MB", 201326592, true},
		{"192mb", 201326592, true},
		{" 192 MB ", 201326592, true},
		{"1GB", 1073741824, true},
		{"20GB", 21474836480, true},
		{"2TB", 2199023255552, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"8589934591GB", 8589934591 * 1073741824, true}, // 2^63 - 2^30
		{"8589934592GB", 0, false},                      // 2^63: overflows
		{"9223372036854775808", 0, false},
		{"", 0, false},
		{"MB", 0, false},
		{"12XB", 0, false},
		{"1.5GB", 0, false},
		{"-1", 0, false},
		{"-5MB", 0, false},
		{"192 M", 0, false},
		{"192MiB", 0, false},
		{"abc", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", tc.in, got)
		} else if !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseBytes(%q) error %q does not quote the input", tc.in, err)
		}
	}
}

func TestCheckJobID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"empty", "", false},
		{"slash", "a/b", false},
		{"dot dot", "..", false},
		{"dot dot inside", "a..b", false},
		{"parent path", "../x", false},
		{"backslash", `a\b`, false},
		{"space", "has space", false},
		{"10 KB", strings.Repeat("a", 10*1024), false},
		{"129 chars", strings.Repeat("a", 129), false},
		{"single dot", ".", false},
		{"leading dash", "-rf", false},
		{"leading dot", ".hidden", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"equals", "a=b", false},
		{"non-ascii", "jöb", false},
		{"ok", "ok-id_1.2", true},
		{"timestamp", "20260303T0600Z", true},
		{"single char", "a", true},
		{"128 chars", strings.Repeat("a", 128), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckJobID(tc.id)
			if tc.ok {
				if err != nil {
					t.Errorf("CheckJobID(%q) = %v, want nil", tc.id, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckJobID(%q) accepted", tc.id)
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("CheckJobID(%q): exit code %d, want 2", tc.id, code)
			}
			if !errors.Is(err, exitcode.ErrUsage) {
				t.Errorf("CheckJobID(%q): not errors.Is ErrUsage", tc.id)
			}
			if !strings.Contains(err.Error(), "--job-id") {
				t.Errorf("CheckJobID(%q) error %q does not mention --job-id", tc.id, err)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("CheckJobID error is %d bytes long; it should not echo a huge id", len(err.Error()))
			}
		})
	}
}

func TestCheckPublish(t *testing.T) {
	full := Job{
		JobID: "job-1", Dates: []dates.Date{dates.MustParse("2026-03-02")},
		Warehouse: "wh", Raw: "raw", Lessons: "lessons", Enrollments: "enr",
		ManifestID: "dim", EnrollmentSnapshotID: "snap",
	}
	if err := full.CheckPublish(); err != nil {
		t.Fatalf("CheckPublish(full) = %v", err)
	}
	long := full
	long.Warehouse = "/" + strings.Repeat("w/", 1800) + "wh"
	if err := long.CheckPublish(); err != nil {
		t.Errorf("a warehouse path with room for its staged paths: %v", err)
	}
	// Relative, it is given to the kernel as it is, whatever the working
	// directory's length (a 4,000-byte one here).
	deep := t.TempDir()
	for len(deep) < 4000 {
		deep = filepath.Join(deep, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	long.Warehouse = "wh"
	if err := long.CheckPublish(); err != nil {
		t.Errorf("a short relative warehouse path in a deep working directory: %v", err)
	}
	// Spark is given the warehouse absolute.
	long.Engine = "spark"
	if err := long.CheckPublish(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "a path holds at most 4095") {
		t.Errorf("the same on Spark: %v, want refused", err)
	}
	// An empty date list is the gate's to reject (check 8, exit 3, with a
	// record); explain, which has no gate, refuses it.
	none := full
	none.Dates = nil
	if err := none.CheckPublish(); err != nil {
		t.Errorf("CheckPublish refused an empty date list: %v", err)
	}
	if err := none.CheckInputs(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "--dates") {
		t.Errorf("CheckInputs(no dates) = %v, want a usage error naming --dates", err)
	}
	tests := []struct {
		name  string
		edit  func(*Job)
		wants []string
		nots  []string
	}{
		{"warehouse", func(j *Job) { j.Warehouse = "" }, []string{KeyWarehouse}, []string{KeyRaw, KeyManifestID}},
		{"raw", func(j *Job) { j.Raw = "" }, []string{KeyRaw}, []string{KeyWarehouse}},
		{"lessons", func(j *Job) { j.Lessons = "" }, []string{KeyLessons}, nil},
		{"enrollments", func(j *Job) { j.Enrollments = "" }, []string{KeyEnrollments}, nil},
		{"manifest pin", func(j *Job) { j.ManifestID = "" }, []string{KeyManifestID}, []string{KeyEnrollmentSnapshotID}},
		{"snapshot pin", func(j *Job) { j.EnrollmentSnapshotID = "" }, []string{KeyEnrollmentSnapshotID}, nil},
		{"all five inputs", func(j *Job) { *j = Job{JobID: "job-1", Dates: j.Dates, Warehouse: "wh"} },
			[]string{KeyRaw, KeyLessons, KeyEnrollments, KeyManifestID, KeyEnrollmentSnapshotID}, []string{KeyWarehouse}},
		{"nothing set", func(j *Job) { *j = Job{JobID: "job-1", Dates: j.Dates} }, []string{"missing setting", "engagement."}, nil},
		// A template that rendered one empty names it, and the ones never set too.
		{"one empty, others unset", func(j *Job) {
			*j = Job{JobID: "job-1", Dates: j.Dates, Warehouse: "wh", Where: map[string]string{KeyRaw: "job.conf:2"}}
		}, []string{"empty setting: engagement.raw (job.conf:2)", "missing setting: engagement.lessons, engagement.enrollments"}, nil},
		{"bad job id", func(j *Job) { j.JobID = "a/b" }, []string{"--job-id"}, nil},
		{"empty job id", func(j *Job) { j.JobID = "" }, []string{"--job-id"}, nil},
		// Staged paths past the system's limit failed the stage after the
		// attempt record, exit 1 on every retry (review CR).
		{"a warehouse path too long", func(j *Job) { j.Warehouse = "/" + strings.Repeat("w/", 1950) + "wh" },
			[]string{"engagement.warehouse: 3903 bytes long", "a path holds at most 4095"}, nil},
		{"an S3 prefix too long", func(j *Job) { j.Warehouse = "s3://bkt/" + strings.Repeat("k/", 410) + "wh" },
			[]string{"engagement.warehouse: 822 bytes long", "an S3 key holds at most 1024"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := full
			j.Dates = append([]dates.Date(nil), full.Dates...)
			tc.edit(&j)
			err := j.CheckPublish()
			if err == nil {
				t.Fatal("CheckPublish accepted")
			}
			if code := exitcode.Code(err); code != exitcode.Usage {
				t.Errorf("exit code %d, want 2", code)
			}
			for _, s := range tc.wants {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			for _, s := range tc.nots {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q names %q, which is set", err, s)
				}
			}
		})
	}
}

func TestKnownKeys(t *testing.T) {
	keys := KnownKeys()
	if len(keys) != 21 {
		t.Errorf("KnownKeys has %d keys, want 21: %q", len(keys), keys)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("KnownKeys not sorted/unique at %d: %q >= %q", i, keys[i-1], keys[i])
		}
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "engagement.") {
			t.Errorf("known key %q lacks the engagement. prefix", k)
		}
	}
}

func TestFixtureConfResolves(t *testing.T) {
	p, err := ReadFile(filepath.Join("..", "..", "config", "fixture.conf"))
	if err != nil {
		t.Fatalf("config/fixture.conf is committed and must be readable: %v", err)
	}
	j, err := Resolve(p, nil)
	if err != nil {
		t.Fatalf("fixture.conf does not resolve: %v", err)
	}
	if j.RestatementHorizonDays != 2 {
		t.Errorf("fixture horizon = %d, want 2 (docs/contract.md, design volume)", j.RestatementHorizonDays)
	}
	if j.UnknownCap != 0.02 {
		t.Errorf("fixture cap = %v, want 0.02", j.UnknownCap)
	}
	if want := filepath.Join("..", "..", "testdata", "fixture", "raw"); j.Raw != want {
		t.Errorf("fixture raw = %q, want %q (relative to the config file)", j.Raw, want)
	}
	if j.Spark["spark.sql.session.timeZone"] != "UTC" {
		t.Errorf("fixture spark.sql.session.timeZone = %q, want UTC", j.Spark["spark.sql.session.timeZone"])
	}
}

// TestRefusalsMaskSecrets: a refused value that holds a secret (a Spark
// Connect token, a Spark UI password, a secret-named engine setting) is
// quoted with the secret masked: the error reaches the log, the result
// document and the lineage events.
func TestRefusalsMaskSecrets(t *testing.T) {
	for _, tc := range []struct{ key, value string }{
		{KeySparkRemote, `"sc://127.0.0.1:15002/;token=MARKER1"`},
		{KeySparkRemote, "sc://127.0.0.1:15002/;token=MARKER1 # prod cluster"},
		{KeySparkUI, "htps://ui:MARKER1@spark-ui.internal:4040"},
		{"spark.hadoop.fs.s3a.secret.key", "#MARKER1"},
		{"spark.hadoop.fs.s3a.secret.key", "MARKER1 # the prod key"},
	} {
		text := "engagement.engine spark\n" + tc.key + " " + tc.value + "\n"
		_, err := Resolve(mustParse(t, text, "s.conf"), nil)
		if err == nil {
			t.Fatalf("%s %s accepted", tc.key, tc.value)
		}
		if strings.Contains(err.Error(), "MARKER1") || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s %s: %v: want the key named and the secret masked", tc.key, tc.value, err)
		}
	}
	// From a variable, with the white space a mounted secret file leaves.
	_, err := Resolve(mustParse(t, "engagement.engine spark\n", "s.conf"), []Override{{Key: KeySparkRemote, Value: "sc://127.0.0.1:15002/;token=MARKER1\n", Source: "ENGAGEMENT_SPARK_REMOTE"}})
	if err == nil || strings.Contains(err.Error(), "MARKER1") {
		t.Errorf("a token with a trailing newline: %v, want refused with the token masked", err)
	}
}
