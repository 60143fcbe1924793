// Package monitor prints the signals of the capstone's monitoring table, one
// log record per signal (a JSON line under --log-format json), each naming
// the failure domain it pages for, so an orchestrator can alert on a line
// instead of someone watching a UI. The records go through the command's
// logger, so they carry its job_id, command and version like every other.
package monitor

import (
	"context"
	"log/slog"
	"maps"
	"slices"
)

// Status of a signal.
const (
	OK          = "ok"
	Warn        = "warn"
	Page        = "page"
	Unavailable = "unavailable" // the engine does not expose the figure
)

// Signal names and their failure domains.
const (
	JobResult         = "job_result"            // publish
	GateRejection     = "gate_rejection"        // quality
	UnknownLessonRate = "unknown_lesson_rate"   // contract with the catalog
	InputVsFact       = "input_vs_fact"         // silent drop
	EnrollmentSkew    = "enrollment_stage_skew" // skew
	EnrollmentSpill   = "enrollment_stage_spill"
	FileLayout        = "file_layout"
	DatesInPointer    = "dates_in_pointer"
	RawFreshness      = "raw_freshness"
	UnsettledDates    = "unsettled_dates" // late events
	StrayEvents       = "stray_events"
)

// Domains names the failure domain of each signal.
var Domains = map[string]string{
	JobResult:         "publish",
	GateRejection:     "quality",
	UnknownLessonRate: "catalog_contract",
	InputVsFact:       "silent_drop",
	EnrollmentSkew:    "skew",
	EnrollmentSpill:   "memory_or_skew",
	FileLayout:        "layout",
	DatesInPointer:    "partial_publish",
	RawFreshness:      "freshness",
	UnsettledDates:    "late_events",
	StrayEvents:       "late_events",
}

// PerDate are the signals printed once per requested date.
var PerDate = map[string]bool{UnknownLessonRate: true, InputVsFact: true, FileLayout: true}

// Signal is one monitor line.
type Signal struct {
	Name    string
	Status  string
	Date    string // empty for job-wide signals
	Figures map[string]any
}

// Emit logs s at a level that follows its status.
func Emit(ctx context.Context, log *slog.Logger, s Signal) {
	level := slog.LevelInfo
	switch s.Status {
	case Warn:
		level = slog.LevelWarn
	case Page:
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("signal", s.Name),
		slog.String("domain", Domains[s.Name]),
		slog.String("status", s.Status),
	}
	if s.Date != "" {
		attrs = append(attrs, slog.String("date", s.Date))
	}
	if len(s.Figures) > 0 {
		// A group, in key order: the same object in JSON, and
		// figures.name=value pairs in text rather than a Go map.
		var figs []any
		for _, k := range slices.Sorted(maps.Keys(s.Figures)) {
			figs = append(figs, slog.Any(k, s.Figures[k]))
		}
		attrs = append(attrs, slog.Group("figures", figs...))
	}
	log.LogAttrs(ctx, level, "monitor", attrs...)
}
