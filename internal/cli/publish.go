package cli

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/metrics"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/redact"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/version"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// publishOptions are publish's flags: the job flags with --job-id, and
// where to report metrics and lineage.
type publishOptions struct {
	job     *jobFlags
	metrics *metricsFlags
	lineage *lineageFlags
	output  string
}

func newPublishCmd(env *Env) *cobra.Command {
	o := &publishOptions{}
	c := &cobra.Command{
		Use:   "publish --config FILE --job-id ID --dates D1,D2 [flags]",
		Short: "Stage, gate and publish the given event dates",
		Long: `publish computes both tables for the given event dates into a staging prefix named
by --job-id, checks them with the quality gate and, only if the gate passes, moves
the pointer so readers see them. Every job id must be new: put the try number in it.
Each input and override flag can also be set in the config file; the flag wins.`,
		Example: `  engagement publish --config config/fixture.conf --job-id fixture-1 --dates 2026-03-02,2026-03-03
  engagement publish --config config/production.conf --job-id 20260303T0600Z-try2 --dates 2026-03-02 \
    --warehouse s3://curated/engagement --manifest-id dim-2026-03-03 --enrollment-snapshot-id enr-2026-03-03`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runPublish(c.Context(), *env, o) },
	}
	o.job = addJobFlags(c.Flags(), true)
	o.metrics = addMetricsFlags(c.Flags())
	o.lineage = addLineageFlags(c.Flags())
	addOutputFlag(c.Flags(), &o.output)
	return c
}

func runPublish(ctx context.Context, env Env, o *publishOptions) (err error) {
	// The command's clock, read around the run for the metrics; the phases
	// are timed by a recorder between the job and the progress printer.
	run := metrics.Run{Started: time.Now()}
	env.outcome.ran = true
	phases := &metrics.Phases{Next: progress.Discard, Now: time.Now}
	if o.metrics.enabled() {
		defer func() {
			run.Ended, run.Phases = time.Now(), phases.Done()
			o.metrics.export(ctx, env, run, err)
		}()
	}
	if err := env.outcome.begin(o.output, o.job.jobID, o.job.origin); err != nil {
		// Decided before the deferred push: a signal while it waits made
		// this usage error 143, which a scheduler retries.
		decide(ctx, err)
		return err
	}
	j, eng, err := jobAndEngine(ctx, env.Log, o.job, func(j config.Job) error {
		if err := j.CheckPublish(); err != nil {
			return err
		}
		if j.Engine != "spark" {
			return nil
		}
		// Before the server is asked or anything is written.
		if err := spark.CheckWritable(j.Warehouse); err != nil {
			return exitcode.UsageError(fmt.Errorf("%s: %w", j.Shown(config.KeyWarehouse, "--warehouse"), err))
		}
		return nil
	})
	// The file sinks are checked whatever failed first: they are written
	// for a failed run too, and one aimed at pointer.json or a raw file
	// must not replace or append to it.
	sinks := j
	if err != nil {
		sinks, _ = o.job.places()
	}
	if serr := refuseSinksInData(sinks, o.job.configPath, o.metrics, o.lineage); serr != nil {
		if err == nil {
			eng.Close()
			err = serr
		} else {
			env.Log.Warn("a file sink is not written", "error", serr.Error())
		}
	}
	if o.lineage.enabled() && j.JobID != "" {
		// Runs before the metrics' defer, so they count its failures.
		lin := o.lineage.start(ctx, env, j, time.Now())
		defer func() { run.Lineage, run.LineageFailures = true, lin.finish(ctx, run.Result, err, time.Now()) }()
	}
	// The document goes out before the sinks, as the text summary does: a
	// second signal while they wait on their servers exits at once, and a
	// scheduler reading stdout must still get the outcome it exits with.
	defer func() { env.outcome.print(ctx, env, preParse{}, err) }()
	// Runs first of the deferred reports: whatever this returns is decided
	// before they are sent (a usage error too, refused before any publish).
	defer func() { decide(ctx, err) }()
	ran := false
	if j.JobID != "" {
		// The config resolved, whether or not the engine opened.
		run.UnknownCap, run.HaveCap = j.UnknownCap, true
		// A failure from here until the publisher runs (a Spark server
		// down, a warehouse bucket missing, a sink refused) prints the
		// closing monitor records a later failure prints: an alert on
		// job_result saw none.
		defer func() {
			if !ran && err != nil {
				job.MonitorEarlyFailure(ctx, env.Log, j, err)
			}
		}()
	}
	if err != nil {
		return err
	}
	defer eng.Close()
	// Progress goes to stderr with the logs: a live line on a terminal, a
	// line every few seconds otherwise (a log record each in json mode), and
	// one "phase" log record per phase.
	prog := progress.New(env.Stderr, env.Log, progress.Options{Records: env.Console.json()})
	defer prog.Close()
	phases.Next = prog
	if prog.Live() {
		// On a terminal the log lines go through the printer, so they land
		// above the live line instead of inside it.
		env.Log = env.Console.loggerTo(prog)
		prog.SetLog(env.Log)
	}
	if d, ok := eng.(interface{ SetProgress(progress.Reporter) }); ok {
		d.SetProgress(prog)
	}
	if len(j.ProhibitedColumns) == 0 {
		env.Log.Warn("the prohibited-column check is off: engagement.prohibitedColumns is none")
	}
	wh, store, err := warehouseStore(ctx, env, j.Shown(config.KeyWarehouse, "--warehouse"), j.Warehouse, j.LockTimeout)
	if err != nil {
		return err
	}
	var rep progress.Reporter = phases
	if c, ok := eng.(serverClock); ok {
		c.SetClock(time.Now)
		rep = serverPhases{Reporter: phases, clock: c, engine: eng.Name(), log: env.Log}
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	p := &job.Publisher{Engine: eng, Warehouse: wh, Store: store, Inputs: inputs.NewSource(open.Input),
		Log: env.Log, Clock: time.Now, Version: version.String(), Progress: rep, ProbeNonce: hex.EncodeToString(nonce[:])}
	ran = true
	res, err := p.Publish(ctx, j)
	decide(ctx, err)
	run.Result = res
	prog.Close()
	env.outcome.dates, env.outcome.res = j.Dates, &res
	if o.output == outputJSON {
		return err // the deferred print reports it
	}
	printRejection(env, res, err)
	if err != nil {
		return err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "published job_id=%s generation=%d\n", res.JobID, res.Pointer.Generation)
	for _, d := range j.Dates {
		e := res.Entries[d]
		fmt.Fprintf(&out, "  %s event_count=%d unknown_lesson_count=%d unknown_lesson_rate=%.4f fact_files=%d course_day_files=%d\n",
			d, e.EventCount, e.UnknownLessonCount, e.UnknownLessonRate, len(e.FactFiles), len(e.CourseDayFiles))
	}
	if len(res.Superseded) > 0 {
		fmt.Fprintf(&out, "  superseded_dates=%s: a concurrent job's later generation replaced them; readers see its files\n",
			strings.Join(dates.Strings(res.Superseded), ","))
	}
	out.WriteString(unsettledLine(res))
	// The pointer has moved: what the exit code reports is the publish, so a
	// closed stdout (a scheduler that stopped reading) only costs the
	// summary, which the log says.
	if _, err := io.WriteString(env.Stdout, out.String()); err != nil {
		env.Log.Warn("published, but the summary could not be printed to stdout",
			"generation", res.Pointer.Generation, "error", err.Error())
	}
	return nil
}

// decide records a publish's or a rollback's outcome once it stands, so
// that a signal during the reports that follow (the document, metrics,
// lineage, which may wait on their servers) does not change the exit
// code: published, a gate rejection, a published job id or a race lost
// (a rollback and a publish of one date) whatever came when, a generation
// committed but not shown (or whose showing could not be confirmed),
// which 130/143 would call the pointer unchanged, and any other failure
// that met no signal. A failure after a signal may be the signal's doing,
// which stays 130/143.
func decide(ctx context.Context, err error) {
	switch code := exitcode.Code(err); {
	case err == nil, code == exitcode.GateRejected, code == exitcode.AlreadyPublished, code == exitcode.Raced,
		errors.Is(err, pointer.ErrNotVisible), errors.Is(err, pointer.ErrOutcomeUnknown), errors.Is(err, history.ErrLanded):
		signals.Decide(ctx, code)
	case ctx.Err() == nil:
		signals.Decide(ctx, code)
	}
}

// serverClock is an engine that runs on a server (Spark Connect) and counts
// the time it waits on it, with the command's clock (an engine reads none).
type serverClock interface {
	SetClock(now func() time.Time)
	ServerTime() time.Duration
}

// serverPhases logs, at the end of each phase, how much of it the engine
// spent waiting on its server: the rest of the phase is the job's own work
// (listing, the pointer, the gate's arithmetic), which the benchmark reports
// as the share of a publish spent outside the cluster.
type serverPhases struct {
	progress.Reporter
	clock  serverClock
	engine string
	log    *slog.Logger
}

func (s serverPhases) Phase(name string) (end func()) {
	start := s.clock.ServerTime()
	next := s.Reporter.Phase(name)
	return func() {
		next()
		now := s.clock.ServerTime()
		s.log.Info("server time", "engine", s.engine, "phase", name,
			"seconds", progress.Seconds(now-start), "total_seconds", progress.Seconds(now))
	}
}

// refuseSinksInData refuses a --metrics-file or --lineage-file that lies
// in the warehouse or an input: the textfile would replace, and the event
// log append to, pointer.json or a published or raw file, and the publish
// would still exit 0. A refused sink is dropped, so that the failed run
// does not write it either.
func refuseSinksInData(j config.Job, configPath string, m *metricsFlags, l *lineageFlags) error {
	first := cmp.Or(sinkURL("--pushgateway", &m.pushgateway, false), sinkURL("--lineage-url", &l.url, true), l.checkNamespace())
	places, err := job.Locations(j)
	if err != nil {
		// The run's own error, naming the flag: the sink's "not known"
		// hid it, and the bad argument was named nowhere.
		first = err
	}
	if err != nil || j.Warehouse == "" {
		// The places a sink must stay out of are not known (a config that
		// did not resolve, a bad location, which the run's own error
		// names): nothing is written where it could not be checked, but
		// for a textfile an earlier run wrote, which holds no one's data,
		// so that its exit code 0 does not outlive this failed run.
		for _, s := range []struct {
			flag string
			path *string
		}{{"--metrics-file", &m.file}, {"--lineage-file", &l.file}} {
			if s.path == &m.file && ownTextfile(m.file) {
				continue
			}
			if *s.path != "" && first == nil {
				first = exitcode.UsageError(fmt.Errorf("%s %s: %s", s.flag, *s.path, placesUnknown))
			}
			*s.path = ""
		}
		return first
	}
	for _, s := range []struct {
		flag string
		path *string
	}{{"--metrics-file", &m.file}, {"--lineage-file", &l.file}} {
		if *s.path == "" {
			continue
		}
		if err := cmp.Or(edgeSpace(s.flag, *s.path), sinkPath(s.flag, *s.path)); err != nil {
			first = cmp.Or(first, err)
			*s.path = ""
			continue
		}
		if strings.Contains(*s.path, "://") {
			// The sinks are files on this machine (a node_exporter
			// textfile, a lineage log); a URL would become a local path
			// with one slash fewer.
			if first == nil {
				first = exitcode.UsageError(fmt.Errorf("%s %s: a file on this machine, not a URL", s.flag, *s.path))
			}
			*s.path = ""
			continue
		}
		if configPath != "" && warehouse.SamePath(*s.path, configPath) {
			if first == nil {
				first = exitcode.UsageError(fmt.Errorf("%s %s is the --config file: it would be replaced or written into; write it elsewhere", s.flag, *s.path))
			}
			*s.path = ""
			continue
		}
		if err := plainFile(*s.path); err != nil {
			if first == nil {
				first = exitcode.UsageError(fmt.Errorf("%s %s: %w", s.flag, *s.path, err))
			}
			*s.path = ""
			continue
		}
		flag, loc, ok, err := places.Holding(*s.path)
		if err != nil {
			if first == nil {
				first = exitcode.UsageError(fmt.Errorf("%s %s: %w", s.flag, *s.path, err))
			}
			*s.path = ""
			continue
		}
		if !ok {
			continue
		}
		if first == nil {
			first = exitcode.UsageError(fmt.Errorf("%s %s lies inside %s %s: it would write into what readers follow or what the job reads; write it elsewhere",
				s.flag, *s.path, flag, loc))
		}
		*s.path = ""
	}
	if m.file != "" && l.file != "" && warehouse.SamePath(m.file, l.file) {
		// The textfile is replaced whole, which would wipe the event log.
		first = cmp.Or(first, exitcode.UsageError(fmt.Errorf("--metrics-file and --lineage-file name one file, %s: give each its own", m.file)))
		m.file, l.file = "", ""
	}
	return first
}

// sinkURL refuses (and drops) an HTTP sink's URL that no request could
// reach as meant: not http(s)://HOST, or, for the Pushgateway, with a query
// or a fragment, to which its client appends /metrics/job/… (the push went
// to "/?tok=X/metrics/job/engagement"). Sink failures are warnings; a URL
// that cannot be right is the command's mistake.
func sinkURL(flag string, raw *string, query bool) error {
	if *raw == "" {
		return nil
	}
	u, err := url.Parse(*raw)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "":
	case !query && (u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(*raw, "?") || strings.HasSuffix(*raw, "#")):
	default:
		return nil
	}
	shown := redact.URL(*raw)
	*raw = ""
	want := "http(s)://HOST:PORT[/path]"
	if !query {
		want += " without a query or a fragment (the push appends /metrics/job/engagement to it)"
	}
	return exitcode.UsageError(fmt.Errorf("%s %s: want %s", flag, shown, want))
}

// placesUnknown is why a file sink is not written when the warehouse and
// inputs it must stay out of are not known.
const placesUnknown = "not written: the warehouse and inputs it must stay out of are not known"

// ownTextfile reports whether p is a metrics textfile an earlier publish
// wrote: a plain file that parses and holds engagement_last_exit_code.
// Replacing it cannot replace a warehouse's or an input's file.
func ownTextfile(p string) bool {
	if p == "" || plainFile(p) != nil {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	fams, err := metrics.Parse(f)
	if err != nil {
		return false
	}
	_, ok := metrics.Value(fams, metrics.LastExitCode, nil)
	return ok
}

// plainFile refuses a sink path that exists as anything but a regular file
// with no other name: the metrics textfile is replaced by a rename (a
// symlink or a device would be replaced, not written through), the lineage
// log is appended to (a FIFO without a reader blocks for ever), and a file
// with another hard link may be an input under another name.
func plainFile(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil // nothing there to replace; a write that then fails is the sink's warning
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symlink: give the file's own path")
	case !fi.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%s)", fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("has %d hard links: it may be another file (an input) under another name; give a file of its own", st.Nlink)
	}
	return nil
}
