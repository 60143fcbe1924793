package pointer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
)

// A pointer.json against the history copy written with it: which of the
// two was edited, when they differ.

// ErrCopyDiffers: pointer.json is not the history copy written with it,
// byte for byte; one of the two was edited. It always comes wrapped with
// ErrBrokenChain: nothing was written.
var ErrCopyDiffers = errors.New("pointer.json differs from its history copy")

// OwnCopy checks that cur, the stored pointer.json, is the generation its
// history copy holds, byte for byte (their digests): a pointer.json edited
// in place keeps its generation, and a write built on it would carry the
// edit into a generation of a sound chain, with history crediting that
// writer with it. A missing copy is refused too: every write creates the
// copy before pointer.json, and gc never expires the current one, so it was
// removed by hand, and with it the only proof that pointer.json is unedited
// (an edit and a deletion together were carried forward, exit 0). w, when
// not nil, is asked which of the two agrees with what its jobs staged.
func OwnCopy(ctx context.Context, s Store, cur Pointer, w Witness) error {
	if cur.Generation < 1 {
		return nil
	}
	h, err := s.LoadGeneration(ctx, cur.Generation)
	if errors.Is(err, fs.ErrNotExist) {
		// The store's words too: on a local warehouse they tell a stray
		// file named pointer-history (the copy's path runs through it)
		// from a removed copy, whose remedy would fail.
		return fmt.Errorf("%w: pointer-history/%d.json, the copy written with pointer.json (generation %d), is missing (%v): it was removed by hand, or a file stands where its directory should, and pointer.json cannot be shown unedited; "+
			"nothing was changed: move any such file away, restore the copy from a backup, or, once pointer.json is checked good, copy it to pointer-history/%d.json",
			ErrBrokenChain, cur.Generation, cur.Generation, err, cur.Generation)
	}
	if err != nil {
		return err
	}
	if h.Digest == cur.Digest {
		return nil
	}
	// Which of the two was edited: both were written with the same parent
	// record. Only a parent record that one of them no longer holds tells:
	// an edited figure or file list looks the same from either side, and
	// advice to copy one over the other published the edit whenever it was
	// the history copy that had been changed.
	if cur.Parent != nil && h.Parent != nil && cur.Generation > 1 {
		if below, err := s.LoadGeneration(ctx, cur.Generation-1); err == nil {
			switch {
			case cur.NamesParent(below) && !h.NamesParent(below):
				return fmt.Errorf("%w: %w: pointer-history/%d.json (sha256 %s) is not pointer.json (generation %d, sha256 %s), the copy written with it: the history copy was edited (its parent record no longer names generation %d as written, while pointer.json's does); "+
					"nothing was changed: once pointer.json is checked good, copy it over pointer-history/%d.json",
					ErrBrokenChain, ErrCopyDiffers, cur.Generation, h.Digest, cur.Generation, cur.Digest, cur.Generation-1, cur.Generation)
			case h.NamesParent(below) && !cur.NamesParent(below):
				return fmt.Errorf("%w: %w: pointer.json (generation %d, sha256 %s) is not pointer-history/%d.json (sha256 %s), the copy written with it: it was edited in place (its parent record no longer names generation %d as written, while the copy's does); "+
					"nothing was changed: copy pointer-history/%d.json back over pointer.json, then publish or roll back to change what readers see (each is recorded)",
					ErrBrokenChain, ErrCopyDiffers, cur.Generation, cur.Digest, cur.Generation, h.Digest, cur.Generation-1, cur.Generation)
			}
		}
	}
	if w != nil {
		switch side, why := Judge(ctx, w, cur, h); side {
		case "pointer.json":
			return fmt.Errorf("%w: %w: pointer.json (generation %d, sha256 %s) is not pointer-history/%d.json (sha256 %s), the copy written with it: it was edited in place (%s, while the copy's agrees); "+
				"nothing was changed: copy pointer-history/%d.json back over pointer.json, then publish or roll back to change what readers see (each is recorded)",
				ErrBrokenChain, ErrCopyDiffers, cur.Generation, cur.Digest, cur.Generation, h.Digest, why, cur.Generation)
		case "copy":
			return fmt.Errorf("%w: %w: pointer-history/%d.json (sha256 %s) is not pointer.json (generation %d, sha256 %s), the copy written with it: the history copy was edited (%s, while pointer.json's agrees); "+
				"nothing was changed: once pointer.json is checked good, copy it over pointer-history/%d.json",
				ErrBrokenChain, ErrCopyDiffers, cur.Generation, h.Digest, cur.Generation, cur.Digest, why, cur.Generation)
		}
	}
	return fmt.Errorf("%w: %w: pointer.json (generation %d, sha256 %s) is not pointer-history/%d.json (sha256 %s), the copy written with it: one of the two was edited in place, and nothing tells which (%s); "+
		"nothing was changed: the sound one names the files its job staged with their sizes, and each date's figures in that job's _gate.json (the entry's gate_report); copy it over the other, then publish or roll back to change what readers see (each is recorded)",
		ErrBrokenChain, ErrCopyDiffers, cur.Generation, cur.Digest, cur.Generation, h.Digest, differences(cur, h, "pointer.json", fmt.Sprintf("pointer-history/%d.json", cur.Generation)))
}

// Witness says whether a date's entry agrees with what its job staged:
// "" when it does, else where it does not. An error means it cannot tell.
type Witness func(ctx context.Context, d dates.Date, e DateEntry) (string, error)

// Judge names the side of two differing copies of one generation, cur
// (pointer.json) and h (its history copy), whose entries disagree with
// what their jobs staged ("pointer.json" or "copy") and why, when every
// date they differ in tells and only the other side agrees on each; ""
// otherwise.
func Judge(ctx context.Context, w Witness, cur, h Pointer) (side, why string) {
	var curBad, copyBad string
	compared := false
	for _, d := range slices.Sorted(maps.Keys(cur.Dates)) {
		a, b := cur.Dates[d], h.Dates[d]
		if _, ok := h.Dates[d]; !ok || SameEntry(a, b) {
			continue
		}
		wa, err1 := w(ctx, d, a)
		wb, err2 := w(ctx, d, b)
		if err1 != nil || err2 != nil {
			return "", ""
		}
		compared = true
		if wa != "" && curBad == "" {
			curBad = fmt.Sprintf("its %s entry disagrees with what job %s staged: %s", d, a.JobID, wa)
		}
		if wb != "" && copyBad == "" {
			copyBad = fmt.Sprintf("its %s entry disagrees with what job %s staged: %s", d, b.JobID, wb)
		}
	}
	switch {
	case !compared:
		return "", ""
	case curBad != "" && copyBad == "":
		return "pointer.json", curBad
	case copyBad != "" && curBad == "":
		return "copy", copyBad
	}
	return "", ""
}

// differences says, for an operator comparing two copies of one
// generation, where a and b (named an and bn) differ: the first few dates
// and fields, with both values where they are one value each.
func differences(a, b Pointer, an, bn string) string {
	var out []string
	field := func(where, name string, av, bv any) {
		if av != bv {
			out = append(out, fmt.Sprintf("%s%s: %s %v, %s %v", where, name, an, av, bn, bv))
		}
	}
	field("", "written_at", a.WrittenAt.UTC().Format(time.RFC3339Nano), b.WrittenAt.UTC().Format(time.RFC3339Nano))
	field("", "updated_by_job_id", a.UpdatedByJobID, b.UpdatedByJobID)
	field("", "operation", a.Operation, b.Operation)
	field("", "source_generation", a.SourceGeneration, b.SourceGeneration)
	field("", "format_version", a.FormatVersion, b.FormatVersion)
	ds := slices.Sorted(maps.Keys(a.Dates))
	for d := range b.Dates {
		if _, ok := a.Dates[d]; !ok {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	for _, d := range ds {
		ae, aok := a.Dates[d]
		be, bok := b.Dates[d]
		where := d.String() + " "
		switch {
		case !aok:
			out = append(out, fmt.Sprintf("%s: only in %s", d, bn))
		case !bok:
			out = append(out, fmt.Sprintf("%s: only in %s", d, an))
		default:
			field(where, "job_id", ae.JobID, be.JobID)
			field(where, "manifest_id", ae.ManifestID, be.ManifestID)
			field(where, "enrollment_snapshot_id", ae.EnrollmentSnapshotID, be.EnrollmentSnapshotID)
			field(where, "event_count", ae.EventCount, be.EventCount)
			field(where, "unknown_lesson_count", ae.UnknownLessonCount, be.UnknownLessonCount)
			field(where, "unknown_lesson_rate", ae.UnknownLessonRate, be.UnknownLessonRate)
			field(where, "gate_report", ae.GateReport, be.GateReport)
			if !slices.Equal(ae.FactFiles, be.FactFiles) {
				out = append(out, where+"fact_files differ")
			}
			if !slices.Equal(ae.CourseDayFiles, be.CourseDayFiles) {
				out = append(out, where+"course_day_files differ")
			}
		}
	}
	switch {
	case len(out) == 0:
		// The same content spelt otherwise (spacing, key order).
		return "the same figures and files, written with other bytes"
	case len(out) > 4:
		return strings.Join(out[:4], "; ") + fmt.Sprintf("; and %d more", len(out)-4)
	}
	return strings.Join(out, "; ")
}
