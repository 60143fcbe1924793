package pointer_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// validJSON is the pointer of SPEC.md section 5, with real paths.
const validJSON = `{
  "format_version": 1,
  "generation": 7,
  "updated_by_job_id": "20260303T0600Z",
  "dates": {
    "2026-03-02": {
      "job_id": "20260303T0600Z",
      "manifest_id": "dim-2026-03-03",
      "enrollment_snapshot_id": "enr-2026-03-03",
      "fact_files": [
        {
          "path": "staging/job_id=20260303T0600Z/fact_lesson_engagement/event_date=2026-03-02/part-0.parquet",
          "bytes": 123,
          "rows": 45
        }
      ],
      "course_day_files": [
        {
          "path": "staging/job_id=20260303T0600Z/course_day/event_date=2026-03-02/part-0.parquet",
          "bytes": 1,
          "rows": 1
        }
      ],
      "event_count": 1000,
      "unknown_lesson_count": 10,
      "unknown_lesson_rate": 0.01,
      "gate_report": "staging/job_id=20260303T0600Z/_gate.json"
    },
    "2026-03-03": {
      "job_id": "20260304T0600Z",
      "manifest_id": "dim-2026-03-04",
      "enrollment_snapshot_id": "enr-2026-03-04",
      "fact_files": [],
      "course_day_files": [],
      "event_count": 0,
      "unknown_lesson_count": 0,
      "unknown_lesson_rate": 0,
      "gate_report": "staging/job_id=20260304T0600Z/_gate.json"
    }
  }
}
`

func TestDecodeEncodeRoundTrip(t *testing.T) {
	p, err := pointer.Decode([]byte(validJSON))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if p.Generation != 7 || len(p.Dates) != 2 {
		t.Fatalf("decoded %+v", p)
	}
	e := p.Dates[dates.MustParse("2026-03-02")]
	if e.FactFiles[0].Rows != 45 || e.UnknownLessonRate != 0.01 {
		t.Errorf("entry decoded as %+v", e)
	}
	b, err := pointer.Encode(p)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	// The fixture is written in Encode's own layout, so the round trip is
	// byte for byte.
	if string(b) != validJSON {
		t.Errorf("Encode(Decode(x)) != x:\n%s", b)
	}
	again, err := pointer.Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode): %v", err)
	}
	if !reflect.DeepEqual(again, p) {
		t.Errorf("round trip changed the pointer:\n got %+v\nwant %+v", again, p)
	}
}

// Encode writes empty file lists as [], never null, and is deterministic.
func TestEncodeEmptyListsAndDeterminism(t *testing.T) {
	p := pointer.Pointer{
		FormatVersion:  1,
		Generation:     1,
		UpdatedByJobID: "j",
		Dates:          map[dates.Date]pointer.DateEntry{},
	}
	for i := range 20 {
		p.Dates[dates.MustParse("2026-01-01").AddDays(i)] = pointer.DateEntry{JobID: "j"}
	}
	first, err := pointer.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(first, []byte("null")) {
		t.Errorf("Encode wrote null:\n%s", first)
	}
	if !bytes.HasSuffix(first, []byte("}\n")) || !bytes.Contains(first, []byte("\n  \"generation\": 1,")) {
		t.Errorf("Encode is not 2-space indented with a trailing newline:\n%s", first)
	}
	for range 10 {
		b, err := pointer.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("Encode is not deterministic")
		}
	}
	if bytes.Index(first, []byte("2026-01-01")) > bytes.Index(first, []byte("2026-01-20")) {
		t.Errorf("dates are not in ascending order")
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		from    string // substring of validJSON to replace
		to      string
		mention string // the error must mention this
	}{
		{"BadVersion", `"format_version": 1`, `"format_version": 2`, "format_version"},
		{"MissingVersion", `"format_version": 1,`, ``, "format_version"},
		{"GenerationZero", `"generation": 7`, `"generation": 0`, "generation"},
		{"GenerationNegative", `"generation": 7`, `"generation": -3`, "generation"},
		{"GenerationFraction", `"generation": 7`, `"generation": 7.5`, "generation"},
		{"EmptyUpdatedBy", `"updated_by_job_id": "20260303T0600Z"`, `"updated_by_job_id": ""`, "updated_by_job_id"},
		{"EmptyJobID", `"job_id": "20260304T0600Z"`, `"job_id": ""`, "2026-03-03"},
		{"EmptyJobIDField", `"job_id": "20260304T0600Z"`, `"job_id": ""`, "job_id"},
		{"AbsolutePath", `"path": "staging/job_id=20260303T0600Z/fact`, `"path": "/staging/job_id=20260303T0600Z/fact`, "fact_files[0].path"},
		{"DotDotPath", `"path": "staging/job_id=20260303T0600Z/course_day`, `"path": "../x/course_day`, "course_day_files[0].path"},
		{"InnerDotDotPath", `"path": "staging/job_id=20260303T0600Z/course_day`, `"path": "staging/../../course_day`, ".."},
		{"BackslashPath", `"path": "staging/job_id=20260303T0600Z/course_day`, `"path": "staging\\course_day`, "backslash"},
		{"EmptyPath", `"path": "staging/job_id=20260303T0600Z/course_day/event_date=2026-03-02/part-0.parquet"`, `"path": ""`, "path"},
		{"DoubleSlashPath", `"path": "staging/job_id=20260303T0600Z/course_day`, `"path": "staging//course_day`, "path"},
		{"AbsoluteGateReport", `"gate_report": "staging/job_id=20260303T0600Z/_gate.json"`, `"gate_report": "/tmp/_gate.json"`, "gate_report"},
		{"NegativeBytes", `"bytes": 123`, `"bytes": -1`, "fact_files[0].bytes"},
		{"NegativeRows", `"rows": 45`, `"rows": -45`, "fact_files[0].rows"},
		{"NegativeEventCount", `"event_count": 1000`, `"event_count": -1`, "event_count"},
		{"NegativeUnknownCount", `"unknown_lesson_count": 10`, `"unknown_lesson_count": -10`, "unknown_lesson_count"},
		{"RateAboveOne", `"unknown_lesson_rate": 0.01`, `"unknown_lesson_rate": 1.5`, "unknown_lesson_rate"},
		{"RateNegative", `"unknown_lesson_rate": 0.01`, `"unknown_lesson_rate": -0.01`, "unknown_lesson_rate"},
		{"RateNaN", `"unknown_lesson_rate": 0.01`, `"unknown_lesson_rate": NaN`, "invalid character"},
		{"RateString", `"unknown_lesson_rate": 0.01`, `"unknown_lesson_rate": "NaN"`, "unknown_lesson_rate"},
		{"UnknownTopField", `"generation": 7,`, `"generation": 7, "extra": true,`, "extra"},
		{"UnknownEntryField", `"event_count": 1000,`, `"event_count": 1000, "salt": 3,`, "salt"},
		{"UnknownFileField", `"rows": 45`, `"rows": 45, "crc": 1`, "crc"},
		{"CaseFoldedField", `"generation": 7`, `"Generation": 7`, "Generation"},
		{"DuplicateField", `"generation": 7,`, `"generation": 7, "generation": 8,`, "twice"},
		{"DuplicateDate", `"2026-03-03": {`, `"2026-03-02": {`, "twice"},
		{"BadDateKey", `"2026-03-03": {`, `"2026-3-3": {`, "dates"},
		{"ImpossibleDateKey", `"2026-03-03": {`, `"2026-02-30": {`, "2026-02-30"},
		{"TrailingData", "}\n}\n", "}\n}\n{}", "after top-level value"},
		{"NullDocument", validJSON, "null", "format_version"},
		{"NotAnObject", validJSON, "[]", "cannot unmarshal"},
		{"Empty", validJSON, "", "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validJSON, tc.from) {
				t.Fatalf("fixture lacks %q", tc.from)
			}
			in := strings.Replace(validJSON, tc.from, tc.to, 1)
			_, err := pointer.Decode([]byte(in))
			if err == nil {
				t.Fatalf("Decode accepted:\n%s", in)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// Encode refuses what Decode would refuse, so a store never writes a
// pointer it cannot read back.
func TestEncodeRejectsInvalid(t *testing.T) {
	good, err := pointer.Decode([]byte(validJSON))
	if err != nil {
		t.Fatal(err)
	}
	d := dates.MustParse("2026-03-02")
	for _, tc := range []struct {
		name    string
		mutate  func(p *pointer.Pointer)
		mention string
	}{
		{"NaNRate", func(p *pointer.Pointer) { e := p.Dates[d]; e.UnknownLessonRate = math.NaN(); p.Dates[d] = e }, "unknown_lesson_rate"},
		{"InfRate", func(p *pointer.Pointer) { e := p.Dates[d]; e.UnknownLessonRate = math.Inf(1); p.Dates[d] = e }, "unknown_lesson_rate"},
		{"GenerationZero", func(p *pointer.Pointer) { p.Generation = 0 }, "generation"},
		{"DateOutOfRange", func(p *pointer.Pointer) { p.Dates[dates.Date(math.MaxInt32)] = p.Dates[d] }, "dates"},
		{"AbsolutePath", func(p *pointer.Pointer) {
			e := p.Dates[d]
			e.FactFiles = []pointer.File{{Path: "/etc/passwd"}}
			p.Dates[d] = e
		}, "fact_files[0].path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pointer.Merge(good, good.UpdatedByJobID, nil)
			p.Generation = good.Generation
			tc.mutate(&p)
			_, err := pointer.Encode(p)
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("Encode error = %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}

func TestMergeDoesNotMutate(t *testing.T) {
	cur, err := pointer.Decode([]byte(validJSON))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := pointer.Decode([]byte(validJSON))
	mon, tue, wed := dates.MustParse("2026-03-02"), dates.MustParse("2026-03-03"), dates.MustParse("2026-03-04")
	entries := map[dates.Date]pointer.DateEntry{
		tue: {JobID: "job-z", FactFiles: []pointer.File{{Path: "staging/job_id=job-z/f.parquet", Bytes: 1, Rows: 1}}},
		wed: {JobID: "job-z"},
	}
	next := pointer.Merge(cur, "job-z", entries)

	if !reflect.DeepEqual(cur, snapshot) {
		t.Errorf("Merge mutated its input")
	}
	if next.Generation != 8 || next.UpdatedByJobID != "job-z" || next.FormatVersion != 1 {
		t.Errorf("Merge header = %d/%q/%d, want 8/job-z/1", next.Generation, next.UpdatedByJobID, next.FormatVersion)
	}
	if !reflect.DeepEqual(next.Dates[mon], cur.Dates[mon]) {
		t.Errorf("Merge changed the untouched date %s", mon)
	}
	if next.Dates[tue].JobID != "job-z" || next.Dates[wed].JobID != "job-z" {
		t.Errorf("Merge did not replace the given dates: %+v", next.Dates)
	}
	if next.Dates[wed].FactFiles == nil || next.Dates[wed].CourseDayFiles == nil {
		t.Errorf("Merge left nil file lists")
	}

	// The result shares no storage with its inputs: writing through it
	// must not reach cur or entries.
	next.Dates[mon].FactFiles[0].Bytes = 999
	next.Dates[tue].FactFiles[0].Bytes = 999
	delete(next.Dates, mon)
	if !reflect.DeepEqual(cur, snapshot) {
		t.Errorf("changing Merge's result changed its input pointer")
	}
	if entries[tue].FactFiles[0].Bytes != 1 {
		t.Errorf("changing Merge's result changed its entries")
	}
}

// fakeStore answers Publish's re-read from fixed values, for the branches a
// real store reaches only through faults the conformance suite cannot make.
type fakeStore struct {
	cur     pointer.Pointer
	after   *pointer.Pointer // what Load returns once Swap was called, if set
	swapErr error
	history map[int64]pointer.Pointer
	histErr error
	swaps   int
}

func (f *fakeStore) Load(context.Context) (pointer.Pointer, pointer.Version, error) {
	p := f.cur
	if f.swaps > 0 && f.after != nil {
		p = *f.after
	}
	return p, pointer.Version(p.UpdatedByJobID), nil
}

func (f *fakeStore) Swap(context.Context, pointer.Version, pointer.Pointer) error {
	f.swaps++
	return f.swapErr
}

func (f *fakeStore) Generations(context.Context) ([]int64, error) { return nil, nil }

func (f *fakeStore) LoadGeneration(_ context.Context, g int64) (pointer.Pointer, error) {
	if f.histErr != nil {
		return pointer.Pointer{}, f.histErr
	}
	p, ok := f.history[g]
	if !ok {
		return pointer.Pointer{}, fs.ErrNotExist
	}
	return p, nil
}

func TestPublishResolvesUnknownOutcome(t *testing.T) {
	errIO := errors.New("io failure")
	d := dates.MustParse("2026-03-02")
	entries := map[dates.Date]pointer.DateEntry{d: {JobID: "job-x"}}
	base := pointer.Pointer{FormatVersion: 1, Generation: 4, UpdatedByJobID: "job-base", Dates: map[dates.Date]pointer.DateEntry{}}
	mine := pointer.Merge(base, "job-x", entries)
	theirs := pointer.Merge(base, "job-other", nil)
	later := pointer.Merge(theirs, "job-later", nil)

	for _, tc := range []struct {
		name      string
		store     *fakeStore
		wantErr   []error // nil: success
		wantSwaps int
	}{
		// The history copy landed but the pointer did not move: Publish
		// succeeds and swaps once more so the store rolls it forward.
		{"HistoryOnlyLanded", &fakeStore{cur: base, swapErr: errIO, history: map[int64]pointer.Pointer{5: mine}}, nil, 2},
		{"OtherJobTookGeneration", &fakeStore{cur: base, after: &theirs, swapErr: errIO, history: map[int64]pointer.Pointer{5: theirs}}, []error{pointer.ErrNotWritten, errIO}, 1},
		{"HistoryNotRetained", &fakeStore{cur: base, after: &later, swapErr: errIO}, []error{pointer.ErrOutcomeUnknown, errIO}, 1},
		{"NotWritten", &fakeStore{cur: base, swapErr: errIO}, []error{pointer.ErrNotWritten, errIO}, 1},
		{"HistoryUnreadable", &fakeStore{cur: base, swapErr: errIO, histErr: errors.New("503")}, []error{pointer.ErrOutcomeUnknown, errIO}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := pointer.PublishOutcome(t.Context(), tc.store, "job-x", entries)
			got := out.Pointer
			if tc.store.swaps != tc.wantSwaps {
				t.Errorf("Swap called %d times, want %d", tc.store.swaps, tc.wantSwaps)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Publish: %v", err)
				}
				if !reflect.DeepEqual(got, mine) {
					t.Errorf("Publish returned %+v, want %+v", got, mine)
				}
				if !errors.Is(out.LandedDespite, errIO) {
					t.Errorf("LandedDespite = %v, want the Swap's error %v: the caller must learn the store misbehaved", out.LandedDespite, errIO)
				}
				return
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("Publish error %v does not wrap %v", err, want)
				}
			}
			if errors.Is(err, pointer.ErrConflict) {
				t.Errorf("Publish error %v wraps ErrConflict", err)
			}
			if !slices.Contains(tc.wantErr, pointer.ErrOutcomeUnknown) && errors.Is(err, pointer.ErrOutcomeUnknown) {
				t.Errorf("Publish error %v wraps ErrOutcomeUnknown, but the re-read could tell", err)
			}
			if !slices.Contains(tc.wantErr, pointer.ErrNotWritten) && errors.Is(err, pointer.ErrNotWritten) {
				t.Errorf("Publish error %v wraps ErrNotWritten, but the re-read could not tell", err)
			}
		})
	}
}

func TestPublishGivesUpOnEndlessConflict(t *testing.T) {
	s := &fakeStore{cur: pointer.Empty(), swapErr: pointer.ErrConflict}
	_, err := pointer.Publish(t.Context(), s, "job-x", map[dates.Date]pointer.DateEntry{dates.MustParse("2026-03-02"): {JobID: "job-x"}})
	if !errors.Is(err, pointer.ErrConflict) {
		t.Errorf("error = %v, want ErrConflict", err)
	}
	if s.swaps != 64 {
		t.Errorf("Swap called %d times, want 64", s.swaps)
	}
}

func TestPublishRefusesInvalid(t *testing.T) {
	s := &fakeStore{cur: pointer.Empty()}
	d := dates.MustParse("2026-03-02")
	for _, tc := range []struct {
		name    string
		job     string
		entries map[dates.Date]pointer.DateEntry
	}{
		{"EmptyJobID", "", map[dates.Date]pointer.DateEntry{d: {JobID: "j"}}},
		{"EntryWithoutJobID", "j", map[dates.Date]pointer.DateEntry{d: {}}},
		{"BadPath", "j", map[dates.Date]pointer.DateEntry{d: {JobID: "j", FactFiles: []pointer.File{{Path: "../x"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pointer.Publish(t.Context(), s, tc.job, tc.entries); err == nil {
				t.Errorf("Publish accepted an invalid pointer")
			}
			if s.swaps != 0 {
				t.Errorf("Swap called for an invalid pointer")
			}
		})
	}
}
