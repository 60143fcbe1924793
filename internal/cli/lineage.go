package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/lineage"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/version"
)

// lineageFlags are publish's --lineage-file, --lineage-url and
// --lineage-namespace.
type lineageFlags struct{ file, url, namespace string }

func addLineageFlags(fs *pflag.FlagSet) *lineageFlags {
	f := &lineageFlags{}
	fs.StringVar(&f.file, "lineage-file", "", "append OpenLineage run events (START, then COMPLETE or FAIL) to this file, one JSON object a line (docs/lineage.md)")
	fs.StringVar(&f.url, "lineage-url", "", "POST OpenLineage run events to this endpoint, e.g. http://marquez:5000/api/v1/lineage (docs/lineage.md)")
	fs.StringVar(&f.namespace, "lineage-namespace", "engagement", "the OpenLineage namespace of the publish job")
	return f
}

func (f *lineageFlags) enabled() bool { return f != nil && (f.file != "" || f.url != "") }

// lineageRun sends one attempt's events and counts the sends that failed.
type lineageRun struct {
	f        *lineageFlags
	log      *slog.Logger
	plan     lineage.Plan
	failures int
}

// start sends START for j, begun at now. Like the metrics it only warns: a
// sink that fails never stops the publish.
func (f *lineageFlags) start(ctx context.Context, env Env, j config.Job, now time.Time) *lineageRun {
	r := &lineageRun{f: f, log: env.Log, plan: lineagePlan(j, now)}
	r.plan.Namespace = f.namespace
	r.send(ctx, lineage.StartEvent(r.plan, now))
	return r
}

// finish sends COMPLETE or FAIL for the run's outcome, once that is
// decided, and returns how many sends failed in the run.
func (r *lineageRun) finish(ctx context.Context, res job.Result, err error, now time.Time) int {
	// The exit code the process will have (cmd/engagement's rule).
	code := signals.ExitCode(ctx, exitcode.Code(err), io.Discard)
	r.send(ctx, lineage.EndEvent(r.plan, lineage.Outcome{Result: res, Code: code, Err: err}, now))
	return r.failures
}

func (r *lineageRun) send(ctx context.Context, e lineage.Event) {
	warn := func(sink string, err error) {
		r.failures++
		r.log.Warn("a lineage event was not sent; the run's outcome stands", // the logger carries job_id
			"event_type", e.EventType, "sink", sink, "error", err.Error(), "lineage_failures", r.failures)
	}
	if r.f.url != "" {
		// Not cancelled by a signal: the FAIL of an interrupted run is
		// still worth sending (sinkContext).
		pctx, cancel := sinkContext(ctx)
		err := lineage.Post(pctx, sinkClient, r.f.url, e)
		cancel()
		if err != nil {
			warn("url", err)
		}
	}
	if r.f.file != "" {
		if err := lineage.AppendFile(r.f.file, e); err != nil {
			warn("file", err)
		}
	}
}

// lineagePlan is what the events say of j. A location that does not parse
// is left empty: the publish itself refuses it, and FAIL says why.
func lineagePlan(j config.Job, now time.Time) lineage.Plan {
	spec := job.Spec(j, dates.FromTime(now.UTC()))
	p := lineage.Plan{
		JobID: j.JobID, Dates: j.Dates, IngestFrom: spec.IngestFrom, IngestTo: spec.IngestTo,
		ManifestID: j.ManifestID, EnrollmentSnapshotID: j.EnrollmentSnapshotID,
		Engine: j.Engine, Version: version.String(), Started: now,
	}
	b := version.Get()
	p.EngineVersion = b.DuckDB
	if j.Engine == "spark" {
		p.EngineVersion = b.SparkConnect
	}
	for _, l := range []struct {
		value string
		dst   *storage.Location
	}{{j.Raw, &p.Raw}, {j.Lessons, &p.Lessons}, {j.Enrollments, &p.Enrollments}, {j.Warehouse, &p.Warehouse}} {
		loc, err := storage.Parse(l.value)
		if err != nil {
			continue
		}
		// Dataset names are absolute paths (OpenLineage naming).
		if !loc.IsS3() {
			if abs, err := filepath.Abs(loc.Path); err == nil {
				loc.Path = abs
			}
		}
		*l.dst = loc
	}
	return p
}

// checkNamespace refuses an empty --lineage-namespace, or one with white
// space at an end, when events are sent: every event carried it, and a
// consumer refused "" or filed the runs under a name no one looks up. The
// sinks are dropped with it.
func (f *lineageFlags) checkNamespace() error {
	if !f.enabled() || f.namespace != "" && strings.TrimSpace(f.namespace) == f.namespace {
		return nil
	}
	f.url, f.file = "", ""
	return exitcode.UsageError(fmt.Errorf("--lineage-namespace %q: want a namespace without white space at its ends (the default is engagement)", f.namespace))
}
