package pointer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// validJSON is a format 1 pointer (docs/pointer.md), with real paths.
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

// validJSONv2 is a format 2 generation: validJSON's successor, naming it.
var validJSONv2 = strings.Replace(strings.Replace(validJSON, `"format_version": 1,
  "generation": 7,`, `"format_version": 2,
  "generation": 8,
  "parent": {
    "generation": 7,
    "sha256": "`+pointer.Sum([]byte(validJSON))+`"
  },
  "written_at": "2026-03-04T06:00:00Z",
  "writer_version": "v0.9.0",
  "operation": "publish",`, 1), `"updated_by_job_id": "20260303T0600Z"`, `"updated_by_job_id": "20260304T0600Z"`, 1)

func TestDecodeEncodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		format     int
	}{{"Format1", validJSON, 1}, {"Format2", validJSONv2, 2}} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.json, tc.format) })
	}
}

func roundTrip(t *testing.T, validJSON string, format int) {
	p, err := pointer.Decode([]byte(validJSON))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if p.FormatVersion != format || p.Digest != pointer.Sum([]byte(validJSON)) {
		t.Errorf("decoded format %d digest %q, want %d and the sum of the bytes", p.FormatVersion, p.Digest, format)
	}
	if p.Generation < 7 || len(p.Dates) != 2 {
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
		FormatVersion:  2,
		Generation:     1,
		WrittenAt:      time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC),
		WriterVersion:  "v1",
		Operation:      pointer.OpPublish,
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
	if bytes.Contains(first, []byte("null")) || bytes.Contains(first, []byte("parent")) {
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
		{"NewerVersion", `"format_version": 1`, `"format_version": 4`, "newer than this build reads"},
		{"VersionZero", `"format_version": 1`, `"format_version": 0`, "format_version"},
		{"MissingVersion", `"format_version": 1,`, ``, "format_version"},
		{"Format1WithParent", `"generation": 7,`, `"generation": 7, "parent": {"generation": 6, "sha256": "` + strings.Repeat("a", 64) + `"},`, "format_version 1 carries no parent"},
		{"Format1WithWriter", `"generation": 7,`, `"generation": 7, "writer_version": "v1",`, "format_version 1"},
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
			if tc.from == validJSON {
				in = tc.to
			}
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

// TestDecodeRejectsLineage breaks the format 2 fields one at a time.
func TestDecodeRejectsLineage(t *testing.T) {
	sum := pointer.Sum([]byte(validJSON))
	for _, tc := range []struct {
		name, from, to, mention string
	}{
		{"MissingParent", `"parent": {
    "generation": 7,
    "sha256": "` + sum + `"
  },`, ``, "parent: missing"},
		{"ParentNotPrevious", `"generation": 7,
    "sha256"`, `"generation": 5,
    "sha256"`, "parent.generation"},
		{"ParentShortSum", sum, sum[:10], "parent.sha256"},
		{"ParentUpperSum", sum, strings.ToUpper(sum), "parent.sha256"},
		{"MissingWrittenAt", `"written_at": "2026-03-04T06:00:00Z",`, ``, "written_at"},
		{"MissingWriter", `"writer_version": "v0.9.0",`, ``, "writer_version"},
		{"BadOperation", `"operation": "publish"`, `"operation": "Publish!"`, "operation"},
		{"ParentOnGenerationOne", `"generation": 8,`, `"generation": 1,`, "parent"},
		{"SourceInFormat2", `"operation": "publish"`, `"operation": "rollback", "source_generation": 3`, "format_version 2 carries none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validJSONv2, tc.from) {
				t.Fatalf("fixture lacks %q", tc.from)
			}
			_, err := pointer.Decode([]byte(strings.Replace(validJSONv2, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("Decode error %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestDecodeFormat3Source: a rollback names an earlier generation as its
// source, and nothing else names one.
func TestDecodeFormat3Source(t *testing.T) {
	v3 := strings.Replace(validJSONv2, `"format_version": 2`, `"format_version": 3`, 1)
	for _, tc := range []struct {
		name, to, mention string // mention "" means it decodes
	}{
		{"Publish", `"operation": "publish"`, ""},
		{"Rollback", `"operation": "rollback", "source_generation": 5`, ""},
		{"RollbackToSelf", `"operation": "rollback", "source_generation": 8`, "source_generation"},
		{"RollbackWithoutSource", `"operation": "rollback"`, "source_generation"},
		{"PublishWithSource", `"operation": "publish", "source_generation": 5`, "only \"rollback\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pointer.Decode([]byte(strings.Replace(v3, `"operation": "publish"`, tc.to, 1)))
			if tc.mention == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b, err := pointer.Encode(p); err != nil || pointer.Sum(b) == "" {
					t.Fatalf("re-encode: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}

// A newer format is refused with ErrNewerFormat, naming what this build
// reads, never read as if it were an older one; it is exit 2, since every
// retry of this build meets it again (exit 1 was retried by schedulers).
func TestNewerFormatRefusedClearly(t *testing.T) {
	_, err := pointer.Decode([]byte(strings.Replace(validJSONv2, `"format_version": 2`, `"format_version": 4`, 1)))
	if !errors.Is(err, pointer.ErrNewerFormat) || !strings.Contains(err.Error(), "upgrade engagement") {
		t.Errorf("error %v, want ErrNewerFormat saying to upgrade", err)
	}
	if code := exitcode.Code(fmt.Errorf("read the pointer: %w", err)); code != exitcode.Usage {
		t.Errorf("exit %d, want %d", code, exitcode.Usage)
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
			p := good.Normalized()
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
	at := time.Date(2026, 3, 4, 6, 0, 0, 0, time.FixedZone("CET", 3600))
	next := pointer.Merge(cur, pointer.Commit{JobID: "job-z", Entries: entries, WrittenAt: at, WriterVersion: "v9"})

	if !reflect.DeepEqual(cur, snapshot) {
		t.Errorf("Merge mutated its input")
	}
	if next.Generation != 8 || next.UpdatedByJobID != "job-z" || next.FormatVersion != pointer.FormatVersion {
		t.Errorf("Merge header = %d/%q/%d, want 8/job-z/%d", next.Generation, next.UpdatedByJobID, next.FormatVersion, pointer.FormatVersion)
	}
	if want := (pointer.Parent{Generation: 7, SHA256: pointer.Sum([]byte(validJSON))}); next.Parent == nil || *next.Parent != want {
		t.Errorf("Merge parent = %+v, want %+v", next.Parent, want)
	}
	if !next.WrittenAt.Equal(at) || next.WrittenAt.Location() != time.UTC || next.WriterVersion != "v9" || next.Operation != pointer.OpPublish {
		t.Errorf("Merge lineage = %v %q %q, want %v in UTC, v9, publish", next.WrittenAt, next.WriterVersion, next.Operation, at)
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
// Every pointer it holds went through Encode and Decode, as a stored one
// does, so it carries its digest.
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

func (f *fakeStore) Expire(context.Context, int64) error { return errors.New("fakeStore: no expiry") }

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

// stored is p as a store gives it back: encoded, decoded, with its digest.
func stored(t *testing.T, p pointer.Pointer) pointer.Pointer {
	t.Helper()
	b, err := pointer.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := pointer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func commit(job string, entries map[dates.Date]pointer.DateEntry) pointer.Commit {
	return pointer.Commit{JobID: job, Entries: entries, WrittenAt: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC), WriterVersion: "test"}
}

func TestPublishResolvesUnknownOutcome(t *testing.T) {
	errIO := errors.New("io failure")
	d := dates.MustParse("2026-03-02")
	entries := map[dates.Date]pointer.DateEntry{d: {JobID: "job-x"}}
	base := stored(t, pointer.Pointer{FormatVersion: 1, Generation: 4, UpdatedByJobID: "job-base", Dates: map[dates.Date]pointer.DateEntry{}})
	mine := stored(t, pointer.Merge(base, commit("job-x", entries)))
	theirs := stored(t, pointer.Merge(base, commit("job-other", nil)))
	later := stored(t, pointer.Merge(theirs, commit("job-later", nil)))
	// A later generation built on this job's, as a concurrent job makes it.
	onMine := stored(t, pointer.Merge(mine, commit("job-next", map[dates.Date]pointer.DateEntry{d: {JobID: "job-next"}})))
	forged := stored(t, pointer.Merge(theirs, commit("job-next", nil)))
	forged.Generation, forged.Parent = 6, &pointer.Parent{Generation: 5, SHA256: strings.Repeat("0", 64)}
	forged = stored(t, forged)

	for _, tc := range []struct {
		name       string
		store      *fakeStore
		wantErr    []error // nil: success
		wantSwaps  int
		superseded []dates.Date
	}{
		// The history copy landed and the extra Swap rolled it forward:
		// pointer.json shows the job, so Publish succeeds.
		{"HistoryOnlyLandedRolledForward", &fakeStore{cur: base, after: &mine, swapErr: errIO, history: map[int64]pointer.Pointer{5: mine}}, nil, 1, nil},
		// The history copy landed but pointer.json cannot be moved: readers
		// do not see the job, so it is not a success.
		{"HistoryOnlyLandedNotVisible", &fakeStore{cur: base, swapErr: errIO, history: map[int64]pointer.Pointer{5: mine}}, []error{pointer.ErrNotVisible}, 2, nil},
		// A concurrent job built on this one before the re-read.
		{"LandedThenBuiltOn", &fakeStore{cur: base, after: &onMine, swapErr: errIO, history: map[int64]pointer.Pointer{5: mine, 6: onMine}}, nil, 1, []dates.Date{d}},
		// A later pointer.json whose chain does not lead back to this job.
		{"LandedChainBroken", &fakeStore{cur: base, after: &forged, swapErr: errIO, history: map[int64]pointer.Pointer{5: mine, 6: forged}}, []error{pointer.ErrNotVisible}, 1, nil},
		{"OtherJobTookGeneration", &fakeStore{cur: base, after: &theirs, swapErr: errIO, history: map[int64]pointer.Pointer{5: theirs}}, []error{pointer.ErrNotWritten, errIO}, 1, nil},
		{"HistoryNotRetained", &fakeStore{cur: base, after: &later, swapErr: errIO}, []error{pointer.ErrOutcomeUnknown, errIO}, 1, nil},
		{"NotWritten", &fakeStore{cur: base, swapErr: errIO}, []error{pointer.ErrNotWritten, errIO}, 1, nil},
		{"HistoryUnreadable", &fakeStore{cur: base, swapErr: errIO, histErr: errors.New("503")}, []error{pointer.ErrOutcomeUnknown, errIO}, 1, nil},
		// The write succeeded and a later generation stands, but its chain
		// cannot be read back to this job's: that says nothing either way.
		{"BuiltOnChainUnreadable", &fakeStore{cur: base, after: &onMine, histErr: errors.New("503")}, []error{pointer.ErrOutcomeUnknown}, 1, nil},
		{"BrokenChainNotRetried", &fakeStore{cur: base, swapErr: fmt.Errorf("swap: %w", pointer.ErrBrokenChain)}, []error{pointer.ErrBrokenChain}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := pointer.PublishOutcome(t.Context(), tc.store, commit("job-x", entries))
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
				if !slices.Equal(out.Superseded, tc.superseded) {
					t.Errorf("Superseded = %v, want %v", out.Superseded, tc.superseded)
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
			if errors.Is(err, pointer.ErrNotVisible) && tc.store.after == nil && !strings.Contains(err.Error(), errIO.Error()) {
				// pointer.json never moved: what its replace met is what
				// the person on call must fix.
				t.Errorf("Publish error %v does not say what the replace met (%v)", err, errIO)
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

// TestPublishGivesUpOnEndlessConflict: 256 attempts, each retry after a
// wait that grows to a 1 s ceiling and repeats from run to run, then
// ErrConflict. The waits are recorded, not slept (they add up to about two
// minutes); TestPublishWaitEndsWithContext sleeps for real.
func TestPublishGivesUpOnEndlessConflict(t *testing.T) {
	var waits []time.Duration
	defer pointer.SetSleep(func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	})()
	run := func() []time.Duration {
		waits = nil
		s := &fakeStore{cur: pointer.Empty(), swapErr: pointer.ErrConflict}
		_, err := pointer.Publish(t.Context(), s, commit("job-x", map[dates.Date]pointer.DateEntry{dates.MustParse("2026-03-02"): {JobID: "job-x"}}))
		if !errors.Is(err, pointer.ErrConflict) {
			t.Errorf("error = %v, want ErrConflict", err)
		}
		if s.swaps != 256 {
			t.Errorf("Swap called %d times, want 256", s.swaps)
		}
		return waits
	}
	first := run()
	if len(first) != 255 {
		t.Fatalf("%d waits, want one before each of the 255 retries", len(first))
	}
	var late time.Duration
	for i, w := range first {
		if w < time.Millisecond || w > time.Second+time.Millisecond {
			t.Errorf("wait %d is %v, want 1 ms to 1 s", i, w)
		}
		if i >= 10 {
			late += w
		}
	}
	// The first retries come back within milliseconds; the ceiling then
	// doubles to 1 s, so the waits from the eleventh on average far above
	// the first ones (about 0.5 s each, spread by the jitter).
	if first[0] > 3*time.Millisecond {
		t.Errorf("first wait %v, want at most 3 ms", first[0])
	}
	if avg := late / time.Duration(len(first)-10); avg < 250*time.Millisecond {
		t.Errorf("waits from the eleventh on average %v, want the backoff near its 1 s ceiling", avg)
	}
	if again := run(); !slices.Equal(first, again) {
		t.Errorf("the same job waited differently in a second run: the backoff must repeat")
	}
}

// TestPublishWaitEndsWithContext: a context that ends during the backoff
// ends Publish with its error, on the real timer and on a recorded wait.
func TestPublishWaitEndsWithContext(t *testing.T) {
	entries := map[dates.Date]pointer.DateEntry{dates.MustParse("2026-03-02"): {JobID: "job-x"}}
	t.Run("Timer", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		s := &fakeStore{cur: pointer.Empty(), swapErr: pointer.ErrConflict}
		_, err := pointer.Publish(ctx, s, commit("job-x", entries))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want the context's deadline", err)
		}
		if s.swaps == 0 || s.swaps >= 256 {
			t.Errorf("Swap called %d times, want some, ended by the deadline", s.swaps)
		}
	})
	t.Run("CancelledDuringThirdWait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		n := 0
		defer pointer.SetSleep(func(ctx context.Context, d time.Duration) error {
			if n++; n == 3 {
				cancel()
			}
			return ctx.Err()
		})()
		s := &fakeStore{cur: pointer.Empty(), swapErr: pointer.ErrConflict}
		_, err := pointer.Publish(ctx, s, commit("job-x", entries))
		if !errors.Is(err, context.Canceled) || errors.Is(err, pointer.ErrConflict) {
			t.Errorf("error = %v, want the cancellation alone", err)
		}
		if s.swaps != 3 {
			t.Errorf("Swap called %d times, want 3 (no attempt after the cancelled wait)", s.swaps)
		}
	})
}

func TestPublishRefusesInvalid(t *testing.T) {
	s := &fakeStore{cur: pointer.Empty()}
	d := dates.MustParse("2026-03-02")
	for _, tc := range []struct {
		name   string
		commit pointer.Commit
	}{
		{"EmptyJobID", commit("", map[dates.Date]pointer.DateEntry{d: {JobID: "j"}})},
		{"EntryWithoutJobID", commit("j", map[dates.Date]pointer.DateEntry{d: {}})},
		{"BadPath", commit("j", map[dates.Date]pointer.DateEntry{d: {JobID: "j", FactFiles: []pointer.File{{Path: "../x"}}}})},
		{"NoWriteTime", pointer.Commit{JobID: "j", Entries: map[dates.Date]pointer.DateEntry{d: {JobID: "j"}}, WriterVersion: "v"}},
		{"NoWriterVersion", pointer.Commit{JobID: "j", Entries: map[dates.Date]pointer.DateEntry{d: {JobID: "j"}}, WrittenAt: time.Now()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pointer.Publish(t.Context(), s, tc.commit); err == nil {
				t.Errorf("Publish accepted an invalid pointer")
			}
			if s.swaps != 0 {
				t.Errorf("Swap called for an invalid pointer")
			}
		})
	}
}

// TestWriteErrorsNameTheOperation: an error from moving the pointer names
// the write as what it is. A rollback's exit 6 had read "publish <its job
// id>", pointing whoever reads the history at a publish there was none of.
func TestWriteErrorsNameTheOperation(t *testing.T) {
	refused := errors.New("date changed")
	for _, tc := range []struct{ op, want string }{
		{"", "publish job-x: date changed"},
		{pointer.OpPublish, "publish job-x: date changed"},
		{pointer.OpRollback, "rollback job-x: date changed"},
	} {
		c := commit("job-x", map[dates.Date]pointer.DateEntry{dates.MustParse("2026-03-02"): {JobID: "job-x"}})
		c.Operation = tc.op
		c.Check = func(pointer.Pointer) error { return refused }
		_, err := pointer.PublishOutcome(t.Context(), &fakeStore{cur: pointer.Empty()}, c)
		if !errors.Is(err, refused) || err.Error() != tc.want {
			t.Errorf("operation %q: error %v, want %q", tc.op, err, tc.want)
		}
	}
}
