package progress

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a manual clock for the printer; the ticker still runs on real
// time, so the tests use an interval far longer than they last.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newPrinter(live bool) (*Printer, *syncBuf, *syncBuf, *clock) {
	out, logs := &syncBuf{}, &syncBuf{}
	c := &clock{t: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)}
	p := New(out, slog.New(slog.NewJSONHandler(logs, nil)), Options{Live: &live, Every: time.Hour, Now: c.now})
	return p, out, logs, c
}

func TestNotTerminalPrintsALineEveryInterval(t *testing.T) {
	p, out, _, c := newPrinter(false)
	end := p.Phase("stage")
	p.Step(1, 4, 0, "build fact")
	c.add(30 * time.Minute)
	p.Step(2, 4, 1_500_000, "write 2026-03-02") // inside the interval: no line
	c.add(31 * time.Minute)
	p.Step(3, 4, 3_000_000, "write 2026-03-03") // past it: one line
	end()
	p.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want the phase start and one interval line:\n%s", len(lines), out.String())
	}
	want := "progress: stage 3/4 75% 3.0M rows [write 2026-03-03] 1h1m0s (total 1h1m0s)"
	if lines[1] != want {
		t.Errorf("line %q, want %q", lines[1], want)
	}
	if strings.Contains(out.String(), "\r") {
		t.Error("a non-terminal got carriage returns")
	}
}

func TestTerminalKeepsOneLiveLine(t *testing.T) {
	p, out, _, c := newPrinter(true)
	end := p.Phase("gate")
	c.add(2 * time.Second)
	p.Step(1, 2, 0, "read back")
	end()
	p.Close()
	s := out.String()
	if strings.Contains(s, "\n") {
		t.Errorf("live output has newlines: %q", s)
	}
	if !strings.Contains(s, "\rprogress: gate 1/2 50% [read back] 2s (total 2s)") {
		t.Errorf("live line missing: %q", s)
	}
	if !strings.HasSuffix(s, "\r") {
		t.Errorf("live line not cleared at the end: %q", s)
	}
}

func TestPhaseAndStepRecords(t *testing.T) {
	p, _, logs, c := newPrinter(false)
	end := p.Phase("stage")
	p.Step(0, 2, 0, "count")
	c.add(1500 * time.Millisecond)
	p.Step(1, 2, 10, "write")
	c.add(2 * time.Second)
	end()
	p.Close()
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("got %d records, want 2 steps and 1 phase: %v", len(got), got)
	}
	for i, w := range []struct {
		msg, name string
		seconds   float64
	}{{"step", "count", 1.5}, {"step", "write", 2}, {"phase", "stage", 3.5}} {
		name := got[i]["step"]
		if w.msg == "phase" {
			name = got[i]["phase"]
		}
		if got[i]["msg"] != w.msg || name != w.name || got[i]["seconds"] != w.seconds {
			t.Errorf("record %d = %v, want %s %s %.1fs", i, got[i], w.msg, w.name, w.seconds)
		}
	}
}

func TestDiscardAndCount(t *testing.T) {
	Discard.Phase("x")()
	Discard.Step(1, 2, 3, "y")
	Discard.Dates(1, 2, 3, 0.5)
	for n, want := range map[int64]string{950: "950", 12_345: "12.3K", 4_500_000: "4.5M"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestLogLinesLandAboveTheLiveLine: on a terminal, a log record written
// through the Printer clears the live line, appears whole, and the live line
// is drawn again after it.
func TestLogLinesLandAboveTheLiveLine(t *testing.T) {
	p, out, _, _ := newPrinter(true)
	log := slog.New(slog.NewJSONHandler(p, nil))
	p.SetLog(log)
	end := p.Phase("stage")
	p.Step(1, 2, 0, "write")
	log.Info("monitor", "signal", "x")
	p.Step(2, 2, 0, "last") // logs the "write" step record through the Printer
	end()
	p.Close()
	s := out.String()
	for _, rec := range []string{`"msg":"monitor"`, `"msg":"step"`, `"msg":"phase"`} {
		i := strings.Index(s, rec)
		if i < 0 {
			t.Fatalf("no %s in %q", rec, s)
		}
		// The record starts a fresh line: right after a cleared line or a newline.
		j := strings.LastIndex(s[:i], "{")
		if j < 1 || (s[j-1] != '\r' && s[j-1] != '\n') || strings.Contains(s[j:i], "progress:") {
			t.Errorf("%s does not start its own line: %q", rec, s[max(0, j-40):i+len(rec)])
		}
	}
	if !strings.Contains(s[strings.Index(s, `"msg":"monitor"`):], "\rprogress: stage 1/2") {
		t.Errorf("live line not redrawn after the log record: %q", s)
	}
}

// TestRecordsMakeEveryLineARecord: with Records, nothing is written to w,
// even on what claims to be a terminal, and each line the interval lets
// through is one "progress" record with the figures of that moment.
func TestRecordsMakeEveryLineARecord(t *testing.T) {
	out, logs := &syncBuf{}, &syncBuf{}
	c := &clock{t: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)}
	live := true
	p := New(out, slog.New(slog.NewJSONHandler(logs, nil)), Options{Live: &live, Every: time.Hour, Now: c.now, Records: true})
	if p.Live() {
		t.Error("a Printer making records keeps a live line")
	}
	end := p.Phase("stage")
	c.add(61 * time.Minute)
	p.Step(3, 4, 3_000_000, "write 2026-03-03")
	end()
	p.Close()
	if out.String() != "" {
		t.Errorf("text written beside the records: %q", out.String())
	}
	var progress []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "progress" {
			progress = append(progress, m)
		}
	}
	if len(progress) != 2 {
		t.Fatalf("%d progress records, want the phase start and one interval line: %v", len(progress), progress)
	}
	last := progress[1]
	for k, want := range map[string]any{"phase": "stage", "steps_done": 3.0, "steps_total": 4.0, "rows": 3e6,
		"step": "write 2026-03-03", "seconds": 3660.0, "total_seconds": 3660.0} {
		if last[k] != want {
			t.Errorf("progress record %s = %v, want %v (%v)", k, last[k], want, last)
		}
	}
}

// lastLine is the live line as it stands: the text after the last carriage
// return that is not a clearing one.
func lastLine(out *syncBuf) string {
	parts := strings.Split(out.String(), "\r")
	for i := len(parts) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(parts[i]); s != "" {
			return s
		}
	}
	return ""
}

// TestDatesAndTimeLeft: the line shows the dates done of the total from the
// first report, and a time left only once some share is done after some
// time: the elapsed time since the first report scaled by the share still
// to do, counting down between reports and never below zero.
func TestDatesAndTimeLeft(t *testing.T) {
	p, out, _, c := newPrinter(true)
	end := p.Phase("stage")
	c.add(40 * time.Second) // the aggregate: before the first report, not in the rate
	for i, s := range []struct {
		advance     time.Duration
		report      func()
		want, never string
	}{
		{0, func() { p.Dates(0, 10, 0, 0) }, "dates 0/10 40s", "left"},
		{30 * time.Second, func() { p.Dates(0, 10, 0, 0.3) }, "dates 0/10 ~1m10s left 1m10s", ""},
		{10 * time.Second, func() { p.Step(5, 22, 0, "write course_day 2026-03-01") }, "[write course_day 2026-03-01] dates 0/10 ~1m0s left", ""},
		{20 * time.Second, func() { p.Dates(3, 10, 1_200_000, 0.6) }, "1.2M rows [write course_day 2026-03-01] dates 3/10 ~40s left", ""},
		{50 * time.Second, func() { p.Step(6, 22, 0, "write course_day 2026-03-04") }, "1.2M rows [write course_day 2026-03-04] dates 3/10 ~0s left", ""},
		{5 * time.Second, func() { p.Dates(10, 10, 2_400_000, 1) }, "2.4M rows [write course_day 2026-03-04] dates 10/10 2m35s", "left"},
	} {
		c.add(s.advance)
		s.report()
		line := lastLine(out)
		if !strings.Contains(line, s.want) || (s.never != "" && strings.Contains(line, s.never)) {
			t.Errorf("report %d: line %q, want %q and no %q", i, line, s.want, s.never)
		}
	}
	end()
	p.Phase("gate")
	if line := lastLine(out); strings.Contains(line, "dates") {
		t.Errorf("the next phase still shows dates: %q", line)
	}
	p.Close()
}

// TestDatesRecord: in records mode the progress record carries the dates
// and the seconds left.
func TestDatesRecord(t *testing.T) {
	out, logs := &syncBuf{}, &syncBuf{}
	c := &clock{t: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)}
	p := New(out, slog.New(slog.NewJSONHandler(logs, nil)), Options{Every: time.Hour, Now: c.now, Records: true})
	end := p.Phase("stage")
	p.Dates(0, 4, 0, 0)
	c.add(2 * time.Hour)
	p.Dates(1, 4, 100, 0.25)
	end()
	p.Close()
	var last, phase map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch m["msg"] {
		case "progress":
			last = m
		case "phase":
			phase = m
		}
	}
	for k, want := range map[string]any{"dates_done": 1.0, "dates_total": 4.0, "seconds_left": 6.0 * 3600, "rows": 100.0} {
		if last[k] != want {
			t.Errorf("progress record %s = %v, want %v (%v)", k, last[k], want, last)
		}
	}
	// The phase's record carries the rows its writes wrote.
	if phase["rows"] != 100.0 {
		t.Errorf("phase record rows = %v, want 100 (%v)", phase["rows"], phase)
	}
}

// TestTickShorterThanTheInterval: the ticker looks several times an
// interval, so a line is late by at most a fifth of it, not by a whole one.
func TestTickShorterThanTheInterval(t *testing.T) {
	for _, every := range []time.Duration{5 * time.Second, time.Minute, 500 * time.Millisecond} {
		if tick := tickEvery(every, false); tick <= 0 || tick > every/5 {
			t.Errorf("interval %s: tick %s, want at most %s", every, tick, every/5)
		}
	}
}
