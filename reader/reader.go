// Package reader resolves an engagement warehouse's pointer for programs
// that read the published tables, so they need no glue of their own: it
// opens the warehouse (a local directory or an s3:// URL), loads
// pointer.json, and returns for a date or a range of dates the exact files
// of each table and the figures the publish gate accepted.
//
// Read exactly the files returned, never a directory listing or a glob of
// the warehouse: staging/ also holds abandoned and rejected attempts, which
// must stay invisible. The files carry no event_date column (it is the
// date the files were returned for).
//
// Usage:
//
//	w, err := reader.Open(ctx, "s3://curated/engagement") // or a local path
//	if err != nil { ... }
//	snap, err := w.Current(ctx) // errors.Is(err, reader.ErrNoWarehouse): nothing published there
//	if err != nil { ... }
//	d, err := snap.Date("2026-03-02") // errors.Is(err, reader.ErrNotPublished)
//	if err != nil { ... }
//	for _, f := range d.FactFiles {
//		// f.URI is an absolute local path or an s3:// URI
//	}
//
// S3 settings (endpoint, region, credentials) come from the standard AWS
// chain: AWS_* environment variables, shared config files, instance roles.
// ENGAGEMENT_S3_PATH_STYLE is not read here; a localhost or IP endpoint uses
// path-style addressing automatically.
package reader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// ErrNoWarehouse: the location holds no pointer.json (a mistyped location,
// or nothing published there yet). It is never reported as an empty
// warehouse.
var ErrNoWarehouse = errors.New("no warehouse (no pointer.json)")

// ErrLost: the location has no pointer.json but its pointer-history/ holds
// generations: pointer.json was deleted or lost, and the warehouse is
// damaged, not absent. Readers see nothing until an operator restores it
// (the error says how); it is not ErrNoWarehouse, which sends a reader to
// check the location.
var ErrLost = pointer.ErrLost

// ErrPending: the location has no pointer.json and its history holds only
// generation 1: a first publish stopped after committing it (or
// pointer.json was deleted since). Readers see nothing until the next
// publish rolls it forward; it is not ErrNoWarehouse, whose advice (check
// the location) would be wrong.
var ErrPending = errors.New("first generation committed, not visible yet")

// ErrNotPublished: the pointer has no entry for the date (or none in the
// range) asked for.
var ErrNotPublished = errors.New("date not published")

// Table names, as the views and the warehouse's folders call them.
const (
	FactTable      = "fact_lesson_engagement"
	CourseDayTable = "course_day"
)

// Warehouse is an opened warehouse location.
type Warehouse struct {
	loc   storage.Location
	store *objstore.Store
}

// Open opens the warehouse at location: a local directory (relative paths
// are made absolute) or s3://bucket/prefix. It reads nothing yet; a
// location that does not exist is reported by Current.
func Open(ctx context.Context, location string) (*Warehouse, error) {
	loc, err := storage.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("open warehouse %q: %w", location, err)
	}
	if loc.Scheme == storage.File {
		abs, err := filepath.Abs(loc.Path)
		if err != nil {
			return nil, fmt.Errorf("open warehouse %s: %w", location, err)
		}
		if loc, err = storage.Parse(abs); err != nil {
			return nil, fmt.Errorf("open warehouse %s: %w", location, err)
		}
	}
	b, err := open.Warehouse(ctx, loc, open.Options{})
	if err != nil {
		return nil, fmt.Errorf("open warehouse %s: %w", location, err)
	}
	return &Warehouse{loc: loc, store: objstore.New(b)}, nil
}

// Location is the warehouse's absolute location (a path or an s3:// URL).
func (w *Warehouse) Location() string { return w.loc.String() }

// Current loads the current pointer. Its error wraps ErrNoWarehouse when
// the location holds no pointer.json and no history, ErrPending when the
// history holds generation 1 alone, ErrLost when it holds more.
func (w *Warehouse) Current(ctx context.Context) (*Snapshot, error) {
	p, v, err := w.store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load pointer of %s: %w", w.loc, err)
	}
	if v == pointer.NoVersion {
		if newest, lost, err := pointer.Lost(ctx, w.store); err != nil {
			return nil, fmt.Errorf("load pointer of %s: %w", w.loc, err)
		} else if lost {
			return nil, pointer.LostError(w.loc.String(), newest)
		} else if newest > 0 {
			return nil, fmt.Errorf("%w: %s", ErrPending, pointer.LoneFirst(w.loc.String()))
		}
		return nil, fmt.Errorf("%s: %w", w.loc, ErrNoWarehouse)
	}
	return &Snapshot{loc: w.loc, p: p}, nil
}

// Snapshot is one generation of the pointer: what readers see until the
// next publish or rollback. It does not change when the pointer moves.
type Snapshot struct {
	loc storage.Location
	p   pointer.Pointer
}

// Generation is the pointer generation the snapshot was loaded at.
func (s *Snapshot) Generation() int64 { return s.p.Generation }

// WrittenAt is when the generation was written (zero in format 1 pointers).
func (s *Snapshot) WrittenAt() time.Time { return s.p.WrittenAt }

// File is one Parquet file a reader must read.
type File struct {
	URI   string // absolute local path or s3:// URI, literal: never URL-parse it (a key may hold % # ?)
	Bytes int64
	Rows  int64
}

// Date is one published event date: the job whose files are visible, its
// pins and gate figures, and both tables' exact files.
type Date struct {
	Date                 string // YYYY-MM-DD
	Generation           int64  // of the snapshot it was read from
	JobID                string
	ManifestID           string
	EnrollmentSnapshotID string
	EventCount           int64
	UnknownLessonCount   int64
	UnknownLessonRate    float64
	FactFiles            []File
	CourseDayFiles       []File
}

// Files returns the date's files of table (FactTable or CourseDayTable).
func (d Date) Files(table string) ([]File, error) {
	switch table {
	case FactTable:
		return d.FactFiles, nil
	case CourseDayTable:
		return d.CourseDayFiles, nil
	}
	return nil, fmt.Errorf("unknown table %q: want %s or %s", table, FactTable, CourseDayTable)
}

// Dates returns every published date, ascending.
func (s *Snapshot) Dates() []Date {
	out := make([]Date, 0, len(s.p.Dates))
	for d := range s.p.Dates {
		out = append(out, s.entry(d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date < out[j].Date })
	return out
}

// Date returns one published date (YYYY-MM-DD). A date the pointer does
// not list is an error wrapping ErrNotPublished.
func (s *Snapshot) Date(date string) (Date, error) {
	d, err := dates.Parse(date)
	if err != nil {
		return Date{}, fmt.Errorf("date %q: %w", date, err)
	}
	if _, ok := s.p.Dates[d]; !ok {
		return Date{}, fmt.Errorf("%s at generation %d of %s: %w", d, s.p.Generation, s.loc, ErrNotPublished)
	}
	return s.entry(d), nil
}

// Range returns the published dates from from to to (inclusive),
// ascending. Unpublished dates inside the range are left out, so a caller
// that needs every day should compare the result with the range; a range
// with no published date at all is an error wrapping ErrNotPublished.
func (s *Snapshot) Range(from, to string) ([]Date, error) {
	f, err := dates.Parse(from)
	if err != nil {
		return nil, fmt.Errorf("range start %q: %w", from, err)
	}
	t, err := dates.Parse(to)
	if err != nil {
		return nil, fmt.Errorf("range end %q: %w", to, err)
	}
	if t < f {
		return nil, fmt.Errorf("range %s..%s: end before start", f, t)
	}
	var out []Date
	for _, d := range s.Dates() {
		if d.Date >= f.String() && d.Date <= t.String() {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s..%s at generation %d of %s: %w", f, t, s.p.Generation, s.loc, ErrNotPublished)
	}
	return out, nil
}

func (s *Snapshot) entry(d dates.Date) Date {
	e := s.p.Dates[d]
	return Date{
		Date: d.String(), Generation: s.p.Generation,
		JobID: e.JobID, ManifestID: e.ManifestID, EnrollmentSnapshotID: e.EnrollmentSnapshotID,
		EventCount: e.EventCount, UnknownLessonCount: e.UnknownLessonCount, UnknownLessonRate: e.UnknownLessonRate,
		FactFiles: s.files(e.FactFiles), CourseDayFiles: s.files(e.CourseDayFiles),
	}
}

func (s *Snapshot) files(fs []pointer.File) []File {
	out := make([]File, len(fs))
	for i, f := range fs {
		out[i] = File{URI: s.loc.Join(f.Path).String(), Bytes: f.Bytes, Rows: f.Rows}
	}
	return out
}
