// Package inputs lists the files of an attempt's three inputs once: the raw
// events of the read window (ingest_date=YYYY-MM-DD partitions), the lesson
// manifest and the enrollment snapshot, on a local disk or on S3. Every
// later step and every engine reads exactly that list, and the attempt lists
// again before the gate to prove nothing was added, removed or changed
// meanwhile. It only lists and reads; it never writes, so the inputs stay
// byte-identical whatever the job does.
package inputs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/storage"
)

// PartitionPrefix names a raw partition directory: ingest_date=YYYY-MM-DD.
const PartitionPrefix = "ingest_date="

// Hidden reports whether a directory entry is bookkeeping rather than data,
// by the Hadoop convention Spark follows: a name beginning with "_" or "."
// (_SUCCESS, .part-0.parquet.crc, _temporary/). Every other file in a
// partition or input directory is data, whatever its name: Hive writes
// 000000_0, other tools .PARQUET or .parq. A name ending in "._COPYING_"
// is judged by dataFiles, which sees its directory.
func Hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// copyingSuffix marks a copy in flight: hadoop fs -put and -cp (onto S3A
// too) write X._COPYING_ and rename it to X when done.
const copyingSuffix = "._COPYING_"

// File is one input file as the attempt listed it. Size and version (the
// ETag on S3, size, modification time and inode locally) are what the
// second listing compares: a file rewritten in place changes them.
type File struct {
	Path    string    `json:"path"` // the local path or s3:// URL an engine reads
	Bytes   int64     `json:"bytes"`
	ModTime time.Time `json:"mtime"`
	Version string    `json:"version"`
}

// RawFile is a raw data file and the partition it was listed under.
type RawFile struct {
	File
	IngestDate dates.Date `json:"ingest_date"`
}

// Request names an attempt's inputs and its raw read window [From, To].
type Request struct {
	Raw, Lessons, Enrollments storage.Location
	From, To                  dates.Date
}

// Listing is the one list of files an attempt reads.
type Listing struct {
	// IngestDates are the landed raw partitions (those holding a data
	// file), oldest first: the restatement horizon is judged on them.
	IngestDates []dates.Date `json:"ingest_dates"`
	// Raw are the data files of the partitions inside the read window,
	// sorted by path.
	Raw         []RawFile `json:"raw"`
	Lessons     []File    `json:"lessons"`
	Enrollments []File    `json:"enrollments"`
}

// RawPaths are the raw files' paths, sorted.
func (l Listing) RawPaths() []string {
	out := make([]string, len(l.Raw))
	for i, f := range l.Raw {
		out[i] = f.Path
	}
	return out
}

// Find is the listed file (raw, lessons or enrollments) at path.
func (l Listing) Find(path string) (File, bool) {
	for _, f := range l.Raw {
		if f.Path == path {
			return f.File, true
		}
	}
	for _, f := range append(slices.Clip(l.Lessons), l.Enrollments...) {
		if f.Path == path {
			return f, true
		}
	}
	return File{}, false
}

// Files is how many files the listing holds, raw and pins.
func (l Listing) Files() int { return len(l.Raw) + len(l.Lessons) + len(l.Enrollments) }

// LessonPaths are the manifest's files.
func (l Listing) LessonPaths() []string { return paths(l.Lessons) }

// EnrollmentPaths are the enrollment snapshot's files.
func (l Listing) EnrollmentPaths() []string { return paths(l.Enrollments) }

func paths(fs []File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}

// Source reads inputs through the buckets an opener gives, one per root,
// kept for the attempt.
type Source struct {
	open    func(context.Context, storage.Location) (storage.Bucket, error)
	mu      sync.Mutex // buckets: the checksum check reads files side by side
	buckets map[string]storage.Bucket
	footers footerCache
}

// NewSource returns a Source that opens buckets with open.
func NewSource(open func(context.Context, storage.Location) (storage.Bucket, error)) *Source {
	return &Source{open: open, buckets: map[string]storage.Bucket{}, footers: footerCache{limit: cacheBytes}}
}

// naming wraps a store's error with what was being read, and names loc
// unless the error does already: a store's errors name their URI
// (storage.Bucket), and "read raw X: open X: …" says X twice.
func naming(what string, loc storage.Location, err error) error {
	if strings.Contains(err.Error(), loc.String()) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s %s: %w", what, loc, err)
}

func (s *Source) bucket(ctx context.Context, loc storage.Location) (storage.Bucket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[loc.String()]; ok {
		return b, nil
	}
	b, err := s.open(ctx, loc)
	if err != nil {
		return nil, err
	}
	s.buckets[loc.String()] = b
	return b, nil
}

// object is the bucket holding the file at p and its key there.
func (s *Source) object(ctx context.Context, p string) (storage.Bucket, string, error) {
	loc, err := storage.Parse(p)
	if err != nil {
		return nil, "", err
	}
	b, err := s.bucket(ctx, loc.Dir())
	return b, loc.Base(), err
}

func file(b storage.Bucket, o storage.Object) File {
	return File{Path: b.Location().Join(o.Key).String(), Bytes: o.Size, ModTime: o.ModTime, Version: o.Version}
}

// ListRaw lists the landed partitions under root and the data files of
// those inside [from, to]. A partition counts as landed when it holds a data
// file; an empty one is not a landed ingest day. Hidden entries are skipped
// everywhere. Anything else that does not fit the layout is an error naming
// it, because guessing what it holds could silently drop or add events: a
// file or a non-partition directory beside the partitions, and a directory
// inside a partition of the read window (hour=23/part-1.parquet).
// Partitions outside the window are only looked at to see whether they
// landed; nothing in them is read.
func (s *Source) ListRaw(ctx context.Context, root storage.Location, from, to dates.Date) ([]dates.Date, []RawFile, error) {
	landed, out, _, err := s.ListRawAll(ctx, root, from, to)
	return landed, out, err
}

// Partition is one landed raw partition as a listing found it: its data
// files, and outside the read window, where nothing is judged, the entries
// a read of it would refuse (a nested directory, a copy still in flight, a
// link that cannot be followed), which a date's restatement meets.
type Partition struct {
	Files      []File
	Unreadable []string
}

// ListRawAll is ListRaw, and also every landed partition as the same
// listing found it (outside the window by the lenient rules: nothing in
// them is read), by ingest date, and each partition outside the window
// that holds no data file but what a read would refuse: what the
// unsettled check compares with what an earlier publish read.
func (s *Source) ListRawAll(ctx context.Context, root storage.Location, from, to dates.Date) ([]dates.Date, []RawFile, map[dates.Date]Partition, error) {
	b, err := s.bucket(ctx, root)
	if err != nil {
		return nil, nil, nil, naming("read raw", root, err)
	}
	files, dirs, err := b.ListDir(ctx, "")
	if err == nil && root.IsS3() && len(files) == 0 && len(dirs) == 0 {
		err = fmt.Errorf("no objects under %s", root)
	}
	if err != nil {
		return nil, nil, nil, naming("read raw", root, err)
	}
	for _, f := range files {
		name := path.Base(f.Key)
		if Hidden(name) {
			continue
		}
		if f.Link {
			// A partition directory's link that cannot be followed: judged
			// only inside the read window, as a partition's files are.
			if d, err := dates.Parse(strings.TrimPrefix(name, PartitionPrefix)); err == nil && strings.HasPrefix(name, PartitionPrefix) && (d < from || d > to) {
				continue
			}
			return nil, nil, nil, fmt.Errorf("read raw %s: %s is a symbolic link that cannot be followed (to nothing, or a loop)", root, name)
		}
		return nil, nil, nil, fmt.Errorf("read raw %s: unexpected file %q: raw holds only %sYYYY-MM-DD directories", root, name, PartitionPrefix)
	}
	var landed []dates.Date
	var out []RawFile
	all := map[dates.Date]Partition{}
	for _, name := range dirs {
		if Hidden(name) {
			continue
		}
		if !strings.HasPrefix(name, PartitionPrefix) {
			return nil, nil, nil, fmt.Errorf("read raw %s: unexpected directory %q: want %sYYYY-MM-DD", root, name, PartitionPrefix)
		}
		d, err := dates.Parse(strings.TrimPrefix(name, PartitionPrefix))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read raw %s: directory %q: %w", root, name, err)
		}
		inWindow := d >= from && d <= to
		var unreadable []string
		data, err := dataFiles(ctx, b, "read raw "+root.String()+": partition", name, inWindow, &unreadable)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(data) == 0 {
			// Not landed (no data file), but a flush written as a
			// directory is no empty partition: the unsettled check names it.
			if len(unreadable) > 0 {
				all[d] = Partition{Unreadable: unreadable}
			}
			continue
		}
		landed = append(landed, d)
		all[d] = Partition{Files: data, Unreadable: unreadable}
		if inWindow {
			for _, f := range data {
				out = append(out, RawFile{File: f, IngestDate: d})
			}
		}
	}
	slices.Sort(landed)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return landed, out, all, nil
}

// ListPath lists an input given as a file or a directory (Spark writes a
// directory of part files). A directory follows the partition rules: hidden
// entries skipped, every other file data, a nested directory an error. A
// directory without a data file is an error naming it.
func (s *Source) ListPath(ctx context.Context, what string, loc storage.Location) ([]File, error) {
	if loc.String() == "" {
		return nil, fmt.Errorf("%s: no path given", what)
	}
	// The location itself is opened first: the first open of an S3 bucket
	// checks it by a listing under the opened location, and its parent
	// (the bucket's root, for s3://b/lessons) is above what a policy
	// granting s3:ListBucket under the inputs' prefixes allows.
	b, err := s.bucket(ctx, loc)
	if err != nil {
		return nil, naming(what, loc, err)
	}
	parent, err := s.bucket(ctx, loc.Dir())
	if err != nil {
		return nil, naming(what, loc, err)
	}
	attrs, statErr := parent.Stat(ctx, loc.Base())
	if statErr == nil {
		// The names a directory's listing passes over are refused given
		// alone too: Spark drops a hidden leaf name (it failed as "unable
		// to infer schema" while DuckDB published), and a copy in flight
		// is a half-written file on either engine.
		switch name := loc.Base(); {
		case strings.HasSuffix(name, copyingSuffix):
			return nil, fmt.Errorf("%s %s: a copy still in flight (hadoop fs -put and -cp write it and rename it to %s when done): wait for it to finish, then rerun with a new job id",
				what, loc, strings.TrimSuffix(name, copyingSuffix))
		case Hidden(name):
			return nil, fmt.Errorf("%s %s: a name beginning with _ or . is bookkeeping to every reader of a directory, and Spark does not read such a file: rename it", what, loc)
		}
		return []File{file(parent, storage.Object{Key: loc.Base(), Attrs: attrs})}, nil
	}
	if !storage.IsNotExist(statErr) {
		return nil, naming(what, loc, statErr)
	}
	files, err := dataFiles(ctx, b, what, "", true, nil)
	if storage.IsNotExist(err) {
		// Neither a file nor a directory: say so as the stat did.
		return nil, naming(what, loc, statErr)
	}
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if loc.IsS3() {
			if _, dirs, _ := b.ListDir(ctx, ""); len(dirs) == 0 {
				return nil, fmt.Errorf("%s %s: no such object, and no objects under it", what, loc)
			}
		}
		return nil, fmt.Errorf("%s %s: %w", what, loc, ErrNoData)
	}
	return files, nil
}

// ErrNoData is returned for a directory input without a data file.
var ErrNoData = errors.New("no data files in the directory (names beginning with _ or . are ignored)")

// dataFiles lists the data files of dir in b, sorted. With strict, a
// subdirectory that is not hidden is an error naming it; without, it is
// passed over (a partition outside the read window is not read, so it is
// not judged), as a lone copy in flight and a broken link are, and named in
// skipped (a directory with a trailing "/").
func dataFiles(ctx context.Context, b storage.Bucket, what, dir string, strict bool, skipped *[]string) ([]File, error) {
	skip := func(name string) {
		if skipped != nil {
			*skipped = append(*skipped, name)
		}
	}
	objs, dirs, err := b.ListDir(ctx, dir)
	if err != nil {
		if storage.IsNotExist(err) && dir == "" {
			return nil, err
		}
		return nil, naming(what, b.Location().Join(dir), err)
	}
	where := b.Location().Join(dir).String()
	for _, d := range dirs {
		switch {
		case Hidden(d):
		case strict:
			return nil, fmt.Errorf("%s %s: %s is a directory: a partition or input directory holds data files only (names beginning with _ or . are ignored)", what, where, d)
		default:
			skip(d + "/")
		}
	}
	var files []File
	names := map[string]bool{}
	for _, o := range objs {
		names[path.Base(o.Key)] = true
	}
	for _, o := range objs {
		name := path.Base(o.Key)
		if Hidden(name) {
			continue
		}
		if final, ok := strings.CutSuffix(name, copyingSuffix); ok {
			// Beside its finished file, a copy of a landed file: Spark
			// hides it, and read as data it counted every event twice.
			// Alone, a copy still running into a partition that should
			// have ended: hidden, the day was published short with exit 0
			// (the rest of it never counted once the date left the
			// horizon); read, a half-written file.
			if names[final] {
				continue
			}
			if !strict {
				skip(name)
				continue
			}
			return nil, fmt.Errorf("%s %s: %s is a copy still in flight (hadoop fs -put and -cp write it and rename it to %s when done): wait for it to finish, then rerun with a new job id",
				what, where, name, final)
		}
		// Outside the read window it is not read, so not judged, as a link.
		if strict && b.Location().IsS3() && strings.ContainsRune(name, utf8.RuneError) {
			// A listing is XML, which cannot carry a control character:
			// the store sent U+FFFD in its place, and the read of that
			// name failed as "no such key". A name that truly holds
			// U+FFFD answers.
			if _, err := b.Stat(ctx, o.Key); storage.IsNotExist(err) {
				return nil, fmt.Errorf("%s %s: %s: the store listed a name holding U+FFFD, the mark of a character a listing cannot carry (a control character), and no object has that name: rename the object",
					what, where, strconv.QuoteToASCII(name))
			} else if err != nil {
				return nil, naming(what, b.Location().Join(o.Key), err)
			}
		}
		if o.Link {
			// Outside the read window it is not read, so not judged.
			if strict {
				return nil, fmt.Errorf("%s %s: %s is a symbolic link that cannot be followed (to nothing, or a loop)", what, where, path.Base(o.Key))
			}
			skip(name)
			continue
		}
		files = append(files, file(b, o))
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// List lists raw, then the manifest, then the enrollments.
func (s *Source) List(ctx context.Context, req Request) (Listing, error) {
	ingest, raw, err := s.ListRaw(ctx, req.Raw, req.From, req.To)
	if err != nil {
		return Listing{}, err
	}
	return s.ListPins(ctx, ingest, raw, req.Lessons, req.Enrollments)
}

// ListPins completes a raw listing with the two pin inputs; a caller that
// judges the raw partitions first (the restatement horizon) lists in two
// steps.
func (s *Source) ListPins(ctx context.Context, ingest []dates.Date, raw []RawFile, lessons, enrollments storage.Location) (Listing, error) {
	l := Listing{IngestDates: ingest, Raw: raw}
	var err error
	if l.Lessons, err = s.ListPath(ctx, "lessons", lessons); err != nil {
		return Listing{}, err
	}
	if l.Enrollments, err = s.ListPath(ctx, "enrollments", enrollments); err != nil {
		return Listing{}, err
	}
	return l, nil
}

// CheckMagic checks every listed file for the Parquet magic at both ends, a
// few files at a time; the first bad file in listing order is the one named.
func (s *Source) CheckMagic(ctx context.Context, l Listing) error {
	type input struct {
		what string
		f    File
	}
	var all []input
	for _, f := range l.Raw {
		all = append(all, input{"raw", f.File})
	}
	for _, f := range l.Lessons {
		all = append(all, input{"lessons", f})
	}
	for _, f := range l.Enrollments {
		all = append(all, input{"enrollments", f})
	}
	return bounded.First(len(all), footerReaders, func(i int) error { return s.checkMagic(ctx, all[i].what, all[i].f) })
}

// footerReaders is how many files the magic and footer checks read at
// once: on an object store each read is a request's latency, and one file
// at a time took over two seconds a thousand files against a server on the
// same machine (benchmark.md, run 38). Each read is small (64 KiB at
// most); with 10 ms added to each request, 16 took half the time 8 did
// (run 39).
const footerReaders = 16

// ErrChanged marks an input that changed between the attempt's listing and
// its check before the gate.
var ErrChanged = errors.New("input changed during the attempt")

// Verify lists req again and compares it with l, the attempt's listing: a
// data file added, removed or changed (size or version) in the read window
// or in either pin input fails the attempt, naming the files, since the
// checks and the stage may then have judged different files.
func (s *Source) Verify(ctx context.Context, req Request, l Listing) error {
	now, err := s.List(ctx, req)
	if err != nil && (storeFailed(err) || ctx.Err() != nil) {
		// The store failed (a network error, an outage) or the run was
		// cancelled (a signal), not the inputs: naming a change would
		// send the person on call to ingestion.
		return fmt.Errorf("list the inputs again: %w", err)
	}
	if err != nil {
		return fmt.Errorf("%w: list again: %w", ErrChanged, err)
	}
	var changes []string
	changes = append(changes, diff("raw", rawFiles(l.Raw), rawFiles(now.Raw))...)
	changes = append(changes, diff("lessons", l.Lessons, now.Lessons)...)
	changes = append(changes, diff("enrollments", l.Enrollments, now.Enrollments)...)
	if len(changes) == 0 {
		return nil
	}
	more := ""
	if len(changes) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(changes)-3)
		changes = changes[:3]
	}
	return fmt.Errorf("%w: %s%s; the attempt's checks and its stage may have read different files, so nothing is published: rerun with a new job id once the inputs are settled",
		ErrChanged, strings.Join(changes, "; "), more)
}

// storeFailed says an error is the store's failure to answer (a network
// error, a 5xx after the SDK's retries) or its refusal (access denied, an
// expired session token, a bucket gone: storage.ErrRefused), not a
// judgement of the inputs: a prefix with no objects left is a change.
func storeFailed(err error) bool {
	var ne net.Error
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &ne) || (errors.As(err, &re) && re.HTTPStatusCode() >= 500) || errors.Is(err, storage.ErrRefused)
}

func rawFiles(rf []RawFile) []File {
	out := make([]File, len(rf))
	for i, f := range rf {
		out[i] = f.File
	}
	return out
}

func diff(what string, before, after []File) []string {
	was := map[string]File{}
	for _, f := range before {
		was[f.Path] = f
	}
	var out []string
	for _, f := range after {
		old, ok := was[f.Path]
		delete(was, f.Path)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s file %s was added after the attempt listed its inputs", what, f.Path))
		case old.Bytes != f.Bytes || old.Version != f.Version || !old.ModTime.Equal(f.ModTime):
			out = append(out, fmt.Sprintf("%s file %s changed after the attempt listed it (%d bytes modified %s, now %d bytes modified %s)",
				what, f.Path, old.Bytes, old.ModTime.UTC().Format(time.RFC3339Nano), f.Bytes, f.ModTime.UTC().Format(time.RFC3339Nano)))
		}
	}
	for _, f := range before {
		if _, gone := was[f.Path]; gone {
			out = append(out, fmt.Sprintf("%s file %s was removed after the attempt listed it", what, f.Path))
		}
	}
	return out
}

// ParquetMagic opens and closes every Parquet file.
const ParquetMagic = "PAR1"

// checkMagic refuses a file that does not start and end with the Parquet
// magic. Readers differ in how much of a damaged file they accept (DuckDB
// reads a file whose leading magic is wrong, from its footer), and two
// engines must agree on which inputs exist, so the check is made here, once,
// before any engine opens the file. It never writes.
func (s *Source) checkMagic(ctx context.Context, what string, f File) error {
	// The smallest Parquet file is the two magics around a 4-byte footer length.
	if f.Bytes < 3*int64(len(ParquetMagic)) {
		return fmt.Errorf("%s file %s: not a Parquet file: %d bytes, too small", what, f.Path, f.Bytes)
	}
	b, key, err := s.object(ctx, f.Path)
	if err != nil {
		return fmt.Errorf("%s file %s: %w", what, f.Path, err)
	}
	n := int64(len(ParquetMagic))
	// One read of the file's end: its trailing magic, and for most files
	// the whole footer, which the later checks take from s.footers. A file
	// no longer than that read holds its leading magic too.
	want := min(f.Bytes, tailBytes)
	end, err := b.ReadRange(ctx, key, f.Bytes-want, want)
	if err != nil {
		return fmt.Errorf("%s file %s: %w", what, f.Path, err)
	}
	head, tail := end, end[max(0, len(end)-int(n)):]
	if int64(len(end)) != f.Bytes {
		if head, err = b.ReadRange(ctx, key, 0, n); err != nil {
			return fmt.Errorf("%s file %s: %w", what, f.Path, err)
		}
	}
	head = head[:min(len(head), int(n))]
	for _, m := range []struct {
		where string
		got   []byte
	}{{"leading", head}, {"trailing", tail}} {
		if string(m.got) != ParquetMagic {
			return fmt.Errorf("%s file %s: not a Parquet file: %s magic bytes %q, want %q (truncated or damaged?)", what, f.Path, m.where, m.got, ParquetMagic)
		}
	}
	if int64(len(end)) == want {
		// A footer this cannot cut out is left to the checks that read
		// it: they name what is wrong with it.
		if buf, _, err := footerIn(end, f.Bytes, what+" file "+f.Path); err == nil && buf != nil {
			s.footers.put(f, buf)
		}
	}
	return nil
}
