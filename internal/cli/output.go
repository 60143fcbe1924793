package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/version"
)

// Values of publish --output.
const (
	outputText = "text"
	outputJSON = "json"
)

// Results a document reports.
const (
	resultPublished = "published"
	resultRejected  = "rejected"
	resultError     = "error"
)

func addOutputFlag(fs *pflag.FlagSet, o *string) {
	fs.StringVar(o, "output", outputText, "stdout: text (the summary, or the failed checks) or json (one JSON document on one line, whatever the outcome; docs/cli.md)")
}

// outcome is what publish leaves for its --output json document, which
// MainEnv prints once the error, if any, is known.
type outcome struct {
	ran    bool   // publish's own code ran (and reported to its sinks)
	done   bool   // the document is printed
	output string // the checked --output; "" when publish did not get that far
	jobID  string
	dates  []dates.Date
	res    *job.Result
}

// begin checks --output and records it with the job id.
func (o *outcome) begin(output, jobID string, from origin) error {
	if output != outputText && output != outputJSON {
		return exitcode.UsageError(fmt.Errorf("publish: %s %q: want text or json", from.ref("output"), output))
	}
	o.output, o.jobID = output, jobID
	return nil
}

// document is publish --output json's one line on stdout, a stable API
// for schedulers (docs/cli.md): fields are only ever added.
type document struct {
	JobID        string        `json:"job_id"`
	Command      string        `json:"command"`
	Version      string        `json:"version"`
	Result       string        `json:"result"`
	ExitCode     int           `json:"exit_code"`
	Error        string        `json:"error,omitempty"`
	Generation   int64         `json:"generation,omitempty"`
	Dates        []dateFigures `json:"dates,omitempty"`
	Superseded   []string      `json:"superseded_dates,omitempty"`
	Unsettled    []string      `json:"unsettled_dates,omitempty"`
	StrayEvents  int64         `json:"stray_events,omitempty"`
	FailedChecks []gate.Check  `json:"failed_checks,omitempty"`
}

type dateFigures struct {
	Date               string  `json:"date"`
	EventCount         int64   `json:"event_count"`
	UnknownLessonCount int64   `json:"unknown_lesson_count"`
	UnknownLessonRate  float64 `json:"unknown_lesson_rate"`
	FactFiles          int     `json:"fact_files"`
	CourseDayFiles     int     `json:"course_day_files"`
}

// print writes the document, once, when the run was publish --output json:
// publish prints it before its sinks report; MainEnv prints it when the
// command line was refused before that, as it read (publish --help, which
// succeeds, gets none). The exit code is the process's (a signal's
// 128+signo).
func (o *outcome) print(ctx context.Context, env Env, pre preParse, err error) {
	if o.done {
		return
	}
	output, jobID := o.output, o.jobID
	if output == "" && err != nil && pre.command == "publish" {
		output, jobID = pre.output, pre.jobID
	}
	if output != outputJSON {
		return
	}
	d := document{JobID: jobID, Command: "publish", Version: version.String(), Result: resultPublished,
		ExitCode: signals.ExitCode(ctx, exitcode.Code(err), io.Discard)}
	if err != nil {
		d.Result, d.Error = resultError, oneLine(err)
		if errors.Is(err, exitcode.ErrGateRejected) {
			d.Result = resultRejected
		}
	}
	if r := o.res; r != nil {
		if r.Rejection != nil {
			d.FailedChecks = r.Rejection.Failed
		}
		// Other dates than the run's, so whatever its outcome.
		d.Unsettled = dates.Strings(r.Unsettled)
		d.StrayEvents = r.StrayEvents
		if err == nil {
			d.Generation = r.Pointer.Generation
			for _, day := range o.dates {
				e := r.Entries[day]
				d.Dates = append(d.Dates, dateFigures{Date: day.String(), EventCount: e.EventCount, UnknownLessonCount: e.UnknownLessonCount,
					UnknownLessonRate: e.UnknownLessonRate, FactFiles: len(e.FactFiles), CourseDayFiles: len(e.CourseDayFiles)})
			}
			d.Superseded = dates.Strings(r.Superseded)
		}
	}
	o.done = true
	b, jerr := json.Marshal(d)
	if jerr == nil {
		_, jerr = env.Stdout.Write(append(b, '\n'))
	}
	if jerr != nil {
		// The exit code stands; only the document is lost.
		env.Log.Warn("the --output json document could not be printed to stdout", "result", d.Result, "exit_code", d.ExitCode, "error", jerr.Error())
	}
}
