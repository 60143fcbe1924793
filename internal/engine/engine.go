// Package engine is the seam between the job and the place it runs. Every
// engine runs the same logical job and must publish identical table contents
// for the same inputs; only the file layout may differ.
package engine

import (
	"context"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Table names, also the staging folder names.
const (
	FactTable      = "fact_lesson_engagement"
	CourseDayTable = "course_day"
)

// FactColumns and CourseDayColumns are the published schemas, in order, with
// event_date last because it lives in the partition path, not in the files.
var (
	FactColumns = []string{"learner_key", "lesson_id", "course_id", "manifest_id", "lesson_title",
		"event_count", "first_event_time", "last_event_time", "enrolled", "enrollment_snapshot_id", "job_id", "event_date"}
	CourseDayColumns = []string{"course_id", "event_count", "matched_lesson_count", "unknown_lesson_count",
		"enrolled_event_count", "learner_count", "job_id", "event_date"}
)

// Spec is one attempt of the logical job. Every value is explicit; an engine
// looks nothing up as "latest" and reads no clock.
type Spec struct {
	JobID                string
	Dates                []dates.Date // sorted, unique
	IngestFrom, IngestTo dates.Date   // raw read window, inclusive
	// LatenessDays bounds each date's own window inside it: an event of
	// date d counts only from ingest_date d to d+LatenessDays, so that a
	// date's figure never depends on which other dates share the request.
	LatenessDays int
	Raw          string // root of the ingest_date=YYYY-MM-DD partitions, for messages
	Lessons      string // manifest Parquet file or directory, for messages
	Enrollments  string // enrollment Parquet file or directory, for messages
	// Inputs is the attempt's one listing: the exact files every step
	// reads. An engine never lists or globs an input itself.
	Inputs               inputs.Listing
	ManifestID           string
	EnrollmentSnapshotID string
	HotCourses           []string
	SaltBuckets          int
	ProhibitedColumns    []string // lower case
	TargetFileBytes      int64
	Settings             map[string]string // engine settings from the config (duckdb.* or spark.*)
	// InputEvents are the raw events of each requested date as Inspect
	// counted them (Inputs.Events), handed to Stage by the job: the
	// silent-drop figures, counted before any join in the scan that checks
	// event identity, so Stage reads raw once more, for the fact grain.
	InputEvents map[dates.Date]int64
	// SchemaKeys maps each listed file whose footer the job parsed whole
	// to its schema key: two files of one key hold the same Parquet schema
	// (and the same schema Spark stored beside it), so an engine that asks
	// its reader for each file's schema may ask for one file of a key
	// (inputs.Source.CheckPageChecksums). A file without a key is read
	// alone.
	SchemaKeys map[string]string
}

// Inputs is what Inspect learned before any join.
type Inputs struct {
	Figures gate.InputFigures
	// Events counts the raw events of each requested date in the listed
	// files (a date without events may be absent); the job passes it on
	// as Spec.InputEvents.
	Events map[dates.Date]int64
	// Late counts the events of each requested date that the read window
	// holds in partitions past the date's own window (later than
	// latenessDays): never counted, but a sign of an ingestion outage when
	// the date's own partition holds none of its events.
	Late map[dates.Date]int64
	// Early counts the events of each requested date that the read window
	// holds in partitions before the date's own (ingested before they
	// happened: a producer's clock, or partitions dated in a zone behind
	// UTC): never counted, so the job warns of them.
	Early map[dates.Date]int64
	// Own counts the events of each requested date in its own partition
	// (ingest_date = the date), exactly, whatever the files' statistics:
	// none, while the date has events elsewhere or published, is an
	// ingestion outage (job.checkOwnRows).
	Own map[dates.Date]int64
}

// PerDate makes the per-date maps of in empty.
func (in *Inputs) PerDate() {
	in.Events, in.Late, in.Early, in.Own = map[dates.Date]int64{}, map[dates.Date]int64{}, map[dates.Date]int64{}, map[dates.Date]int64{}
}

// Staged describes one attempt's staging output. Paths are relative to the
// warehouse, as the pointer stores them.
type Staged struct {
	Stage          map[dates.Date]gate.StageFigures
	FactFiles      map[dates.Date][]pointer.File
	CourseDayFiles map[dates.Date][]pointer.File
	// Tasks are the enrollment join stage's task metrics, where the engine
	// runs tasks and can read them (Spark, from its UI's REST API); nil
	// otherwise, with the reason in TasksUnavailable.
	Tasks            *StageTasks
	TasksUnavailable string
}

// StageTasks are one stage's per-task figures: what the skew and spill
// monitors judge.
type StageTasks struct {
	StageID     int     `json:"stage_id"`
	Attempt     int     `json:"attempt"`
	Tasks       int     `json:"tasks"`
	MaxMillis   int64   `json:"max_task_ms"`
	MedianMilli float64 `json:"median_task_ms"`
	// SkewRatio is MaxMillis / MedianMilli (0 when the median is 0).
	SkewRatio float64 `json:"skew_ratio"`
	// MaxRecords and MedianRecords are the shuffle records the tasks
	// read: where the rows went, which a loaded machine does not blur as
	// it does durations (0 when the engine does not report them).
	MaxRecords         int64   `json:"max_task_records"`
	MedianRecords      float64 `json:"median_task_records"`
	MemoryBytesSpilled int64   `json:"memory_bytes_spilled"`
	DiskBytesSpilled   int64   `json:"disk_bytes_spilled"`
	TasksSpilled       int     `json:"tasks_spilled"`
	// MaxTaskBytesSpilled is the most one task spilled, memory and disk.
	MaxTaskBytesSpilled int64 `json:"max_task_bytes_spilled"`
}

// Engine runs the job. Implementations must be deterministic: the same Spec
// and inputs give the same table contents.
type Engine interface {
	// Name is "duckdb" or "spark".
	Name() string
	// Inspect reads the schemas and pins of the listed input files,
	// computing the figures of gate checks 2 and 3 and the raw event
	// identity (check 1, prohibited columns, is judged by the job on the
	// files' footers). It fails with an error naming the file or column
	// when an input is unusable.
	Inspect(ctx context.Context, spec Spec) (Inputs, error)
	// Stage writes both tables for spec.Dates under
	// <stagingDir>/<table>/event_date=<d>/ of the warehouse bucket, writing
	// through the URIs the bucket gives (WriteURI), and returns the files,
	// found by listing them (Seal), never by renaming.
	Stage(ctx context.Context, spec Spec, wh storage.Bucket, stagingDir string) (Staged, error)
	// ReadBack computes the gate's figures from exactly the files listed in
	// staged, read back from storage.
	ReadBack(ctx context.Context, wh storage.Bucket, spec Spec, staged Staged) (map[dates.Date]gate.StagedFigures, error)
	// UnknownLessons lists, for each date of ds, the n lesson_ids with the
	// most events among the staged fact rows whose lesson missed the
	// manifest pin (manifest_id null), read from exactly the files listed
	// in staged, in gate.SortLessons order (ties by lesson_id, null last).
	// Only a rejection asks for it, so the published path never pays for it.
	UnknownLessons(ctx context.Context, wh storage.Bucket, staged Staged, ds []dates.Date, n int) (map[dates.Date][]gate.LessonCount, error)
	// Explain returns the formatted plan of the staging query with the
	// manifest join and the enrollment join marked.
	Explain(ctx context.Context, spec Spec) (string, error)
	Close() error
}

// ParquetLimited is an engine that cannot read some Parquet compression
// codecs or encodings: UnreadableParquet maps each, a codec as Parquet
// names it (BROTLI, LZ4) or an encoding and the physical type it encodes
// ("BYTE_STREAM_SPLIT INT64"), to the sentence the refusal gives, the
// other engine named where it reads it. The job checks the footers before
// the engine reads, which failed on them as "not a readable Parquet file",
// or with no column named.
type ParquetLimited interface {
	UnreadableParquet() map[string]string
}

// ChecksumVerifier is an engine that verifies the page checksums a Parquet
// writer stored as it reads the inputs (Spark, a forced setting). For any
// other the job verifies them itself before the engine reads.
type ChecksumVerifier interface {
	VerifiesPageChecksums() bool
}

// TargetFiles is the number of files for a date's output of numBytes,
// aiming at targetBytes per file (192 MB by default, inside the 128-256 MB
// band) and never fewer than one. It depends on bytes only, never on a
// shuffle partition count.
func TargetFiles(numBytes, targetBytes int64) int {
	if targetBytes <= 0 {
		targetBytes = DefaultTargetFileBytes
	}
	if numBytes <= 0 {
		return 1
	}
	// (n-1)/t+1 is the ceiling without the overflow of (n+t-1)/t.
	return int((numBytes-1)/targetBytes + 1)
}

// DefaultTargetFileBytes is 192 MB.
const DefaultTargetFileBytes = 192 << 20
