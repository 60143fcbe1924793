package inputs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/storage"
)

// maxFooterBytes bounds the footer read from one file: a damaged length
// must not make the job allocate gigabytes. A real footer is mostly
// kilobytes, but grows with columns times row groups: a streaming writer's
// 700 one-row groups of 1,000 columns wrote 72 MB, which pyarrow and
// DuckDB read.
var maxFooterBytes int64 = 512 << 20 // a var for the tests

// Field is one field of a Parquet schema at any depth: the names from the
// top column down to it.
type Field []string

// String is the dotted path, context.email for a field email of a struct
// column context; the groups of a list or map appear as the format names
// them (items.list.element.email).
func (f Field) String() string { return strings.Join(f, ".") }

// Fields returns every field of a Parquet file's schema at any depth, in
// schema order. It reads only the footer (two ranged reads), in Go, so every
// engine is judged on the same schema.
func (s *Source) Fields(ctx context.Context, what string, f File) ([]Field, error) {
	fields, _, err := s.fields(ctx, what, f)
	return fields, err
}

// fields is Fields and whether the file's top-level event_time is a
// timestamp its writer marked as not adjusted to UTC (a zoneless
// TIMESTAMP_NTZ, pandas' naive datetimes).
func (s *Source) fields(ctx context.Context, what string, f File) ([]Field, bool, error) {
	name := what + " file " + f.Path
	b, key, err := s.object(ctx, f.Path)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	buf, err := s.footer(ctx, b, key, f, name)
	if err != nil {
		return nil, false, err
	}
	bad := func(format string, args ...any) error { return badFooter(name, format, args...) }
	elems, err := schemaElements(buf)
	if err != nil {
		return nil, false, bad("%v", err)
	}
	fields, err := flatten(elems, bad)
	if err != nil {
		return nil, false, err
	}
	zoneless := false
	for i, fd := range fields {
		if len(fd) == 1 && strings.EqualFold(fd[0], "event_time") && elems[i+1].zoneless {
			zoneless = true
		}
	}
	return fields, zoneless, nil
}

// Rows is the row count a Parquet file's footer states (num_rows), read
// in Go through the bucket as Fields reads a schema: what a staged file
// holds, counted alike whichever engine wrote it, without a query.
func Rows(ctx context.Context, b storage.Bucket, key string, size int64) (int64, error) {
	buf, err := footer(ctx, b, key, size, key)
	if err != nil {
		return 0, err
	}
	return rowsIn(buf, key)
}

// rowsIn is the row count footer buf states, its errors naming the file name.
func rowsIn(buf []byte, name string) (int64, error) {
	n, err := numRows(buf)
	if err != nil {
		return 0, badFooter(name, "%v", err)
	}
	return n, nil
}

// ErrFooter: a file's bytes hold no Parquet footer this job can decode.
var ErrFooter = errors.New("not a readable Parquet footer")

func badFooter(name, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", name, ErrFooter, fmt.Sprintf(format, args...))
}

// footer reads the thrift FileMetaData of the Parquet object key of size
// bytes, the file that errors call name: its last tailBytes at once, which
// hold most footers whole (one request where two were made for every file
// on an object store), then the rest of a longer one.
func footer(ctx context.Context, b storage.Bucket, key string, size int64, name string) ([]byte, error) {
	if size < 12 {
		return nil, badFooter(name, "%d bytes", size)
	}
	want := min(size, tailBytes)
	tail, err := b.ReadRange(ctx, key, size-want, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(tail)) != want {
		return nil, badFooter(name, "%d bytes at its end, want %d", len(tail), want)
	}
	buf, n, err := footerIn(tail, size, name)
	if err != nil || buf != nil {
		return buf, err
	}
	if buf, err = b.ReadRange(ctx, key, size-8-n, n); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return buf, nil
}

// footerIn cuts the footer out of tail, the last bytes (8 at least) of a
// Parquet file of size bytes; when tail does not hold it whole, buf is nil
// and n is the footer's length, to be read.
func footerIn(tail []byte, size int64, name string) (buf []byte, n int64, err error) {
	end := int64(len(tail))
	n = int64(binary.LittleEndian.Uint32(tail[end-8 : end-4]))
	if n <= 0 || n > size-12 {
		return nil, 0, badFooter(name, "footer length %d in a file of %d bytes", n, size)
	}
	if n > maxFooterBytes {
		return nil, 0, fmt.Errorf("%s: a footer of %d bytes, over the %d this job reads: a damaged length, or a file of very many row groups times columns (rewrite it with larger row groups)",
			name, n, maxFooterBytes)
	}
	if n <= end-8 {
		return tail[end-8-n : end-8], n, nil
	}
	return nil, n, nil
}

// tailBytes is how much of a file's end footer reads first.
const tailBytes = 64 << 10

// flatten turns Parquet's depth-first schema list (each group followed by
// its num_children children) into dotted paths; element 0 is the root.
func flatten(elems []element, bad func(string, ...any) error) ([]Field, error) {
	if len(elems) == 0 {
		return nil, bad("empty schema")
	}
	type frame struct {
		prefix Field
		left   int32
	}
	stack := []frame{{left: elems[0].children}}
	var out []Field
	for _, e := range elems[1:] {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return nil, bad("schema lists more fields than its groups hold")
		}
		top := &stack[len(stack)-1]
		top.left--
		p := append(append(Field{}, top.prefix...), e.name)
		out = append(out, p)
		if c := e.children; c > 0 {
			stack = append(stack, frame{prefix: p, left: c})
		} else if c < 0 {
			return nil, bad("field %s has %d children", p, c)
		}
	}
	return out, nil
}

// Prohibited returns the fields that the prohibited list names, as dotted
// paths, in any letter case and at any depth (EMAIL, Email, context.email
// and a flat column named user.email all match email), in order and
// without repeats; nil when
// there are none. A field is named down to the banned name, so a banned
// struct column is reported once, not with each of its fields.
func Prohibited(fields []Field, prohibited []string) []string {
	banned := map[string]bool{}
	for _, c := range prohibited {
		banned[strings.ToLower(c)] = true
	}
	seen := map[string]bool{}
	var found []string
	// A flat name a flattening writer made of a path (user.email, as
	// json_normalize and Spark's flatten write it) is that path.
	matches := func(name string) bool {
		for _, part := range strings.Split(name, ".") {
			// "email " is as banned as email: a stray space hides nothing.
			if banned[strings.ToLower(strings.TrimSpace(part))] {
				return true
			}
		}
		return false
	}
	for _, f := range fields {
		for i, name := range f {
			if !matches(name) {
				continue
			}
			if p := f[:i+1].String(); !seen[p] {
				seen[p] = true
				found = append(found, p)
			}
			break
		}
	}
	return found
}

// ReservedColumn is the name an engine gives its own column of each raw
// row's file (DuckDB's read_parquet adds one, and refuses a file holding a
// column of that name in any case, naming neither). A raw file with such a
// column is refused up front, naming it, on every engine alike.
const ReservedColumn = "engagement_source_file"

// ProhibitedFields reads the footer of every raw file and returns the
// prohibited fields found, as Prohibited does, across all of them, with the
// first file (in listing order) holding each, so a refusal names where the
// producer must look among a window of many files; and the files whose
// event_time is zoneless (read as UTC, which only the producer can vouch
// for). A top column named ReservedColumn, in any case, is an error naming
// the file.
func (s *Source) ProhibitedFields(ctx context.Context, files []RawFile, prohibited []string) (found []string, firstIn map[string]string, zoneless []string, err error) {
	firstIn = map[string]string{}
	type read struct {
		fields []Field
		noZone bool
	}
	reads := make([]read, len(files))
	// A few files at a time; the first error in listing order is the
	// one named, as when they were read one by one.
	err = bounded.First(len(files), footerReaders, func(i int) error {
		f := files[i]
		fields, noZone, err := s.fields(ctx, "raw", f.File)
		if err != nil {
			return err
		}
		for _, fd := range fields {
			if strings.EqualFold(fd[0], ReservedColumn) {
				return fmt.Errorf("raw file %s: column %s: the name is reserved for the engine's own column of each row's file; rename it where the file is written", f.Path, fd[0])
			}
		}
		reads[i] = read{fields, noZone}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for i, f := range files {
		fields := reads[i].fields
		if reads[i].noZone {
			zoneless = append(zoneless, f.Path)
		}
		// File by file, in listing order: the union, first seen first, is
		// what Prohibited gives over all the fields at once.
		for _, p := range Prohibited(fields, prohibited) {
			if _, ok := firstIn[p]; !ok {
				firstIn[p] = f.Path
				found = append(found, p)
			}
		}
	}
	return found, firstIn, zoneless, nil
}
