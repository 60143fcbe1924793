package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/metrics"
	"github.com/techlearningpro/engagement/internal/signals"
)

// pushTimeout bounds the push, so a Pushgateway that hangs cannot hold a
// finished publish (or a signalled one) open.
const pushTimeout = 10 * time.Second

// signalledPushTimeout bounds each send once a signal arrived: a run asked
// to stop still reports, but three hanging sends of 10 s would outlast a
// scheduler's grace period (Kubernetes': 30 s) and be killed unreported.
const signalledPushTimeout = 2 * time.Second

// sinkContext is the context of one report: not cancelled by a signal (an
// interrupted run's report is still worth sending), and bounded, the
// tighter once a signal has come.
func sinkContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := pushTimeout
	if _, ok := signals.Received(ctx); ok {
		d = signalledPushTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	// A signal that comes during the send cuts what is left of it too.
	stop := context.AfterFunc(ctx, func() {
		if _, ok := signals.Received(ctx); ok {
			time.AfterFunc(signalledPushTimeout, cancel)
		}
	})
	return sctx, func() { stop(); cancel() }
}

// sinkClient sends to the Pushgateway and the lineage endpoint. It follows
// a redirect only when it keeps the method (307, 308: the body is sent
// again): Go's client turned a POST or PUT answered 301, 302 or 303 into a
// GET of the new place, whose 200 counted the event as sent (an SSO proxy,
// an http-to-https front dropped every event without a warning). Such a
// 3xx is an answer that is not 2xx: a failed send, warned of.
var sinkClient = &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
	if r.Method != via[0].Method {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}}

// metricsFlags are publish's --metrics-file and --pushgateway.
type metricsFlags struct{ file, pushgateway string }

func addMetricsFlags(fs *pflag.FlagSet) *metricsFlags {
	f := &metricsFlags{}
	fs.StringVar(&f.file, "metrics-file", "", "after every run, write Prometheus metrics to this node_exporter textfile (atomically; docs/metrics.md)")
	fs.StringVar(&f.pushgateway, "pushgateway", "", "after every run, push Prometheus metrics to this Pushgateway URL under job=engagement (docs/metrics.md)")
	return f
}

func (f *metricsFlags) enabled() bool { return f != nil && (f.file != "" || f.pushgateway != "") }

// export reports run to the configured sinks. It runs after the outcome is
// decided and only warns: it never changes what the command returns. The
// textfile, the local and surer sink, is written before the push and again
// after a failed one, to count it.
func (f *metricsFlags) export(ctx context.Context, env Env, run metrics.Run, err error) {
	// The code the process will exit with: a signal's, when one cancelled
	// the run (cmd/engagement applies the same rule).
	run.Code = signals.ExitCode(ctx, exitcode.Code(err), io.Discard)
	run.ExportFailures = map[string]int{}
	if f.file != "" {
		run.PreviousSuccess = metrics.PreviousSuccess(f.file)
	}
	writeFile := func() {
		if werr := metrics.WriteFile(f.file, metrics.Registry(run)); werr != nil {
			run.ExportFailures["textfile"]++
			env.Log.Warn("the metrics file was not written; the run's outcome stands", "exit_code", run.Code, "error", werr.Error(), "metrics_failures", len(run.ExportFailures))
		}
	}
	// The textfile first: the push may wait on its server, and a second
	// signal meanwhile exits at once, which left the last run's exit code
	// in the file (a rejection read as a success). It is written again
	// when the push fails, to count that.
	if f.file != "" {
		writeFile()
	}
	if f.pushgateway != "" {
		pctx, cancel := sinkContext(ctx)
		perr := metrics.Push(pctx, sinkClient, f.pushgateway, run)
		cancel()
		if perr != nil {
			run.ExportFailures["pushgateway"]++
			msg := "metrics were not pushed; the run's outcome stands"
			if errors.Is(perr, metrics.ErrSuccessNotPushed) {
				// An alert on the last success may fire although this run
				// succeeded: the on-call must be told which group is stale.
				msg = "the last-success group was not pushed (the run's metrics were); the run's outcome stands"
			}
			env.Log.Warn(msg, "exit_code", run.Code, "error", perr.Error(), "metrics_failures", len(run.ExportFailures))
			if f.file != "" && run.ExportFailures["textfile"] == 0 {
				writeFile()
			}
		}
	}
}

// reportRefused reports a publish whose command line was refused before
// publish ran (a flag given twice, an unknown flag), to the sinks the
// command line or the environment names: without it the sinks kept the
// last run's exit code 0 and no failure alert fired. The places the
// textfile must stay out of are not known, so it is written only over one
// an earlier run wrote.
func reportRefused(ctx context.Context, env Env, pre preParse, started time.Time, err error) {
	if pre.command != "publish" || env.outcome.ran || err == nil {
		return
	}
	f := &metricsFlags{pushgateway: pre.pushgateway}
	switch {
	case ownTextfile(pre.metricsFile):
		f.file = pre.metricsFile
	case pre.metricsFile != "":
		env.Log.Warn("a file sink is not written", "error", "--metrics-file "+pre.metricsFile+": "+placesUnknown+", and no earlier run wrote it")
	}
	// A URL the push would refuse is dropped (sinkURL empties it); the
	// textfile is still written.
	if uerr := sinkURL("--pushgateway", &f.pushgateway, false); uerr != nil {
		env.Log.Warn("metrics were not pushed; the run's outcome stands", "error", uerr.Error())
	}
	if !f.enabled() {
		return
	}
	f.export(ctx, env, metrics.Run{Started: started, Ended: time.Now()}, err)
}
