// Package inputs finds the files of the three inputs on a local filesystem:
// the raw events' ingest_date partitions and the Parquet files of the lesson
// manifest and the enrollment snapshot. It only lists; it never writes, so the
// raw tree stays byte-identical whatever the job does.
package inputs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
)

// PartitionPrefix names a raw partition directory: ingest_date=YYYY-MM-DD.
const PartitionPrefix = "ingest_date="

// Partition is one ingest_date directory and its Parquet files.
type Partition struct {
	IngestDate dates.Date
	Dir        string
	Files      []string // absolute or as joined from the root, sorted
}

// RawPartitions lists the ingest_date partitions under root, sorted by date.
// Partitions with no Parquet file are left out: an empty directory is not a
// landed ingest day. Hidden and underscore entries (Spark's _SUCCESS, .crc)
// are skipped; any other directory that is not a partition is an error,
// because guessing what it holds could silently drop or add events.
func RawPartitions(root string) ([]Partition, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read raw %s: %w", root, err)
	}
	var out []Partition
	for _, e := range entries {
		name := e.Name()
		if skip(name) {
			continue
		}
		if !e.IsDir() {
			return nil, fmt.Errorf("read raw %s: unexpected file %q: raw holds only %sYYYY-MM-DD directories", root, name, PartitionPrefix)
		}
		if !strings.HasPrefix(name, PartitionPrefix) {
			return nil, fmt.Errorf("read raw %s: unexpected directory %q: want %sYYYY-MM-DD", root, name, PartitionPrefix)
		}
		d, err := dates.Parse(strings.TrimPrefix(name, PartitionPrefix))
		if err != nil {
			return nil, fmt.Errorf("read raw %s: directory %q: %w", root, name, err)
		}
		dir := filepath.Join(root, name)
		files, err := parquetFiles(dir)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			out = append(out, Partition{IngestDate: d, Dir: dir, Files: files})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IngestDate < out[j].IngestDate })
	return out, nil
}

// ParquetPath returns the Parquet files of an input given as a file or a
// directory (Spark writes a directory of part files). A directory with no
// Parquet file is an error naming it.
func ParquetPath(what, path string) ([]string, error) {
	if path == "" {
		return nil, fmt.Errorf("%s: no path given", what)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	files, err := parquetFiles(path)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrNoParquet)
	}
	return files, nil
}

// ErrNoParquet is returned for a directory input without Parquet files.
var ErrNoParquet = errors.New("no .parquet files in the directory")

func parquetFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || skip(e.Name()) || !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
	}
	sort.Strings(files)
	return files, nil
}

func skip(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// parquetMagic opens and closes every Parquet file.
const parquetMagic = "PAR1"

// CheckMagic refuses a file that does not start and end with the Parquet
// magic. Readers differ in how much of a damaged file they accept (DuckDB
// reads a file whose leading magic is wrong, from its footer), and two
// engines must agree on which inputs exist, so the check is made here, once,
// before any engine opens the file. It reads eight bytes and never writes.
func CheckMagic(what, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s file %s: %w", what, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s file %s: %w", what, path, err)
	}
	// The smallest Parquet file is the two magics around a 4-byte footer length.
	if st.Size() < 3*int64(len(parquetMagic)) {
		return fmt.Errorf("%s file %s: not a Parquet file: %d bytes, too small", what, path, st.Size())
	}
	head := make([]byte, len(parquetMagic))
	tail := make([]byte, len(parquetMagic))
	if _, err := f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("%s file %s: %w", what, path, err)
	}
	if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil {
		return fmt.Errorf("%s file %s: %w", what, path, err)
	}
	for _, m := range []struct {
		where string
		got   []byte
	}{{"leading", head}, {"trailing", tail}} {
		if string(m.got) != parquetMagic {
			return fmt.Errorf("%s file %s: not a Parquet file: %s magic bytes %q, want %q (truncated or damaged?)", what, path, m.where, m.got, parquetMagic)
		}
	}
	return nil
}

// IngestDates lists the ingest dates raw holds, oldest first: the engines'
// IngestDates, which is a directory listing whatever engine reads the files.
func IngestDates(raw string) ([]dates.Date, error) {
	parts, err := RawPartitions(raw)
	if err != nil {
		return nil, err
	}
	out := make([]dates.Date, len(parts))
	for i, p := range parts {
		out[i] = p.IngestDate
	}
	return out, nil
}
