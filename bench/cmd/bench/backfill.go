package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/progress"
)

// The backfill (--backfill DATES:EVENTS_PER_DATE) restates many event dates
// in one publish, as an operator does after an outage: production's
// three-date horizon, so the publish needs --allow-outside-horizon. It is
// held against a one-date publish of the same data in the same run, so the
// ratio says whether staging stays linear in the dates.
const (
	backfillHorizonDays = 3
	// backfillDateRatio and backfillMaxRSS are issue #12's targets: ten
	// dates at most 10.5 times one date (measured 9.5x and 4.3 GB before
	// the per-date changes), so 1.05 a date.
	backfillDateRatio = 1.05
	backfillMaxRSS    = 5 << 30
)

type backfillSpec struct{ dates, perDate int }

func parseBackfill(s string) (backfillSpec, error) {
	d, e, ok := strings.Cut(s, ":")
	n, err1 := strconv.Atoi(d)
	per, err2 := strconv.Atoi(e)
	if !ok || err1 != nil || err2 != nil || n < 2 || per < 1 {
		return backfillSpec{}, fmt.Errorf("--backfill %q: want DATES:EVENTS_PER_DATE, at least 2 dates (e.g. 10:30000000)", s)
	}
	return backfillSpec{dates: n, perDate: per}, nil
}

// backfillRun is the two measurements and the generation of their data.
type backfillRun struct {
	spec          backfillSpec
	limit         string
	one, all      measurement
	gen           time.Duration // 0 when the cached data was reused
	events, first int64         // all events, and those of the first date
}

// runBackfill generates the N-date design data once (cached like the design
// days), then publishes its first date alone and all its dates at once, each
// as its own process, both checked against expected.json through the
// pointer.
func runBackfill(ctx context.Context, f runFlags) (*backfillRun, error) {
	spec, err := parseBackfill(f.backfill)
	if err != nil {
		return nil, err
	}
	total := spec.dates * spec.perDate
	data := filepath.Join(f.cache, fmt.Sprintf("design-%d-%ddates-seed%d", total, spec.dates, f.seed))
	took, err := generate(ctx, f, data, total, "--dates", strconv.Itoa(spec.dates))
	if err != nil {
		return nil, err
	}
	exp, err := gen.ReadExpected(filepath.Join(data, gen.ExpectedFile))
	if err != nil {
		return nil, err
	}
	if len(exp.Dates) != spec.dates {
		return nil, fmt.Errorf("%s has %d dates, want %d: remove it to generate it again", data, len(exp.Dates), spec.dates)
	}
	b := &backfillRun{spec: spec, limit: f.backfillMemoryLimit, gen: took,
		events: int64(exp.Events), first: exp.ByDate[exp.Dates[0]].Events}
	// Production's horizon: every date but the newest three is outside it.
	exp.RestatementHorizonDays = backfillHorizonDays
	f.publishArgs = []string{"--allow-outside-horizon"}
	one := exp
	one.Dates = exp.Dates[:1]
	if b.one, err = publish(ctx, f, data, one, int(b.first), b.limit, "backfill: first date alone", "backfill-one"); err != nil {
		return nil, err
	}
	if b.all, err = publish(ctx, f, data, exp, total, b.limit, fmt.Sprintf("backfill: %d dates in one publish", spec.dates), "backfill-all"); err != nil {
		return nil, err
	}
	return b, nil
}

// report prints the backfill's row, its targets and its profile; total is
// the whole benchmark's time.
func (b *backfillRun) report(w io.Writer, total time.Duration) {
	ratio := b.all.wall.Seconds() / b.one.wall.Seconds()
	maxRatio := backfillDateRatio * float64(b.spec.dates)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	fmt.Fprintf(w, "\n### Backfill: %d dates in one publish (--allow-outside-horizon, horizon %d dates), memory_limit %s\n\n", b.spec.dates, backfillHorizonDays, b.limit)
	fmt.Fprintln(w, "| dates | events (first date) | one date wall s | all dates wall s | ratio (CPU ratio) | one date peak RSS | all dates peak RSS | all dates stage s | check | target |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	fmt.Fprintf(w, "| %d | %s (%s) | %.2f | %.2f | %.2fx (%.2fx) | %s | %s | %.2f | %s; %s | ratio <= %.1fx: %s; peak RSS <= %s: %s |\n",
		b.spec.dates, progress.Count(b.events), progress.Count(b.first), b.one.wall.Seconds(), b.all.wall.Seconds(), ratio, b.all.cpu.Seconds()/b.one.cpu.Seconds(),
		gib(b.one.rssBytes), gib(b.all.rssBytes), b.all.phases["stage"], b.one.verified, b.all.verified,
		maxRatio, verdict(ratio <= maxRatio), gib(backfillMaxRSS), verdict(b.all.rssBytes <= backfillMaxRSS))
	for _, m := range []measurement{b.one, b.all} {
		fmt.Fprintf(w, "\n%s: inspect %.2fs, stage %.2fs, gate %.2fs, pointer %.2fs, CPU %.2fs", m.name,
			m.phases["inspect"], m.phases["stage"], m.phases["gate"], m.phases["pointer"], m.cpu.Seconds())
	}
	fmt.Fprintln(w)
	if b.gen > 0 {
		fmt.Fprintf(w, "\ngeneration of the %d dates: %.1fs, %.2fs per million events\n", b.spec.dates, b.gen.Seconds(), b.gen.Seconds()/(float64(b.events)/1e6))
	}
	fmt.Fprintf(w, "\nprofile of the %d-date publish (the job's step records):\n", b.spec.dates)
	for _, s := range b.all.steps {
		fmt.Fprintf(w, "  %s\n", s)
	}
	if len(b.all.estimates) > 0 {
		fmt.Fprintf(w, "\nthe stage's time-left estimates (progress records every 5 s) against the time it then took:\n")
		for _, s := range b.all.estimates {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "\nload average at the end: %s; benchmark total %.1fs\n", strings.TrimSpace(string(load)), total.Seconds())
}

// timeLeft sets each "progress" record of the stage that carries an
// estimate (seconds_left) against the time the stage then took, read from
// its "phase" record's time.
func timeLeft(stderr []byte) []string {
	type rec struct {
		Time        time.Time `json:"time"`
		Msg         string    `json:"msg"`
		Phase       string    `json:"phase"`
		Seconds     float64   `json:"seconds"`
		DatesDone   int       `json:"dates_done"`
		DatesTotal  int       `json:"dates_total"`
		SecondsLeft *float64  `json:"seconds_left"`
	}
	var est []rec
	var end time.Time
	for _, l := range bytes.Split(stderr, []byte("\n")) {
		var r rec
		if json.Unmarshal(l, &r) != nil || r.Phase != "stage" {
			continue
		}
		switch {
		case r.Msg == "progress" && r.SecondsLeft != nil:
			est = append(est, r)
		case r.Msg == "phase":
			end = r.Time
		}
	}
	var out []string
	for _, r := range est {
		if end.IsZero() {
			break
		}
		out = append(out, fmt.Sprintf("at %.0fs, dates %d/%d: estimated %.0fs left, took %.1fs",
			r.Seconds, r.DatesDone, r.DatesTotal, *r.SecondsLeft, end.Sub(r.Time).Seconds()))
	}
	return out
}
