// Package pointer holds the one object readers follow: for every published
// event date, the job whose staged files are visible. Moving it is a
// compare-and-swap on its generation, behind the Store seam, so a job that
// publishes Monday leaves Tuesday's entry alone and two jobs publishing at
// once never lose each other's dates.
package pointer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// The pointer formats. Format 2 adds the parent link, the write time, the
// writer's version and the operation to every generation; format 1 has none
// of them. Format 3 adds the source generation of a rollback, so history can
// say where a rolled-back date came from; a format 2 build refuses it rather
// than drop that field. This build writes FormatVersion and reads every format up to it;
// a newer format is refused (ErrNewerFormat), never guessed at. A build that
// knows only format 1 refuses a format 2 pointer the same way: its decoder
// accepts format_version 1 alone and no unknown field.
const (
	FormatVersion    = 3
	minFormatVersion = 1
)

// ErrNewerFormat: the stored pointer was written by a newer engagement in a
// format this build does not know. Its refusal is a usage error (exit 2):
// every retry of this build meets it again, and a scheduler retries exit 1.
var ErrNewerFormat = errors.New("pointer format newer than this build reads")

// File is one staged Parquet file a reader must read.
type File struct {
	Path  string `json:"path"` // relative to the warehouse, slash-separated
	Bytes int64  `json:"bytes"`
	Rows  int64  `json:"rows"`
}

// DateEntry names, for one event date, the job whose files readers see and
// the figures its gate accepted. Both tables always come from the same job.
type DateEntry struct {
	JobID                string  `json:"job_id"`
	ManifestID           string  `json:"manifest_id"`
	EnrollmentSnapshotID string  `json:"enrollment_snapshot_id"`
	FactFiles            []File  `json:"fact_files"`       // never null in JSON: encode empty as []
	CourseDayFiles       []File  `json:"course_day_files"` // never null in JSON
	EventCount           int64   `json:"event_count"`
	UnknownLessonCount   int64   `json:"unknown_lesson_count"`
	UnknownLessonRate    float64 `json:"unknown_lesson_rate"`
	GateReport           string  `json:"gate_report"` // relative path of _gate.json
}

// Parent names the generation a pointer was made from: its number and the
// SHA-256 of its stored bytes. A generation is a true successor of the
// stored pointer only when both match, so a history file that was planted,
// renumbered or edited is never taken for one.
type Parent struct {
	Generation int64  `json:"generation"`
	SHA256     string `json:"sha256"`
}

// NamesParent reports whether p records below, as stored (its generation
// and the digest of its bytes), as its parent.
func (p Pointer) NamesParent(below Pointer) bool {
	return p.Parent != nil && p.Parent.Generation == below.Generation && p.Parent.SHA256 == below.Digest
}

// Operations that make a generation.
const (
	OpPublish  = "publish"
	OpRollback = "rollback" // entries copied byte for byte from SourceGeneration
)

// Pointer is the whole stored pointer: one entry per published event date.
type Pointer struct {
	FormatVersion int   `json:"format_version"`
	Generation    int64 `json:"generation"`
	// Parent is nil for generation 1 and in format 1.
	Parent *Parent `json:"parent,omitempty"`
	// WrittenAt and WriterVersion are read by the command from the clock and
	// the build, never inside a transform. Format 2 only.
	WrittenAt     time.Time `json:"written_at,omitzero"`
	WriterVersion string    `json:"writer_version,omitempty"`
	// Operation says how the generation came to be (publish, rollback).
	// Format 2 on.
	Operation string `json:"operation,omitempty"`
	// SourceGeneration is the generation a rollback copied its dates from;
	// zero for any other operation. Format 3 on.
	SourceGeneration int64                    `json:"source_generation,omitempty"`
	UpdatedByJobID   string                   `json:"updated_by_job_id"`
	Dates            map[dates.Date]DateEntry `json:"dates"`

	// Digest is the hex SHA-256 of the bytes this pointer was decoded from
	// (or that Publish wrote); empty for one built in memory. A child names
	// it as its parent.
	Digest string `json:"-"`
}

// Empty returns the pointer of a warehouse nothing has been published to:
// generation 0 and an empty, non-nil date map.
func Empty() Pointer {
	return Pointer{FormatVersion: FormatVersion, Dates: map[dates.Date]DateEntry{}}
}

// Sum is the hex SHA-256 of stored pointer bytes, the form a Parent names.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Version is an opaque token naming one stored state of the pointer (the
// bucket's version of pointer.json: an ETag on S3; size, modification time
// and inode on a local disk). NoVersion means no pointer has been written
// yet.
type Version string

// NoVersion is the version of a store that holds no pointer yet.
const NoVersion Version = ""

// ErrConflict: the stored pointer is no longer the version the caller read;
// nothing was written.
var ErrConflict = errors.New("pointer changed since it was read")

// ErrOutcomeUnknown: a write failed in a way that leaves unknown whether it
// landed, and a re-read could not tell.
var ErrOutcomeUnknown = errors.New("pointer write outcome unknown")

// ErrNotWritten: a write failed and certainly did not land (the store
// refused it up front, or a re-read showed it); the stored pointer is not
// this write, so a retry is safe.
var ErrNotWritten = errors.New("pointer write did not land")

// ErrStuck: a generation an earlier write committed cannot be rolled
// forward, because pointer.json cannot be replaced (a read-only or
// immutable file, permissions). Every write fails on it the same way until
// that is fixed, so a rerun alone is no remedy.
var ErrStuck = errors.New("pointer.json cannot be replaced")

// Store is the seam every pointer backend implements (objstore, over a
// local directory or S3: history object created with If-None-Match:*,
// pointer replaced with If-Match).
//
// The history copy is the commit point: a generation is taken by whoever
// creates pointer-history/<generation>.json first, and the pointer object is
// then replaced to match it. A backend that finds the history copy of
// generation G+1 already present while the pointer is still at G is looking
// at a Swap that stopped between its two writes; it must make that copy
// current before anything else moves, and report ErrConflict.
type Store interface {
	// Load returns the current pointer and its version; with no pointer yet,
	// an empty Pointer (Generation 0, FormatVersion 1, empty non-nil Dates)
	// and NoVersion. A stored pointer that does not decode is an error, never
	// an empty pointer.
	Load(ctx context.Context) (Pointer, Version, error)

	// Swap makes next the current pointer only if the stored version is still
	// expect and next's parent is the stored pointer (generation and digest),
	// after first keeping an immutable copy of next under
	// pointer-history/<next.Generation>.json. next.Generation must be the
	// loaded generation + 1. Before taking a generation it looks past the
	// stored pointer in the history (Beyond): it rolls an interrupted Swap's
	// copy forward only when that copy is a true successor, and refuses a
	// history that is not a chain. Returns an error wrapping ErrConflict when
	// it lost a race and wrote nothing (or only completed an interrupted
	// earlier Swap), one wrapping ErrBrokenChain when the history beyond the
	// pointer is not a successor, or ErrNotWritten when it refused before
	// writing anything (a symlink, a lock it could not take); in all three
	// nothing of next was written. Any other error means the outcome is
	// unknown.
	Swap(ctx context.Context, expect Version, next Pointer) error

	// Generations lists the retained history generations, ascending. A store
	// without history returns an empty list and no error.
	Generations(ctx context.Context) ([]int64, error)

	// LoadGeneration reads one retained history generation. A generation that
	// is not retained is an error wrapping fs.ErrNotExist.
	LoadGeneration(ctx context.Context, generation int64) (Pointer, error)

	// Expire removes one history generation older than the stored pointer's
	// (retention); it refuses the current generation and any beyond it,
	// which an interrupted Swap may still need. Expiring a generation that
	// is already gone is not an error.
	Expire(ctx context.Context, generation int64) error
}

// wirePointer is Pointer as stored, with the date keys still text so a bad
// key is reported as such rather than as a generic JSON error.
type wirePointer struct {
	FormatVersion    int                  `json:"format_version"`
	Generation       int64                `json:"generation"`
	Parent           *Parent              `json:"parent"`
	WrittenAt        time.Time            `json:"written_at"`
	WriterVersion    string               `json:"writer_version"`
	Operation        string               `json:"operation"`
	SourceGeneration int64                `json:"source_generation"`
	UpdatedByJobID   string               `json:"updated_by_job_id"`
	Dates            map[string]DateEntry `json:"dates"`
}

// Decode parses and validates a stored pointer strictly: unknown, duplicate
// or differently-cased fields are rejected, format_version must be one this
// build reads (a newer one wraps ErrNewerFormat), format 2 names its parent
// (from generation 2 on), write time, writer version and operation, and
// format 1 none of them, generation >= 1, updated_by_job_id non-empty,
// every entry has a non-empty
// job_id, every file path is relative, slash-separated, has no ".." element
// and is not absolute, bytes/rows >= 0, counts >= 0, rate in [0,1] and not
// NaN. Errors say which field and date are wrong. Empty or null file lists
// decode as empty non-nil slices. Digest is set from b. Decode never panics.
// ErrDamaged marks bytes that are not a pointer document at all (not
// JSON); the store that read them says how to restore that file.
var ErrDamaged = errors.New("the file is damaged (a truncated or hand-edited copy)")

func Decode(b []byte) (Pointer, error) {
	if !json.Valid(b) {
		// Unmarshal would report the same, but Valid also rejects trailing
		// data after the object, which a streaming Decoder accepts.
		why := "invalid JSON"
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			why = err.Error()
		}
		return Pointer{}, fmt.Errorf("decode pointer: %s (%d bytes): %w", why, len(b), ErrDamaged)
	}
	if err := checkKeys(b); err != nil {
		return Pointer{}, fmt.Errorf("decode pointer: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w wirePointer
	if err := dec.Decode(&w); err != nil {
		return Pointer{}, fmt.Errorf("decode pointer: %w", err)
	}
	p := Pointer{
		FormatVersion:    w.FormatVersion,
		Generation:       w.Generation,
		Parent:           w.Parent,
		WrittenAt:        w.WrittenAt,
		WriterVersion:    w.WriterVersion,
		Operation:        w.Operation,
		SourceGeneration: w.SourceGeneration,
		UpdatedByJobID:   w.UpdatedByJobID,
		Dates:            make(map[dates.Date]DateEntry, len(w.Dates)),
		Digest:           Sum(b),
	}
	keys := make([]string, 0, len(w.Dates))
	for k := range w.Dates {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d, err := dates.Parse(k)
		if err != nil {
			return Pointer{}, fmt.Errorf("decode pointer: dates: key %q: %w", k, err)
		}
		p.Dates[d] = normalizeEntry(w.Dates[k])
	}
	if err := validate(p); err != nil {
		return Pointer{}, fmt.Errorf("decode pointer: %w", err)
	}
	return p, nil
}

// EncodeDigest is Encode, and the digest a Decode of the bytes would give.
func EncodeDigest(p Pointer) ([]byte, string, error) {
	b, err := Encode(p)
	if err != nil {
		return nil, "", err
	}
	return b, Sum(b), nil
}

// Encode returns the pointer as indented JSON (2 spaces) with a trailing
// newline, dates in ascending order, so equal pointers give equal bytes. It
// refuses a pointer Decode would reject: storing one would leave every later
// Load failing.
func Encode(p Pointer) ([]byte, error) {
	if err := validate(p); err != nil {
		return nil, fmt.Errorf("encode pointer: %w", err)
	}
	p = normalize(p)
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode pointer: %w", err)
	}
	return append(b, '\n'), nil
}

// Normalized returns p in the form Decode produces (non-nil date map and
// file lists, copies of everything shared), for comparing a pointer built
// in memory with one read back.
func (p Pointer) Normalized() Pointer { return normalize(p) }

// normalize returns p with a non-nil date map and non-nil file lists, the
// form Decode produces, so a pointer built in memory compares equal to the
// same pointer read back. p itself is not modified.
func normalize(p Pointer) Pointer {
	out := p
	if p.Parent != nil {
		parent := *p.Parent
		out.Parent = &parent
	}
	out.Dates = make(map[dates.Date]DateEntry, len(p.Dates))
	for d, e := range p.Dates {
		out.Dates[d] = normalizeEntry(e)
	}
	return out
}

// normalizeEntry returns e with its own non-nil copies of the file lists.
func normalizeEntry(e DateEntry) DateEntry {
	e.FactFiles = cloneFiles(e.FactFiles)
	e.CourseDayFiles = cloneFiles(e.CourseDayFiles)
	return e
}

func cloneFiles(fs []File) []File {
	out := make([]File, len(fs))
	copy(out, fs)
	return out
}

// validate checks every rule Decode enforces; dates are visited in order so
// the reported error does not depend on map iteration.
func validate(p Pointer) error {
	switch {
	case p.FormatVersion > FormatVersion:
		return exitcode.UsageError(fmt.Errorf("format_version %d: %w (it reads %d to %d): upgrade engagement to read this warehouse",
			p.FormatVersion, ErrNewerFormat, minFormatVersion, FormatVersion))
	case p.FormatVersion < minFormatVersion:
		return fmt.Errorf("format_version: got %d, want %d to %d", p.FormatVersion, minFormatVersion, FormatVersion)
	}
	if p.Generation < 1 {
		return fmt.Errorf("generation: got %d, want >= 1", p.Generation)
	}
	if err := validateLineage(p); err != nil {
		return err
	}
	if p.UpdatedByJobID == "" {
		return errors.New("updated_by_job_id: empty")
	}
	ds := make([]dates.Date, 0, len(p.Dates))
	for d := range p.Dates {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	for _, d := range ds {
		// A date outside years 0000-9999 would be written as a key Decode
		// cannot read back.
		if back, err := dates.Parse(d.String()); err != nil || back != d {
			return fmt.Errorf("dates: key %s (day %d): not a YYYY-MM-DD date", d, int32(d))
		}
		if err := validateEntry(p.Dates[d]); err != nil {
			return fmt.Errorf("dates[%s]: %w", d, err)
		}
	}
	return nil
}

// validateLineage checks the format 2 fields: present in format 2 (the
// parent from generation 2 on, naming the generation before), absent in
// format 1, so a pointer never claims a lineage its format cannot carry.
func validateLineage(p Pointer) error {
	if p.FormatVersion == 1 {
		if p.Parent != nil || !p.WrittenAt.IsZero() || p.WriterVersion != "" || p.Operation != "" || p.SourceGeneration != 0 {
			return errors.New("format_version 1 carries no parent, written_at, writer_version, operation or source_generation")
		}
		return nil
	}
	if err := validateSource(p); err != nil {
		return err
	}
	switch {
	case p.Generation == 1 && p.Parent != nil:
		return errors.New("parent: generation 1 has none")
	case p.Generation > 1 && p.Parent == nil:
		return fmt.Errorf("parent: missing, generation %d must name generation %d", p.Generation, p.Generation-1)
	case p.Parent != nil && p.Parent.Generation != p.Generation-1:
		return fmt.Errorf("parent.generation: got %d, want %d", p.Parent.Generation, p.Generation-1)
	case p.Parent != nil && !isHexSum(p.Parent.SHA256):
		return fmt.Errorf("parent.sha256: %q is not 64 lower-case hex digits", p.Parent.SHA256)
	case p.WrittenAt.IsZero():
		return errors.New("written_at: missing")
	case p.WriterVersion == "":
		return errors.New("writer_version: empty")
	case p.Operation == "" || !isPlainKey(p.Operation):
		return fmt.Errorf("operation: %q, want a lower-case word such as %q", p.Operation, OpPublish)
	}
	return nil
}

// validateSource checks source_generation: format 3 only, set exactly on
// a rollback, and naming an earlier generation.
func validateSource(p Pointer) error {
	switch {
	case p.FormatVersion < 3 && p.SourceGeneration != 0:
		return fmt.Errorf("source_generation: format_version %d carries none (format 3 on)", p.FormatVersion)
	case p.FormatVersion < 3:
		return nil
	case p.Operation == OpRollback && (p.SourceGeneration < 1 || p.SourceGeneration >= p.Generation):
		return fmt.Errorf("source_generation: got %d, a rollback names an earlier generation (1 to %d)", p.SourceGeneration, p.Generation-1)
	case p.Operation != OpRollback && p.SourceGeneration != 0:
		return fmt.Errorf("source_generation: set on operation %q, only %q has one", p.Operation, OpRollback)
	}
	return nil
}

func isHexSum(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func validateEntry(e DateEntry) error {
	if e.JobID == "" {
		return errors.New("job_id: empty")
	}
	for _, list := range []struct {
		name  string
		files []File
	}{{"fact_files", e.FactFiles}, {"course_day_files", e.CourseDayFiles}} {
		for i, f := range list.files {
			if err := validatePath(f.Path); err != nil {
				return fmt.Errorf("%s[%d].path: %w", list.name, i, err)
			}
			if f.Bytes < 0 {
				return fmt.Errorf("%s[%d].bytes: got %d, want >= 0", list.name, i, f.Bytes)
			}
			if f.Rows < 0 {
				return fmt.Errorf("%s[%d].rows: got %d, want >= 0", list.name, i, f.Rows)
			}
		}
	}
	if e.EventCount < 0 {
		return fmt.Errorf("event_count: got %d, want >= 0", e.EventCount)
	}
	if e.UnknownLessonCount < 0 {
		return fmt.Errorf("unknown_lesson_count: got %d, want >= 0", e.UnknownLessonCount)
	}
	// Written as a negated range check so NaN fails too.
	if !(e.UnknownLessonRate >= 0 && e.UnknownLessonRate <= 1) {
		return fmt.Errorf("unknown_lesson_rate: got %v, want within [0, 1]", e.UnknownLessonRate)
	}
	// An entry may predate its gate report only in hand-built test pointers;
	// when present it is a path like any other.
	if e.GateReport != "" {
		if err := validatePath(e.GateReport); err != nil {
			return fmt.Errorf("gate_report: %w", err)
		}
	}
	return nil
}

// validatePath accepts only canonical relative slash paths, because readers
// join them onto the warehouse root: anything that could step outside it, or
// that names the same file two ways, is refused.
func validatePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty")
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("%q: contains a backslash, want slash-separated", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q: contains a NUL byte", p)
	case path.IsAbs(p):
		return fmt.Errorf("%q: absolute, want relative to the warehouse", p)
	}
	for _, elem := range strings.Split(p, "/") {
		switch elem {
		case "..":
			return fmt.Errorf("%q: has a \"..\" element", p)
		case "", ".":
			return fmt.Errorf("%q: not a clean path (empty or \".\" element)", p)
		}
	}
	return nil
}

// checkKeys rejects duplicate object keys and keys other than lower-case
// ASCII letters, digits, '_' and '-'. encoding/json keeps the last of two
// duplicates and matches field names case-insensitively (with Unicode
// folding), so without this two readers of one pointer could disagree on
// what it says. b must already be valid JSON: that is what lets it scan
// bytes instead of tokens (json.Decoder.Token spent a third of the CPU of
// the 64-writer pointer stress, whose pointer grows to 640 dates). Keys
// are compared as encoding/json decodes them, escapes resolved.
func checkKeys(b []byte) error {
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	var stack []frame
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			// In valid JSON a comma inside an object comes before a key.
			if top := len(stack) - 1; stack[top].object {
				stack[top].expectKey = true
			}
		case '"':
			j := i + 1
			escaped := false
			for ; b[j] != '"'; j++ {
				if b[j] == '\\' {
					escaped = true
					j++
				}
			}
			top := len(stack) - 1
			if top >= 0 && stack[top].object && stack[top].expectKey {
				s := string(b[i+1 : j])
				if escaped {
					if err := json.Unmarshal(b[i:j+1], &s); err != nil {
						return err
					}
				}
				if !isPlainKey(s) {
					return fmt.Errorf("object key %q: want lower-case ASCII letters, digits, '_' or '-' (field names match exactly)", s)
				}
				if stack[top].keys[s] {
					return fmt.Errorf("object key %q: appears twice", s)
				}
				if stack[top].keys == nil {
					stack[top].keys = map[string]bool{}
				}
				stack[top].keys[s] = true
				stack[top].expectKey = false
			}
			i = j
		}
	}
	return nil
}

func isPlainKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
