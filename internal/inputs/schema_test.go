package inputs

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // writes the nested test files

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// writeParquet writes the rows of query to a new Parquet file, with
// more COPY options if given (", ROW_GROUP_SIZE 2048").
func writeParquet(t *testing.T, query string, opts ...string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := filepath.Join(t.TempDir(), "f.parquet")
	if _, err := db.Exec("COPY (" + query + ") TO '" + p + "' (FORMAT parquet" + strings.Join(opts, "") + ")"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFieldsAtAnyDepth(t *testing.T) {
	p := writeParquet(t, `SELECT 'e1' AS event_id,
		{'email': 'a@b', 'device': {'Raw_IP': '10.0.0.1', 'model': 'x'}} AS context,
		[{'card_number': '4111'}] AS payments`)
	fields, err := src().Fields(t.Context(), "raw", fileAt(t, p))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.String())
	}
	for _, want := range []string{"event_id", "context", "context.email", "context.device", "context.device.Raw_IP", "context.device.model", "payments"} {
		if !slices.Contains(got, want) {
			t.Errorf("fields %v lack %s", got, want)
		}
	}
	found := Prohibited(fields, []string{"email", "raw_ip", "card_number", "payment_token"})
	if len(found) != 3 || found[0] != "context.email" || found[1] != "context.device.Raw_IP" || !strings.HasSuffix(found[2], ".card_number") || !strings.HasPrefix(found[2], "payments.") {
		t.Errorf("Prohibited = %v, want context.email, context.device.Raw_IP and the list's card_number", found)
	}
}

func TestProhibited(t *testing.T) {
	f := func(names ...string) Field { return Field(names) }
	cases := []struct {
		name       string
		fields     []Field
		prohibited []string
		want       []string
	}{
		{"none listed", []Field{f("event_id"), f("Email")}, nil, nil},
		{"absent", []Field{f("event_id"), f("lesson_id")}, []string{"email"}, nil},
		{"any letter case", []Field{f("event_id"), f("EMAIL"), f("Email"), f("raw_ip")}, []string{"email", "Raw_IP"}, []string{"EMAIL", "Email", "raw_ip"}},
		{"nested", []Field{f("context"), f("context", "email"), f("context", "ip")}, []string{"email"}, []string{"context.email"}},
		// A banned struct column is named once, not with each of its fields.
		{"banned struct", []Field{f("email"), f("email", "address"), f("email", "verified")}, []string{"email"}, []string{"email"}},
		{"same field in two files", []Field{f("a", "email"), f("a", "email")}, []string{"email"}, []string{"a.email"}},
		// A flat name holding a dot is a flattened path (json_normalize,
		// Spark's flatten): user.email is as banned as user{email}, and
		// email.verified as the struct email.
		{"dotted name", []Field{f("user.email"), f("email.verified"), f("user.name")}, []string{"email"}, []string{"user.email", "email.verified"}},
		{"stray white space", []Field{f("email "), f(" Raw_IP")}, []string{"email", "raw_ip"}, []string{"email ", " Raw_IP"}},
		{"dotted name inside a struct", []Field{f("ctx"), f("ctx", "user.EMAIL")}, []string{"email"}, []string{"ctx.user.EMAIL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Prohibited(tc.fields, tc.prohibited); !slices.Equal(got, tc.want) {
				t.Errorf("Prohibited = %q, want %q", got, tc.want)
			}
		})
	}
}

// A damaged footer is an error naming the file, never a panic.
func TestFieldsDamagedFooter(t *testing.T) {
	good, err := os.ReadFile(writeParquet(t, "SELECT 1 AS a, {'b': 2} AS s"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(good)
	for _, tc := range []struct {
		name  string
		bytes func() []byte
	}{
		{"TooSmall", func() []byte { return []byte("PAR1PAR1") }},
		{"HugeLength", func() []byte {
			b := slices.Clone(good)
			copy(b[n-8:], []byte{0xff, 0xff, 0xff, 0x7f})
			return b
		}},
		{"GarbageSchema", func() []byte {
			// The footer's first bytes, where the schema list starts.
			b := slices.Clone(good)
			start := n - 8 - int(binary.LittleEndian.Uint32(b[n-8:n-4]))
			for i := start; i < start+16; i++ {
				b[i] = 0xff
			}
			return b
		}},
		{"FooterLengthTooShort", func() []byte {
			// The length claims only the footer's last 10 bytes.
			b := slices.Clone(good)
			binary.LittleEndian.PutUint32(b[n-8:n-4], 10)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.parquet")
			if err := os.WriteFile(p, tc.bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := src().Fields(t.Context(), "raw", fileAt(t, p))
			if err == nil || !strings.Contains(err.Error(), "raw file "+p) {
				t.Errorf("Fields error %v, want one naming the file", err)
			}
		})
	}
}

// TestFooterSizeBound: a footer within the bound is read whatever its size
// (a streaming writer's many row groups of a wide schema wrote 72 MB, which
// the old 64 MiB bound refused as unreadable); one past it, real or a
// damaged length, is refused saying so, before it is read.
func TestFooterSizeBound(t *testing.T) {
	// 40 columns, 200 row groups: a footer of some hundred kilobytes.
	var cols []string
	for i := range 40 {
		cols = append(cols, fmt.Sprintf("i AS c%d", i))
	}
	p := writeParquet(t, "SELECT "+strings.Join(cols, ", ")+" FROM range(200) t(i)", ", ROW_GROUP_SIZE 1")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(binary.LittleEndian.Uint32(b[len(b)-8:]))
	defer func(old int64) { maxFooterBytes = old }(maxFooterBytes)
	maxFooterBytes = n
	if f, err := src().Fields(t.Context(), "raw", fileAt(t, p)); err != nil || len(f) != 40 {
		t.Fatalf("a footer of %d bytes at a bound of %d: %d fields, %v", n, maxFooterBytes, len(f), err)
	}
	maxFooterBytes = n - 1
	_, err = src().Fields(t.Context(), "raw", fileAt(t, p))
	if want := fmt.Sprintf("raw file %s: a footer of %d bytes, over the %d this job reads", p, n, n-1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a footer of %d bytes at a bound of %d: %v, want %q", n, n-1, err, want)
	}
}

// Any damage to the footer bytes gives an error or a schema, never a panic
// or a hang: the thrift reader is written for hostile bytes.
func TestFieldsSurvivesCorruption(t *testing.T) {
	good, err := os.ReadFile(writeParquet(t, "SELECT 1 AS a, {'b': 2, 'c': [{'d': 'x'}]} AS s, MAP {'k': 1} AS m"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(good)
	footer := int(binary.LittleEndian.Uint32(good[n-8 : n-4]))
	start := n - 8 - footer
	rng := rand.New(rand.NewPCG(1, 2))
	p := filepath.Join(t.TempDir(), "mutant.parquet")
	for range 3000 {
		b := slices.Clone(good)
		for range 1 + rng.IntN(4) {
			b[start+rng.IntN(footer)] = byte(rng.IntN(256))
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = src().Fields(t.Context(), "raw", fileAt(t, p)) // must return
	}
}

// Rows reads a file's row count from its footer: the counts here are the
// rows each query makes, over one row group and over many.
func TestRowsFromFooter(t *testing.T) {
	cases := []struct {
		name, query, opts string
		want              int64
	}{
		{"none", "SELECT 1 AS a WHERE false", "", 0},
		{"one", "SELECT 'x' AS a", "", 1},
		// Many row groups: the count is the file's, not one group's.
		{"many row groups", "SELECT i, 'v' || i AS s FROM range(25000) t(i)", ", ROW_GROUP_SIZE 2048", 25000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeParquet(t, tc.query, tc.opts)
			f := fileAt(t, p)
			b := local.New(filepath.Dir(p), local.Options{})
			got, err := Rows(t.Context(), b, filepath.Base(p), f.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Rows = %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("not parquet", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "part-0.parquet")
		if err := os.WriteFile(p, []byte("PAR1 this is no footer at all PAR1"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Rows(t.Context(), local.New(filepath.Dir(p), local.Options{}), "part-0.parquet", fileAt(t, p).Bytes)
		if err == nil || !strings.Contains(err.Error(), "part-0.parquet: not a readable Parquet footer") {
			t.Errorf("Rows error %v, want one naming the file and its footer", err)
		}
	})
}

// TestZonelessEventTime: a top-level event_time its writer marked as not
// adjusted to UTC (DuckDB's TIMESTAMP, pandas' naive datetimes) is told
// from one that is (TIMESTAMPTZ); a nested field of that name is not the
// column.
func TestZonelessEventTime(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		zoneless    bool
	}{
		{"TIMESTAMPTZ", "SELECT TIMESTAMPTZ '2026-03-02 10:00:00+00' AS event_time", false},
		{"TIMESTAMP", "SELECT TIMESTAMP '2026-03-02 10:00:00' AS event_time", true},
		{"EVENT_TIME in capitals", "SELECT TIMESTAMP '2026-03-02 10:00:00' AS EVENT_TIME", true},
		{"nested", "SELECT {'event_time': TIMESTAMP '2026-03-02 10:00:00'} AS context, TIMESTAMPTZ '2026-03-02 10:00:00+00' AS event_time", false},
		{"a string", "SELECT '2026-03-02 10:00:00' AS event_time", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeParquet(t, tc.query)
			_, _, zoneless, err := src().ProhibitedFields(t.Context(), []RawFile{{File: fileAt(t, p)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(zoneless) == 1 && zoneless[0] == p; got != tc.zoneless {
				t.Errorf("zoneless files %v, want this one named: %v", zoneless, tc.zoneless)
			}
		})
	}
}

// TestProhibitedFirstIn: each prohibited field found is named with the
// first file (in listing order) holding it, so a refusal over a window of
// many files says where to look.
func TestProhibitedFirstIn(t *testing.T) {
	clean := writeParquet(t, "SELECT 'e1' AS event_id")
	second := writeParquet(t, "SELECT 'e2' AS event_id, 'x' AS Raw_Ip")
	third := writeParquet(t, "SELECT 'e3' AS event_id, 'y' AS raw_ip, 'z' AS email")
	files := []RawFile{{File: fileAt(t, clean)}, {File: fileAt(t, second)}, {File: fileAt(t, third)}}
	found, firstIn, _, err := src().ProhibitedFields(t.Context(), files, []string{"email", "raw_ip"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Raw_Ip": second, "raw_ip": third, "email": third}
	if len(found) != len(want) || !maps.Equal(firstIn, want) {
		t.Errorf("found %v, first in %v; want %v", found, firstIn, want)
	}
}

// readCounter counts a bucket's range reads.
type readCounter struct {
	storage.Bucket
	reads atomic.Int32
}

func (c *readCounter) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c.reads.Add(1)
	return c.Bucket.ReadRange(ctx, key, off, n)
}

// longFooter, written with longFooterOpts, makes a file whose footer is
// longer than tailBytes: 40 columns in 60 row groups (DuckDB's row groups
// are 2048 rows at least).
var longFooter, longFooterOpts = func() string {
	var cols []string
	for i := range 40 {
		cols = append(cols, fmt.Sprintf("i AS c%d", i))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM range(2048*60) t(i)"
}(), ", ROW_GROUP_SIZE 2048"

// TestFooterReads: a footer that fits the first read of a file's end is
// read in one request (an object store answers each slowly; every file
// cost two), a longer one in two; both give the file's rows.
func TestFooterReads(t *testing.T) {
	for _, tc := range []struct {
		name, query, opts string
		rows              int64
		reads             int32
	}{
		{"small", "SELECT i FROM range(1000) t(i)", "", 1000, 1},
		{"longer than the first read", longFooter, longFooterOpts, 2048 * 60, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeParquet(t, tc.query, tc.opts)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.LittleEndian.Uint32(data[len(data)-8:]); (n > tailBytes-8) != (tc.reads == 2) {
				t.Fatalf("a footer of %d bytes: not the case this is (%d reads)", n, tc.reads)
			}
			b := &readCounter{Bucket: local.New(filepath.Dir(p), local.Options{})}
			rows, err := Rows(t.Context(), b, filepath.Base(p), fi.Size())
			if err != nil || rows != tc.rows {
				t.Fatalf("rows %d (%v), want %d", rows, err, tc.rows)
			}
			if got := b.reads.Load(); got != tc.reads {
				t.Errorf("%d reads, want %d", got, tc.reads)
			}
		})
	}
}

// TestFirstBadFileNamed: the magic and footer checks read a few files at a
// time, and still name the first bad file in listing order, whatever the
// order the reads end in; a later bad file of another kind does not win.
func TestFirstBadFileNamed(t *testing.T) {
	good := writeParquet(t, "SELECT 'e1' AS event_id")
	reserved := writeParquet(t, "SELECT 'e1' AS event_id, 'f' AS "+ReservedColumn)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	at := func(i int, content []byte) RawFile {
		p := filepath.Join(dir, fmt.Sprintf("part-%02d.parquet", i))
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return RawFile{File: fileAt(t, p)}
	}
	text := []byte("event_id,learner_key\ne1,l1\n")
	// A footer length past the file: the magic at both ends is intact.
	badFooter := append(append([]byte{}, b[:len(b)-8]...), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1')
	r, err := os.ReadFile(reserved)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bad   map[int][]byte
		check func(files []RawFile) error
		want  int
	}{
		{"magic", map[int][]byte{3: text, 11: text}, func(files []RawFile) error {
			return src().CheckMagic(t.Context(), Listing{Raw: files})
		}, 3},
		{"footer before a reserved column", map[int][]byte{2: badFooter, 9: r}, func(files []RawFile) error {
			_, _, _, err := src().ProhibitedFields(t.Context(), files, nil)
			return err
		}, 2},
		{"reserved column before a footer", map[int][]byte{2: r, 9: badFooter}, func(files []RawFile) error {
			_, _, _, err := src().ProhibitedFields(t.Context(), files, nil)
			return err
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []RawFile
			for i := range 16 {
				content := b
				if c, ok := tc.bad[i]; ok {
					content = c
				}
				files = append(files, at(i, content))
			}
			err := tc.check(files)
			if err == nil || !strings.Contains(err.Error(), files[tc.want].Path+":") {
				t.Errorf("err = %v, want it to name %s", err, files[tc.want].Path)
			}
		})
	}
}
