// Package metrics turns one publish run into Prometheus metrics: a
// node_exporter textfile and a Pushgateway push. It only reports: the
// command calls it after the run's outcome is decided, and a failure here is
// the caller's warning, never the run's exit code.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/redact"
)

// Job is the Pushgateway job label; the push groups by nothing else, so each
// run replaces the last run's figures.
const Job = "engagement"

// Metric names (docs/metrics.md).
const (
	LastAttempt    = "engagement_last_attempt_timestamp_seconds"
	LastSuccess    = "engagement_last_success_timestamp_seconds"
	LastExitCode   = "engagement_last_exit_code"
	RunDuration    = "engagement_last_run_duration_seconds"
	EventCount     = "engagement_event_count"
	UnknownRate    = "engagement_unknown_lesson_rate"
	UnknownCap     = "engagement_unknown_lesson_cap"
	FactBytes      = "engagement_fact_bytes"
	FactFiles      = "engagement_fact_files"
	GateCheck      = "engagement_gate_check_passed"
	PhaseDuration  = "engagement_phase_duration_seconds"
	PeakRSS        = "engagement_peak_rss_bytes"
	ExportFailures = "engagement_metrics_export_failures"
	LineageFails   = "engagement_lineage_failures"
	Unsettled      = "engagement_unsettled_dates"
	Stray          = "engagement_stray_events"
)

// Run is what one publish did, as the command saw it.
type Run struct {
	Result job.Result
	// Code is the process's exit code for the run (signals included).
	Code int
	// Started and Ended are the command's clock around the run.
	Started, Ended time.Time
	// UnknownCap is the job's cap; HaveCap is false when the run failed
	// before the config was resolved.
	UnknownCap float64
	HaveCap    bool
	Phases     []Phase
	// PreviousSuccess is carried into a failed run's metrics, so the last
	// success is not forgotten when a textfile is rewritten (zero: none).
	PreviousSuccess time.Time
	// ExportFailures counts sinks that already failed in this run, by sink.
	ExportFailures map[string]int
	// Lineage is true when the run sent OpenLineage events, and
	// LineageFailures counts the sends that failed.
	Lineage         bool
	LineageFailures int

	omitSuccess bool // the push sends the last success in its own group
}

const lastSuccessHelp = "Unix time the last successful publish ended."

// Registry builds a fresh registry (never the global one) holding r.
func Registry(r Run) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	vec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	gauge(LastAttempt, "Unix time the last publish attempt started.").Set(seconds(r.Started))
	success := r.PreviousSuccess
	if r.Code == exitcode.OK {
		success = r.Ended
	}
	if !success.IsZero() && !r.omitSuccess {
		gauge(LastSuccess, lastSuccessHelp).Set(seconds(success))
	}
	gauge(LastExitCode, "Exit code of the last publish (0 published, 1 error, 2 usage, 3 gate rejected, 4 already published, 6 a rollback of one of its dates came first, 130/143/129 signals).").Set(float64(r.Code))
	gauge(RunDuration, "Wall time of the last publish.").Set(r.Ended.Sub(r.Started).Seconds())
	if r.HaveCap {
		gauge(UnknownCap, "The unknown-lesson cap the last publish was gated with.").Set(r.UnknownCap)
	}
	// What readers see: a run whose pointer write failed or was refused
	// (a lock, a signal) had its entries built all the same, and a date a
	// later generation superseded shows that one's figures.
	if r.Result.Published && len(r.Result.Entries) > len(r.Result.Superseded) {
		ev := vec(EventCount, "Events published for the date by the last successful publish.", "date")
		rate := vec(UnknownRate, "Share of the date's events with an unknown lesson.", "date")
		fb := vec(FactBytes, "Bytes of the date's published fact files.", "date")
		ff := vec(FactFiles, "Number of the date's published fact files.", "date")
		for d, e := range r.Result.Entries {
			if slices.Contains(r.Result.Superseded, d) {
				continue
			}
			var bytes int64
			for _, f := range e.FactFiles {
				bytes += f.Bytes
			}
			ds := d.String()
			ev.WithLabelValues(ds).Set(float64(e.EventCount))
			rate.WithLabelValues(ds).Set(e.UnknownLessonRate)
			fb.WithLabelValues(ds).Set(float64(bytes))
			ff.WithLabelValues(ds).Set(float64(len(e.FactFiles)))
		}
	}
	if r.Result.UnsettledChecked {
		gauge(Unsettled, "Published dates that left the restatement horizon before a publish read every partition of their lateness window (a missed or failed run, or an ingestion gap since filled), or that read one changed since (a late flush, a replay).").Set(float64(len(r.Result.Unsettled)))
		gauge(Stray, "Raw events of the read window that no publish of any date counts: of dates not requested, outside their partition's own window (a producer's clock).").Set(float64(r.Result.StrayEvents))
	}
	if len(r.Result.Report.Checks) > 0 {
		gc := vec(GateCheck, "1 when the gate check passed in the last publish, 0 when it failed.", "check", "date")
		for _, c := range r.Result.Report.Checks {
			v := 0.0
			if c.Passed {
				v = 1
			}
			gc.WithLabelValues(c.Name, c.Date).Set(v)
		}
	}
	if len(r.Phases) > 0 {
		ph := vec(PhaseDuration, "Wall time of each phase of the last publish.", "phase")
		for _, p := range r.Phases {
			ph.WithLabelValues(p.Name).Set(p.Duration.Seconds())
		}
	}
	if rss, ok := PeakRSSBytes(); ok {
		gauge(PeakRSS, "Peak resident set size of the last publish's process (getrusage ru_maxrss).").Set(float64(rss))
	}
	if r.Lineage {
		gauge(LineageFails, "OpenLineage event sends (per event and sink) that failed in the last publish.").Set(float64(r.LineageFailures))
	}
	if len(r.ExportFailures) > 0 {
		ef := vec(ExportFailures, "Metrics sinks that failed earlier in the last publish's run.", "sink")
		for s, n := range r.ExportFailures {
			ef.WithLabelValues(s).Set(float64(n))
		}
	}
	return reg
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// WriteFile writes g to path as a node_exporter textfile. It writes a
// temporary file in path's directory and renames it over path
// (prometheus.WriteToTextfile), so the collector never reads half a file.
func WriteFile(path string, g prometheus.Gatherer) error {
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics file %s: %w", path, err)
	}
	return nil
}

// SuccessGroup is the grouping label of the Pushgateway group that holds
// only the last success's timestamp: {job="engagement",outcome="success"}.
var SuccessGroup = map[string]string{"outcome": "success"}

// Push sends run to the Pushgateway at url. The run's metrics replace the
// group {job="engagement"} (PUT), so nothing of an earlier run lingers beside
// a later one's exit code. A success also replaces the group
// {job="engagement",outcome="success"}, which holds only the last success's
// timestamp and which a failed run never touches.
func Push(ctx context.Context, c *http.Client, url string, run Run) error {
	r := run
	r.omitSuccess = true
	if err := push.New(url, Job).Client(c).Gatherer(Registry(r)).PushContext(ctx); err != nil {
		return fmt.Errorf("push metrics to %s: %w", redact.URL(url), redact.Error(err, url))
	}
	if run.Code != exitcode.OK {
		return nil
	}
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: LastSuccess, Help: lastSuccessHelp})
	g.Set(seconds(run.Ended))
	reg.MustRegister(g)
	p := push.New(url, Job).Client(c).Gatherer(reg)
	for k, v := range SuccessGroup {
		p = p.Grouping(k, v)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push the last success to %s: %w: %w", redact.URL(url), ErrSuccessNotPushed, redact.Error(err, url))
	}
	return nil
}

// ErrSuccessNotPushed: the run's group was pushed, the last-success group
// was not; the Pushgateway's last success is then older than the run's.
var ErrSuccessNotPushed = errors.New("the run's metrics were pushed, its success time was not")

// PreviousSuccess reads the last-success gauge from an earlier textfile at
// path; zero when there is none or it does not parse.
func PreviousSuccess(path string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	fams, err := Parse(f)
	if err != nil {
		return time.Time{}
	}
	if v, ok := Value(fams, LastSuccess, nil); ok && v > 0 {
		return time.Unix(0, int64(v*1e9)).UTC()
	}
	return time.Time{}
}

// Parse reads the text exposition format with Prometheus's own parser.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	// The zero TextParser panics on its unset name validation scheme.
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Value finds the value of the sample of name whose labels include labels.
func Value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	fam, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetUntyped() != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// Phase is one finished phase and its wall time.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Phases is a progress.Reporter that records each phase's wall time and
// passes every report on to Next. Now is the command's clock.
type Phases struct {
	Next progress.Reporter
	Now  func() time.Time

	mu   sync.Mutex
	done []Phase
}

// Phase implements progress.Reporter.
func (p *Phases) Phase(name string) func() {
	end := p.next().Phase(name)
	start := p.Now()
	return func() {
		d := p.Now().Sub(start)
		end()
		p.mu.Lock()
		p.done = append(p.done, Phase{Name: name, Duration: d})
		p.mu.Unlock()
	}
}

// Step implements progress.Reporter.
func (p *Phases) Step(done, total int, rows int64, what string) {
	p.next().Step(done, total, rows, what)
}

// Dates implements progress.Reporter.
func (p *Phases) Dates(done, total int, rows int64, share float64) {
	p.next().Dates(done, total, rows, share)
}

func (p *Phases) next() progress.Reporter {
	if p.Next == nil {
		return progress.Discard
	}
	return p.Next
}

// Done returns the finished phases, a phase run twice summed into one,
// ordered by name.
func (p *Phases) Done() []Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum := map[string]time.Duration{}
	for _, ph := range p.done {
		sum[ph.Name] += ph.Duration
	}
	out := make([]Phase, 0, len(sum))
	for n, d := range sum {
		out = append(out, Phase{Name: n, Duration: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
