// Package progress reports what a long run is doing on stderr: the phase,
// the steps or rows done, the dates finished with an estimate of the time
// left, and the elapsed time. On a terminal it keeps one live line;
// otherwise it prints a line every few seconds, so a log file shows a run
// is alive without drowning in lines.
//
// It reads the wall clock, so it lives outside the transform packages
// (internal/engine, internal/job), which receive it as a Reporter and never
// let it touch data.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Reporter receives phase and step reports. The zero value of a nil
// *Printer is a valid Reporter that reports nothing.
type Reporter interface {
	// Phase starts a named phase; calling the returned func ends it.
	Phase(name string) (end func())
	// Step reports progress inside the current phase: done of total steps
	// (total 0 when unknown), rows handled so far (0: not counted by the
	// step; the last count stands), and what is running now.
	Step(done, total int, rows int64, what string)
	// Dates reports the requested dates of the current phase: done of
	// total are finished, rows the rows its writes have written, and share
	// (0 to 1) is the part of the per-date work done. The phase's first report (share 0) starts the clock of
	// the time-left estimate: work done before it, not repeated per date,
	// does not count towards the rate.
	Dates(done, total int, rows int64, share float64)
}

// Discard reports nothing.
var Discard Reporter = nop{}

type nop struct{}

func (nop) Phase(string) func()            { return func() {} }
func (nop) Step(int, int, int64, string)   {}
func (nop) Dates(int, int, int64, float64) {}

// Printer is the Reporter for a command: it writes progress to w and one
// structured "phase" record per finished phase to log.
type Printer struct {
	w    io.Writer
	log  *slog.Logger
	live bool
	// records: each line is a "progress" log record, not text.
	records bool
	every   time.Duration
	now     func() time.Time

	mu                sync.Mutex
	phase, what       string
	done, total       int
	rows              int64
	start, phaseStart time.Time
	stepStart         time.Time
	lastLine          time.Time
	dates             dateState
	width             int
	stop              chan struct{}
	stopped           sync.WaitGroup
	closeOnce         sync.Once
}

// Options tune a Printer; zero values pick the defaults.
type Options struct {
	Live  *bool         // default: w is a terminal
	Every time.Duration // non-live line interval, default 5 s
	Now   func() time.Time
	// Records makes every line a "progress" record of the log instead of
	// text on w, and turns the live line off, so that a JSON log stays one
	// object per line.
	Records bool
}

// New returns a Printer writing to w. Call Close when the run ends.
func New(w io.Writer, log *slog.Logger, o Options) *Printer {
	p := &Printer{w: w, log: log, records: o.Records && log != nil, every: o.Every, now: o.Now, stop: make(chan struct{})}
	if p.every <= 0 {
		p.every = 5 * time.Second
	}
	if p.now == nil {
		p.now = time.Now
	}
	switch {
	case p.records:
	case o.Live != nil:
		p.live = *o.Live
	default:
		p.live = IsTerminal(w)
	}
	p.start = p.now()
	p.stopped.Add(1)
	go p.tick(tickEvery(p.every, p.live))
	return p
}

// tickEvery is how often the ticker looks: each second on a terminal, and
// a fifth of the interval otherwise. A tick as long as the interval found
// the last line a moment short of it half the time and waited one more,
// so lines came 5 to 10 s apart where 5 s was promised.
func tickEvery(every time.Duration, live bool) time.Duration {
	if live {
		return time.Second
	}
	return min(every/5, time.Second)
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// tick refreshes the line while a long statement gives no step reports.
func (p *Printer) tick(every time.Duration) {
	defer p.stopped.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.phase != "" {
				p.print(false)
			}
			p.mu.Unlock()
		}
	}
}

// Phase implements Reporter.
func (p *Printer) Phase(name string) func() {
	p.mu.Lock()
	p.phase, p.what, p.done, p.total, p.rows = name, "", 0, 0, 0
	p.dates = dateState{}
	p.phaseStart = p.now()
	p.print(true)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		now := p.now()
		records := p.endStep(now, nil)
		records = append(records, []any{"phase", "phase", name, "seconds", Seconds(now.Sub(p.phaseStart)), "rows", p.rows, "steps", p.done})
		p.clearLive()
		p.phase = ""
		p.mu.Unlock()
		p.logAll(records)
	}
}

// Step implements Reporter. Each finished step is also logged as a "step"
// record with its duration, so a slow run can be profiled from its log.
func (p *Printer) Step(done, total int, rows int64, what string) {
	p.mu.Lock()
	now := p.now()
	records := p.endStep(now, nil)
	p.done, p.total, p.rows, p.what = done, total, max(p.rows, rows), what
	p.stepStart = now
	p.print(false)
	p.mu.Unlock()
	p.logAll(records)
}

// dateState is the phase's date count and its time-left estimate.
type dateState struct {
	done, total int
	start       time.Time // the first report: the estimate's clock
	// left is the time left as estimated at the report at estAt; it
	// counts down until the next report. ok is false until there is a
	// basis (some share done, some time passed) and once all is done.
	left  time.Duration
	estAt time.Time
	ok    bool
}

// Dates implements Reporter. The time left is the elapsed time since the
// first report scaled by the share still to do: elapsed·(1−share)/share,
// the rate so far applied to the rest. It is estimated at each report and
// counts down between reports (never below zero), so a live line moves
// while a long write runs.
func (p *Printer) Dates(done, total int, rows int64, share float64) {
	p.mu.Lock()
	now := p.now()
	d := &p.dates
	if d.total == 0 {
		d.start = now
	}
	d.done, d.total = done, total
	p.rows = max(p.rows, rows)
	elapsed := now.Sub(d.start)
	d.ok = share > 0 && share < 1 && elapsed > 0
	if d.ok {
		d.left = time.Duration(float64(elapsed) * (1 - share) / share)
		d.estAt = now
	}
	p.print(false)
	p.mu.Unlock()
}

// timeLeft is the estimate at now, and whether there is one.
func (d dateState) timeLeft(now time.Time) (time.Duration, bool) {
	if !d.ok {
		return 0, false
	}
	return max(0, d.left-now.Sub(d.estAt)), true
}

// endStep ends the running step, if any, and appends its record. The caller
// holds mu; records are logged after it is released, because on a terminal
// the log writes through the Printer itself.
func (p *Printer) endStep(now time.Time, records [][]any) [][]any {
	if p.what != "" {
		records = append(records, []any{"step", "phase", p.phase, "step", p.what, "seconds", Seconds(now.Sub(p.stepStart))})
	}
	p.what = ""
	return records
}

func (p *Printer) logAll(records [][]any) {
	if p.log == nil {
		return
	}
	for _, r := range records {
		p.log.Info(r[0].(string), r[1:]...)
	}
}

// Live reports whether the Printer keeps a live line (its writer is a
// terminal).
func (p *Printer) Live() bool { return p.live }

// SetLog sets the logger for the phase and step records.
func (p *Printer) SetLog(log *slog.Logger) {
	p.mu.Lock()
	p.log = log
	p.mu.Unlock()
}

// Write lets other output share the terminal with the live line: it clears
// the line, writes b, and draws the line again below it. Give it to the
// command's log handler when Live is true.
func (p *Printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
	n, err := p.w.Write(b)
	if p.phase != "" {
		p.print(true)
	}
	return n, err
}

// Close stops the ticker and clears a live line; later calls do nothing.
func (p *Printer) Close() {
	p.closeOnce.Do(func() {
		close(p.stop)
		p.stopped.Wait()
		p.mu.Lock()
		p.clearLive()
		p.mu.Unlock()
	})
}

// print writes the current state: always on a terminal, else when forced or
// when the interval has passed since the last line. The caller holds mu.
func (p *Printer) print(force bool) {
	now := p.now()
	if !p.live && !force && now.Sub(p.lastLine) < p.every {
		return
	}
	p.lastLine = now
	if p.records {
		// Not live, so the log does not write through p: safe under mu.
		attrs := []any{"phase", p.phase, "steps_done", p.done, "steps_total", p.total, "rows", p.rows,
			"step", p.what, "seconds", Seconds(now.Sub(p.phaseStart)), "total_seconds", Seconds(now.Sub(p.start))}
		if p.dates.total > 0 {
			attrs = append(attrs, "dates_done", p.dates.done, "dates_total", p.dates.total)
			if left, ok := p.dates.timeLeft(now); ok {
				attrs = append(attrs, "seconds_left", Seconds(left.Round(time.Second)))
			}
		}
		p.log.Info("progress", attrs...)
		return
	}
	line := p.line(now)
	if p.live {
		pad := ""
		if n := p.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *Printer) clearLive() {
	if p.live && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// line renders "progress: stage 3/6 50% 1.2M rows [write fact 2026-03-02]
// dates 1/3 ~25s left 12.3s (total 20.1s)".
func (p *Printer) line(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress: %s", p.phase)
	if p.total > 0 {
		fmt.Fprintf(&b, " %d/%d %d%%", p.done, p.total, 100*p.done/p.total)
	}
	if p.rows > 0 {
		fmt.Fprintf(&b, " %s rows", Count(p.rows))
	}
	if p.what != "" {
		fmt.Fprintf(&b, " [%s]", p.what)
	}
	if p.dates.total > 0 {
		fmt.Fprintf(&b, " dates %d/%d", p.dates.done, p.dates.total)
		if left, ok := p.dates.timeLeft(now); ok {
			fmt.Fprintf(&b, " ~%s left", left.Round(time.Second))
		}
	}
	fmt.Fprintf(&b, " %s (total %s)", roundDur(now.Sub(p.phaseStart)), roundDur(now.Sub(p.start)))
	return b.String()
}

// Count renders a row count compactly: 950, 12.3K, 4.5M.
func Count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func roundDur(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// Seconds is a duration as the log records give it: seconds, to the
// millisecond.
func Seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
