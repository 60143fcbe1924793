package spark

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/inputs"
)

// absSpec names every input path and listed file as the Spark cluster
// must be given it (serverPath): paths reach the driver and the executors
// as text, and they share no working directory, and maybe no disk, with
// the job.
func absSpec(spec engine.Spec) (engine.Spec, error) {
	abs := func(p *string) error {
		if *p == "" {
			return nil
		}
		a, err := serverPath(*p)
		if err != nil {
			return fmt.Errorf("input path %s: %w", *p, err)
		}
		*p = a
		return nil
	}
	for _, p := range []*string{&spec.Raw, &spec.Lessons, &spec.Enrollments} {
		if err := abs(p); err != nil {
			return spec, err
		}
	}
	l := spec.Inputs
	l.Raw = slices.Clone(l.Raw)
	l.Lessons, l.Enrollments = slices.Clone(l.Lessons), slices.Clone(l.Enrollments)
	for i := range l.Raw {
		if err := abs(&l.Raw[i].Path); err != nil {
			return spec, err
		}
	}
	for _, fs := range [][]inputs.File{l.Lessons, l.Enrollments} {
		for i := range fs {
			if err := abs(&fs[i].Path); err != nil {
				return spec, err
			}
		}
	}
	spec.Inputs = l
	if spec.SchemaKeys != nil {
		keys := make(map[string]string, len(spec.SchemaKeys))
		for p, k := range spec.SchemaKeys {
			if err := abs(&p); err != nil {
				return spec, err
			}
			keys[p] = k
		}
		spec.SchemaKeys = keys
	}
	return spec, nil
}

// serverPath is where the Spark cluster reads or writes p, a local path or
// an s3:// URL as the storage seam names it. An s3:// URL becomes s3a://,
// the scheme of Hadoop's S3A connector (Hadoop has no s3:// filesystem of
// its own); a local path is made absolute, because the driver resolves a
// relative one against its own working directory, not the job's.
func serverPath(p string) (string, error) {
	if scheme, rest, ok := strings.Cut(p, "://"); ok {
		switch strings.ToLower(scheme) {
		case "s3", "s3a":
			return "s3a://" + rest, nil
		case "file":
			p = rest
		default:
			return "", fmt.Errorf("%s: unsupported URL scheme %q", p, scheme)
		}
	}
	return filepath.Abs(p)
}

// quote makes a Spark SQL string literal. Spark's string literals take
// backslash escapes, so both the backslash and the quote are escaped.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// list makes a parenthesized SQL list of string literals.
func list(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quote(s)
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// globEscaper escapes what Spark's file sources expand as a pattern: every
// path they are given goes through Hadoop's glob ({} [] * ? and \ are
// special), so each of those is escaped with a backslash and the path
// names exactly one file or directory.
var globEscaper = strings.NewReplacer(`\`, `\\`, `{`, `\{`, `}`, `\}`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `?`, `\?`)

// literalPath is p as Spark's file sources must be given it to read p
// itself, never a pattern matching its siblings.
func literalPath(p string) string { return globEscaper.Replace(p) }

// pathRef names a file or directory for SQL's parquet.`path` form.
func pathRef(p string) string { return parquetRef(literalPath(p)) }

// parquetRef is SQL's parquet.`pattern` form of a Hadoop path pattern.
func parquetRef(pattern string) string {
	return "parquet.`" + strings.ReplaceAll(pattern, "`", "``") + "`"
}

// scans names exactly the listed files as parquet.`…` relations, one a
// directory: a directory's files as one brace glob of their names
// (dir/{a,b}, each name escaped, a comma too), one file as its own path.
// One relation a file, joined with UNION ALL, overflowed Spark's parser
// and analyzer at about a thousand files (a StackOverflowError, then
// FAILED_TO_PARSE_TOO_COMPLEX); a directory holds a partition's files,
// so the relations are few. A split date's parts, one split_part=i
// directory each, go in their date's glob as split_part=i/name (Hadoop
// expands a brace holding a slash): one relation a part overflowed the
// parser again at about a thousand parts. Directories keep their
// first-seen order. A directory whose path holds a colon is the exception
// (below).
func scans(files []string) []string {
	var dirs []string
	names := map[string][]string{}
	for _, f := range files {
		i := strings.LastIndex(f, "/")
		d, n := f[:i+1], f[i+1:]
		if j := strings.LastIndex(strings.TrimSuffix(d, "/"), "/"); j >= 0 && strings.HasPrefix(d[j+1:], "split_part=") {
			d, n = d[:j+1], d[j+1:]+n
		}
		if _, ok := names[d]; !ok {
			dirs = append(dirs, d)
		}
		names[d] = append(names[d], n)
	}
	var out []string
	for _, d := range dirs {
		ns := names[d]
		_, path, ok := strings.Cut(d, "://")
		if !ok {
			path = d
		}
		if len(ns) == 1 || strings.Contains(path, ":") {
			// Hadoop's glob builds a path from each element of a pattern's
			// directory and cannot parse one holding a colon (a relative
			// path with a scheme), while a plain path is not globbed
			// element by element: such a directory's files go one by one.
			for _, n := range ns {
				out = append(out, pathRef(d+n))
			}
			continue
		}
		// A name holding a colon breaks the brace list the same way (an
		// object store allows it; on disk checkColumns refuses it first):
		// such files go one by one, the others in the list.
		var plain []string
		for _, n := range ns {
			if strings.Contains(n, ":") {
				out = append(out, pathRef(d+n))
			} else {
				plain = append(plain, n)
			}
		}
		switch len(plain) {
		case 0:
		case 1:
			out = append(out, pathRef(d+plain[0]))
		default:
			esc := make([]string, len(plain))
			for j, n := range plain {
				esc[j] = strings.ReplaceAll(literalPath(n), ",", `\,`)
			}
			out = append(out, parquetRef(literalPath(d)+"{"+strings.Join(esc, ",")+"}"))
		}
	}
	return out
}

// utf8Checked projects cols of a Parquet scan, each string column through
// validate_utf8: Spark reads a Parquet string's bytes as they are, and
// a value that is not UTF-8 would be published into files no reader can
// read (DuckDB refuses such a file when it reads it). A statement that
// meets one fails with INVALID_UTF8_STRING; whereNotUTF8 then names the
// file and the column. Each is cast to the binary collation: a Spark 4
// writer records a column's collation (STRING COLLATE UTF8_LCASE) in the
// file, and Spark read it with it, so alice and ALICE were one learner in
// its groups, joins and pin filters (exit 0, other rows than DuckDB's), or
// a collated key joined to a plain one failed as INDETERMINATE_COLLATION.
// Keys are compared by their bytes (docs/contract.md).
func utf8Checked(cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = fmt.Sprintf("CAST(validate_utf8(%s) AS STRING COLLATE UTF8_BINARY) AS %[1]s", c)
	}
	return strings.Join(out, ", ")
}

// filesRel is a relation over exactly the listed files (scans), projected
// to cols, which are string columns (utf8Checked). Every file was checked
// for cols, so a column one file lacks fails before this runs.
func filesRel(files []string, cols []string) string {
	var parts []string
	for _, s := range scans(files) {
		parts = append(parts, fmt.Sprintf("SELECT %s FROM %s", utf8Checked(cols), s))
	}
	return "(" + strings.Join(parts, "\nUNION ALL\n") + ") AS listed"
}

// The string columns the job reads of each input.
// Relations are the parquet.`…` relations the views command reads exactly
// the files uris with, as the engine reads its inputs: where the cluster
// reads them (s3:// as s3a://, Hadoop having no s3:// filesystem; a local
// path absolute), one relation a directory (scans), since a relation a file
// overflowed Spark's parser at about a thousand files.
func Relations(uris []string) ([]string, error) {
	paths := make([]string, len(uris))
	for i, u := range uris {
		p, err := serverPath(u)
		if err != nil {
			return nil, err
		}
		if err := unreadablePath(p); err != nil {
			return nil, err
		}
		paths[i] = p
	}
	return scans(paths), nil
}

// ErrPathUnreadable: a path Spark's file sources can neither read
// literally nor as a pattern.
var ErrPathUnreadable = errors.New("a path Spark cannot read")

// unreadablePath refuses a path holding a colon (after its scheme) and a
// glob character: the escaped character makes it a pattern, which Hadoop
// globs element by element, and an element holding a colon parses as a
// URI with a scheme; the query failed with an error naming neither
// (UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY).
func unreadablePath(p string) error {
	_, path, ok := strings.Cut(p, "://")
	if !ok {
		path = p
	}
	if strings.Contains(path, ":") && strings.ContainsAny(path, `{}[]*?\`) {
		return fmt.Errorf("%w: %s holds ':' and a glob character ({ } [ ] * ? \\): Hadoop globs such a path element by element and cannot parse the element with ':'; move the warehouse to a path without one of them", ErrPathUnreadable, p)
	}
	return nil
}

// CheckWritable refuses a warehouse the engine's writes cannot reach: one
// whose path holds a glob character ({ } [ ] * ? \). A partitioned write
// resolves its LOCATION as a pattern, escaped or not, and failed after the
// whole stage as PATH_NOT_FOUND (or, with a ':' too, URISyntaxException),
// exit 1, which every retry meets again.
func CheckWritable(warehouse string) error {
	_, p, ok := strings.Cut(warehouse, "://")
	shown := warehouse
	if !ok {
		// The server is handed it absolute: the working directory's own
		// glob characters count too.
		p = warehouse
		if abs, err := filepath.Abs(warehouse); err == nil && abs != warehouse {
			p, shown = abs, warehouse+" ("+abs+")"
		}
	}
	if strings.ContainsAny(p, `{}[]*?\`) {
		return fmt.Errorf("%s holds a glob character ({ } [ ] * ? \\), which the spark engine's writes read as a pattern: move the warehouse to a path without one, or publish with --engine duckdb", shown)
	}
	return nil
}
