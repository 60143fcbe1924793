// Package lineage turns one publish attempt into OpenLineage run events
// (spec 2-0-2): START before the work, then COMPLETE when the pointer moved
// or FAIL when it did not. Building an event is pure: it depends only on
// what the caller passes in, the clock's value included. Sending one (a
// line appended to a file, an HTTP POST) only reports: the command calls it
// around the run, and a failure here is the caller's warning, never the
// run's exit code.
package lineage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Spec and facet schema URLs. The facet versions are the ones the tests
// validate against (testdata/openlineage).
const (
	SpecURL         = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
	RunEventURL     = SpecURL + "#/$defs/RunEvent"
	facetsURL       = "https://openlineage.io/spec/facets/"
	ErrorMessageURL = facetsURL + "1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
	EngineURL       = facetsURL + "1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet"
	JobTypeURL      = facetsURL + "2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"
	InputStatsURL   = facetsURL + "1-0-0/InputStatisticsInputDatasetFacet.json#/$defs/InputStatisticsInputDatasetFacet"
	OutputStatsURL  = facetsURL + "1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
	AssertionsURL   = facetsURL + "1-1-0/DataQualityAssertionsDatasetFacet.json#/$defs/DataQualityAssertionsDatasetFacet"

	// Producer names this tool in every event and facet.
	Producer = "https://github.com/techlearningpro/engagement"
	// FacetsSchemaURL is the schema of the engagement_* facets, kept in
	// schema/lineage-facets.schema.json.
	FacetsSchemaURL = "https://github.com/techlearningpro/engagement/blob/main/schema/lineage-facets.schema.json"
	AttemptURL      = FacetsSchemaURL + "#/$defs/AttemptRunFacet"
	RawWindowURL    = FacetsSchemaURL + "#/$defs/RawWindowInputDatasetFacet"
	PinURL          = FacetsSchemaURL + "#/$defs/PinInputDatasetFacet"
)

// Event types this tool sends.
const (
	Start    = "START"
	Complete = "COMPLETE"
	Fail     = "FAIL"
)

// JobName is the OpenLineage job every publish is a run of; the namespace
// is the caller's (--lineage-namespace).
const JobName = "publish"

// Event is an OpenLineage RunEvent.
type Event struct {
	EventTime string          `json:"eventTime"`
	EventType string          `json:"eventType"`
	Producer  string          `json:"producer"`
	SchemaURL string          `json:"schemaURL"`
	Run       Run             `json:"run"`
	Job       Job             `json:"job"`
	Inputs    []InputDataset  `json:"inputs"`
	Outputs   []OutputDataset `json:"outputs"`
}

// Run is the event's run; its id is the same in every event of an attempt.
type Run struct {
	RunID  string         `json:"runId"`
	Facets map[string]any `json:"facets,omitempty"`
}

// Job is the event's job.
type Job struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

// InputDataset is an input and what the attempt saw of it.
type InputDataset struct {
	Namespace   string         `json:"namespace"`
	Name        string         `json:"name"`
	InputFacets map[string]any `json:"inputFacets,omitempty"`
}

// OutputDataset is a published table and what the attempt wrote to it.
type OutputDataset struct {
	Namespace    string         `json:"namespace"`
	Name         string         `json:"name"`
	OutputFacets map[string]any `json:"outputFacets,omitempty"`
}

// Facet is the base every facet carries.
type Facet struct {
	Producer  string `json:"_producer"`
	SchemaURL string `json:"_schemaURL"`
}

func facet(url string) Facet { return Facet{Producer: Producer, SchemaURL: url} }

// ErrorMessage is the errorMessage run facet of a FAIL event.
type ErrorMessage struct {
	Facet
	Message             string `json:"message"`
	ProgrammingLanguage string `json:"programmingLanguage"`
}

// ProcessingEngine is the processing_engine run facet: the engine the
// attempt ran on, and this tool's version as the adapter.
type ProcessingEngine struct {
	Facet
	Version        string `json:"version"`
	Name           string `json:"name"`
	AdapterVersion string `json:"openlineageAdapterVersion"`
}

// Attempt is the engagement_attempt run facet: what ties the run to the
// job id, its dates and (after a publish) the pointer generation.
type Attempt struct {
	Facet
	JobID      string   `json:"jobId"`
	Dates      []string `json:"dates"`
	ExitCode   *int     `json:"exitCode,omitempty"`
	Generation int64    `json:"generation,omitempty"`
}

// JobType is the jobType job facet.
type JobType struct {
	Facet
	ProcessingType string `json:"processingType"`
	Integration    string `json:"integration"`
	JobType        string `json:"jobType"`
}

// Statistics is the inputStatistics or outputStatistics facet.
type Statistics struct {
	Facet
	RowCount  *int64 `json:"rowCount,omitempty"`
	Size      int64  `json:"size"`
	FileCount int64  `json:"fileCount"`
}

// Assertions is the dataQualityAssertions facet: the gate's checks that
// judge the dataset.
type Assertions struct {
	Facet
	Assertions []Assertion `json:"assertions"`
}

// Assertion is one gate check. Assertion is the check's stable name and
// Name adds its date ("unknown_lesson_cap[2026-03-02]"), the form the
// rejection's reasons use; every gate check blocks a publish, so all are
// severity "error".
type Assertion struct {
	Assertion   string `json:"assertion"`
	Success     bool   `json:"success"`
	Name        string `json:"name"`
	Severity    string `json:"severity"`
	Description string `json:"description,omitempty"`
}

// RawWindow is the engagement_rawWindow input facet: the attempt's raw
// read window and the ingest_date partitions it listed inside it (absent
// before the listing, in START).
type RawWindow struct {
	Facet
	From        string   `json:"from"`
	To          string   `json:"to"`
	IngestDates []string `json:"ingestDates,omitempty"`
}

// Pin is the engagement_pin input facet: the one version of a pinned input
// the attempt read (the manifest_id or enrollment_snapshot_id).
type Pin struct {
	Facet
	Column string `json:"column"`
	Value  string `json:"value"`
}

// Facet names.
const (
	FacetErrorMessage = "errorMessage"
	FacetEngine       = "processing_engine"
	FacetAttempt      = "engagement_attempt"
	FacetJobType      = "jobType"
	FacetInputStats   = "inputStatistics"
	FacetOutputStats  = "outputStatistics"
	FacetAssertions   = "dataQualityAssertions"
	FacetRawWindow    = "engagement_rawWindow"
	FacetPin          = "engagement_pin"
)

// Plan is one attempt as the command configured it. Locations are
// absolute (a local path as the command resolved it, or an S3 URL).
type Plan struct {
	Namespace                        string // the job's namespace
	JobID                            string
	Dates                            []dates.Date
	Raw, Lessons, Enrollments        storage.Location
	Warehouse                        storage.Location
	IngestFrom, IngestTo             dates.Date
	ManifestID, EnrollmentSnapshotID string
	// Engine names the engine and EngineVersion its library's version;
	// Version is this tool's.
	Engine, EngineVersion, Version string
	// Started is the command's clock when the attempt began; it is part of
	// the run id.
	Started time.Time
}

// Outcome is how the attempt ended: its result, its exit code and the
// error it returned (nil when it published).
type Outcome struct {
	Result job.Result
	Code   int
	Err    error
}

// RunID is the attempt's run id: a UUIDv7 whose time is the attempt's
// start and whose other bits are a SHA-256 of the job id and that start.
// No randomness: the same attempt always gets the same id. The start is in
// it because a rerun with a job id already used (refused, exit 4) is a run
// of its own and must not turn the published run's COMPLETE into a FAIL.
func RunID(jobID string, started time.Time) string {
	var u [16]byte
	ms := uint64(started.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	sum := sha256.Sum256([]byte(jobID + "\x00" + started.UTC().Format(time.RFC3339Nano)))
	copy(u[6:], sum[:10])
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// StartEvent is the attempt's START: the configured inputs and outputs,
// before anything is listed or staged.
func StartEvent(p Plan, at time.Time) Event {
	return event(p, Start, at, nil)
}

// EndEvent is COMPLETE when the outcome published and FAIL otherwise, with
// what the attempt listed, checked and wrote.
func EndEvent(p Plan, o Outcome, at time.Time) Event {
	typ := Fail
	if o.Err == nil && o.Result.Published {
		typ = Complete
	}
	return event(p, typ, at, &o)
}

// event builds one event; o is nil for START.
func event(p Plan, typ string, at time.Time, o *Outcome) Event {
	att := Attempt{Facet: facet(AttemptURL), JobID: p.JobID, Dates: dates.Strings(p.Dates)}
	if att.Dates == nil {
		att.Dates = []string{}
	}
	runFacets := map[string]any{
		FacetEngine: ProcessingEngine{Facet: facet(EngineURL), Version: p.EngineVersion, Name: p.Engine, AdapterVersion: p.Version},
	}
	if o != nil {
		code := o.Code
		att.ExitCode = &code
		if typ == Complete {
			att.Generation = o.Result.Pointer.Generation
		}
		if typ == Fail {
			runFacets[FacetErrorMessage] = ErrorMessage{Facet: facet(ErrorMessageURL),
				Message: failMessage(o), ProgrammingLanguage: "GO"}
		}
	}
	runFacets[FacetAttempt] = att
	e := Event{
		EventTime: at.UTC().Format(time.RFC3339Nano), EventType: typ,
		Producer: Producer, SchemaURL: RunEventURL,
		Run: Run{RunID: RunID(p.JobID, p.Started), Facets: runFacets},
		Job: Job{Namespace: p.Namespace, Name: JobName, Facets: map[string]any{
			FacetJobType: JobType{Facet: facet(JobTypeURL), ProcessingType: "BATCH", Integration: "ENGAGEMENT", JobType: "JOB"},
		}},
	}
	var checks []gate.Check
	var listed *inputs.Listing
	var res *job.Result
	if o != nil {
		res = &o.Result
		checks = res.Report.Checks
		if len(res.Inputs.Raw) > 0 || len(res.Inputs.Lessons) > 0 || len(res.Inputs.Enrollments) > 0 {
			listed = &res.Inputs
		}
	}
	e.Inputs = inputDatasets(p, listed, checks)
	e.Outputs = outputDatasets(p, typ, res, checks)
	return e
}

// failMessage names the exit code and the cause.
func failMessage(o *Outcome) string {
	cause := "the pointer did not move"
	if o.Err != nil {
		cause = o.Err.Error()
	}
	return fmt.Sprintf("exit code %d: %s", o.Code, cause)
}

// Input kinds, in event order.
const (
	inputRaw         = "raw"
	inputManifest    = "manifest"
	inputEnrollments = "enrollments"
)

// checkInput is the input an input check (one without a date) judges: the
// manifest_* and enrollment_* checks judge those pins; the rest (raw
// schema, event times and ids) the raw events.
func checkInput(name string) string {
	switch {
	case strings.HasPrefix(name, "manifest_"):
		return inputManifest
	case strings.HasPrefix(name, "enrollment_"):
		return inputEnrollments
	}
	return inputRaw
}

func inputDatasets(p Plan, listed *inputs.Listing, checks []gate.Check) []InputDataset {
	byInput := map[string][]Assertion{}
	for _, c := range checks {
		if c.Date == "" && c.Name != gate.CheckDatesStaged {
			k := checkInput(c.Name)
			byInput[k] = append(byInput[k], assertion(c))
		}
	}
	window := RawWindow{Facet: facet(RawWindowURL), From: p.IngestFrom.String(), To: p.IngestTo.String()}
	if listed != nil {
		seen := map[dates.Date]bool{}
		for _, f := range listed.Raw {
			if !seen[f.IngestDate] {
				seen[f.IngestDate] = true
				window.IngestDates = append(window.IngestDates, f.IngestDate.String())
			}
		}
		sort.Strings(window.IngestDates)
	}
	type in struct {
		kind  string
		loc   storage.Location
		pin   *Pin
		files []inputs.File
	}
	ins := []in{
		{kind: inputRaw, loc: p.Raw},
		{kind: inputManifest, loc: p.Lessons, pin: &Pin{Facet: facet(PinURL), Column: "manifest_id", Value: p.ManifestID}},
		{kind: inputEnrollments, loc: p.Enrollments, pin: &Pin{Facet: facet(PinURL), Column: "enrollment_snapshot_id", Value: p.EnrollmentSnapshotID}},
	}
	if listed != nil {
		for _, f := range listed.Raw {
			ins[0].files = append(ins[0].files, f.File)
		}
		ins[1].files, ins[2].files = listed.Lessons, listed.Enrollments
	}
	out := make([]InputDataset, 0, len(ins))
	for _, i := range ins {
		if i.loc.Scheme == "" {
			// A location that did not parse (the run's error names it):
			// named, it became a dataset "." that a consumer keeps.
			continue
		}
		ns, name := DatasetName(i.loc)
		facets := map[string]any{}
		if i.kind == inputRaw && len(p.Dates) > 0 {
			// An empty date list (rejected by the gate) reads no window.
			facets[FacetRawWindow] = window
		}
		if i.pin != nil {
			facets[FacetPin] = *i.pin
		}
		if listed != nil {
			facets[FacetInputStats] = stats(InputStatsURL, nil, i.files)
		}
		if a := byInput[i.kind]; len(a) > 0 {
			facets[FacetAssertions] = Assertions{Facet: facet(AssertionsURL), Assertions: a}
		}
		out = append(out, InputDataset{Namespace: ns, Name: name, InputFacets: facets})
	}
	return out
}

func stats(url string, rows *int64, files []inputs.File) Statistics {
	s := Statistics{Facet: facet(url), RowCount: rows, FileCount: int64(len(files))}
	for _, f := range files {
		s.Size += f.Bytes
	}
	return s
}

// outputDatasets are the two tables. Their statistics are those of the
// published entries, so only a COMPLETE carries them; the staged checks
// (those of a date) judge both tables and go on each.
func outputDatasets(p Plan, typ string, res *job.Result, checks []gate.Check) []OutputDataset {
	var staged []Assertion
	for _, c := range checks {
		if c.Date != "" || c.Name == gate.CheckDatesStaged {
			staged = append(staged, assertion(c))
		}
	}
	tables := []struct {
		name  string
		files func(pointer.DateEntry) []pointer.File
	}{
		{engine.FactTable, func(e pointer.DateEntry) []pointer.File { return e.FactFiles }},
		{engine.CourseDayTable, func(e pointer.DateEntry) []pointer.File { return e.CourseDayFiles }},
	}
	out := make([]OutputDataset, 0, len(tables))
	for _, t := range tables {
		if p.Warehouse.Scheme == "" {
			break // as for an input: no dataset named after a bad location
		}
		ns, name := DatasetName(p.Warehouse.Join(t.name))
		facets := map[string]any{}
		if typ == Complete && res != nil {
			var rows, size, n int64
			for _, d := range p.Dates {
				for _, f := range t.files(res.Entries[d]) {
					rows, size, n = rows+f.Rows, size+f.Bytes, n+1
				}
			}
			facets[FacetOutputStats] = Statistics{Facet: facet(OutputStatsURL), RowCount: &rows, Size: size, FileCount: n}
		}
		if len(staged) > 0 {
			facets[FacetAssertions] = Assertions{Facet: facet(AssertionsURL), Assertions: staged}
		}
		out = append(out, OutputDataset{Namespace: ns, Name: name, OutputFacets: facets})
	}
	return out
}

func assertion(c gate.Check) Assertion {
	name := c.Name
	if c.Date != "" {
		name += "[" + c.Date + "]"
	}
	return Assertion{Assertion: c.Name, Success: c.Passed, Name: name, Severity: "error", Description: c.Detail}
}

// DatasetName is a location's OpenLineage dataset namespace and name, per
// the spec's naming conventions: a local path is namespace "file" and its
// absolute path; s3://bucket/key is namespace "s3://bucket" and the key.
func DatasetName(l storage.Location) (namespace, name string) {
	if l.IsS3() {
		if l.Key == "" {
			return "s3://" + l.Bucket, "/"
		}
		return "s3://" + l.Bucket, l.Key
	}
	return "file", path.Clean(filepath.ToSlash(l.Path))
}
