package gen

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/techlearningpro/engagement/internal/dates"
)

// Expected is what the generator knows by construction about the inputs it
// wrote. It is tallied in Go while rows are emitted, never by running the
// product, so a test that compares the product's output against it is a
// comparison and not a printout of the product's own numbers.
//
// Map keys are dates and course ids; encoding/json sorts map keys, so the file
// is byte-stable for the same options.
type Expected struct {
	Seed    uint64 `json:"seed"`
	Events  int    `json:"events"`
	Variant string `json:"variant"`
	// Shape is "design" for the design-volume shape and empty for the
	// fixture, so the committed expected.json files keep their bytes.
	Shape string `json:"shape,omitempty"`

	ManifestID           string `json:"manifest_id"`
	EnrollmentSnapshotID string `json:"enrollment_snapshot_id"`
	// The previous pins are present in the same files so a job that forgets
	// to filter by pin produces duplicates or wrong numbers; tests may name
	// them to prove the filter. The fixture shape only: the design shape's
	// files hold one pin of each, and these are empty.
	PreviousManifestID           string `json:"previous_manifest_id"`
	PreviousEnrollmentSnapshotID string `json:"previous_enrollment_snapshot_id"`
	UnknownLessonID              string `json:"unknown_lesson_id"`

	HotCourse string   `json:"hot_course"`
	Courses   []string `json:"courses"`
	// Rows, not distinct keys: the duplicate variants count their extra row.
	LessonsInPin           int          `json:"lessons_in_pin"`
	EnrollmentRowsInPin    int          `json:"enrollment_rows_in_pin"`
	RestatementHorizonDays int          `json:"restatement_horizon_days"`
	NewestIngestDate       dates.Date   `json:"newest_ingest_date"`
	Dates                  []dates.Date `json:"dates"` // the restatable event dates, ascending

	// LateEvents are the events ingested after their event date whose event
	// date is restatable: exactly one in the fixture shape; the design shape
	// lists none (its late events, at d+1, are in the figures).
	LateEvents []LateEvent `json:"late_events"`
	// UnrestatedLateEvents arrived late for a date outside the horizon; they
	// must never show up in the figures of any restatable date.
	UnrestatedLateEvents []LateEvent `json:"unrestated_late_events"`

	// ByDate and ByDateCourse are keyed by event_date (UTC) and cover every
	// event date present in raw, including the unrestatable one.
	ByDate map[dates.Date]DayFigures `json:"by_date"`
	// ByDateCourse omits events whose course_id is NULL (null-course
	// variant), so its sum over courses can be below ByDate there.
	ByDateCourse map[dates.Date]map[string]CourseFigures `json:"by_date_course"`

	// Defects counts the one deliberate defect of a variant; nil for the base
	// fixture.
	Defects map[string]int `json:"defects,omitempty"`
}

// LateEvent is an event whose ingest_date is after its event_date.
type LateEvent struct {
	EventID    string     `json:"event_id"`
	EventDate  dates.Date `json:"event_date"`
	IngestDate dates.Date `json:"ingest_date"`
}

// DayFigures are the per-event-date totals. The first five match the
// course_day measures summed over courses; FactRows is the number of distinct
// (learner_key, lesson_id) pairs, i.e. fact_lesson_engagement rows.
type DayFigures struct {
	Events   int64 `json:"event_count"`
	Unknown  int64 `json:"unknown_lesson_count"`
	Matched  int64 `json:"matched_lesson_count"`
	Enrolled int64 `json:"enrolled_event_count"`
	// Learners is distinct over the whole day, so it is not the sum of the
	// per-course learner counts.
	Learners            int64 `json:"learner_count"`
	FactRows            int64 `json:"fact_rows"`
	SameDayIngestEvents int64 `json:"same_day_ingest_events"`
}

// CourseFigures are one course_day row's measures as the inputs imply them.
type CourseFigures struct {
	Events   int64 `json:"event_count"`
	Unknown  int64 `json:"unknown_lesson_count"`
	Matched  int64 `json:"matched_lesson_count"`
	Enrolled int64 `json:"enrolled_event_count"`
	Learners int64 `json:"learner_count"`
}

// ExpectedFile is the name of the figures file beside the generated inputs.
const ExpectedFile = "expected.json"

// ReadExpected loads an expected.json written by Generate.
func ReadExpected(path string) (Expected, error) {
	var e Expected
	b, err := os.ReadFile(path)
	if err != nil {
		return e, fmt.Errorf("read expected figures: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("parse expected figures %s: %w", path, err)
	}
	return e, nil
}

func writeExpected(path string, e Expected) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encode expected figures for %s: %w", path, err)
	}
	b = append(b, '\n')
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write expected figures: %w", err)
	}
	return nil
}

func (g *generator) expected() Expected {
	e := Expected{
		Seed:                         g.opts.Seed,
		Events:                       g.opts.Events,
		Variant:                      g.opts.Variant,
		ManifestID:                   ManifestID,
		EnrollmentSnapshotID:         EnrollmentSnapshotID,
		PreviousManifestID:           PreviousManifestID,
		PreviousEnrollmentSnapshotID: PreviousEnrollmentSnapshotID,
		UnknownLessonID:              UnknownLessonID,
		HotCourse:                    HotCourse,
		LessonsInPin:                 len(g.lessons),
		EnrollmentRowsInPin:          g.pinnedRows,
		RestatementHorizonDays:       RestatementHorizonDays,
		NewestIngestDate:             NewestIngestDate,
		Dates:                        slices.Clone(RestatableDates),
		LateEvents:                   g.late,
		UnrestatedLateEvents:         g.stale,
		ByDate:                       map[dates.Date]DayFigures{},
		ByDateCourse:                 map[dates.Date]map[string]CourseFigures{},
		Defects:                      g.defects,
	}
	if g.opts.Variant == VariantDuplicateLesson {
		e.LessonsInPin++
	}
	for _, c := range g.courses {
		e.Courses = append(e.Courses, c.id)
	}
	for i, d := range g.days {
		t := g.tallies[i]
		fig := t.fig
		fig.Learners = int64(t.learners.count())
		fig.FactRows = int64(len(t.facts))
		e.ByDate[d.date] = fig
		per := map[string]CourseFigures{}
		for c, ct := range t.course {
			if ct.fig.Events == 0 {
				continue
			}
			cf := ct.fig
			cf.Learners = int64(ct.learners.count())
			per[g.courses[c].id] = cf
		}
		e.ByDateCourse[d.date] = per
	}
	if g.opts.Variant == VariantOverCap {
		over, unknown := 0, int64(0)
		for _, d := range RestatableDates {
			f := e.ByDate[d]
			unknown += f.Unknown
			if f.Unknown*50 > f.Events { // rate above the 2% default cap
				over++
			}
		}
		e.Defects = map[string]int{"over_cap_dates": over, "unknown_lesson_events": int(unknown)}
	}
	if g.opts.Variant == VariantProhibitedColumn {
		e.Defects = map[string]int{"prohibited_columns": 1}
	}
	return e
}
