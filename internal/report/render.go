package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"time"

	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
)

//go:embed report.html.tmpl
var pageText string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	},
	"rate": func(v float64) string { return fmt.Sprintf("%.4f", v) },
	// A path or note the warehouse's name runs through: a bidi override in
	// it reversed the rest of the line, past its element.
	"text": gate.OneLine,
	// A pin, as the gate's tables show a key: a bidi override or a
	// trailing space in it made one pin read as another.
	"key":   gate.ShownKey,
	"pct":   percent,
	"bytes": func(v int64) string { return Bytes(float64(v)) },
	"op": func(c Change) string {
		if c.FromPointer {
			return "pointer.json, in no retained generation"
		}
		if c.Oldest && c.Generation > 1 {
			// Its parent expired: what it holds, not what it changed
			// (history marks it alike). Generation 1 has none: it made
			// every date it holds.
			return "oldest retained (earlier history expired)"
		}
		if c.AfterGap {
			// Its parent was removed by hand: likewise what it holds,
			// which may be an entry another operation made.
			return "after a gap (what it holds)"
		}
		switch c.Operation {
		case "":
			return "publish (format 1)"
		case pointer.OpRollback:
			// The job column names whose files the entry holds: the
			// rollback's own id is said here, or no row carried it.
			return fmt.Sprintf("rollback to %d by %s", c.SourceGeneration, c.UpdatedByJobID)
		}
		return c.Operation
	},
	"verdict": func(v string) string {
		switch v {
		case "fail":
			return "FAIL"
		case "":
			return "–"
		}
		return v
	},
	"detail": func(r Run, k CheckKey) string { return r.Checks[k].Detail },
}).Parse(pageText))

// view is what the template sees: the model and the charts drawn from it.
type view struct {
	Model
	Events, Rates, Sizes template.HTML
	BandLow, BandHigh    string
}

// Render writes the page for m.
func Render(w io.Writer, m Model) error {
	v := view{Model: m, Events: eventsChart(m), Rates: ratesChart(m), Sizes: sizesChart(m),
		BandLow: Bytes(BandLowBytes), BandHigh: Bytes(BandHighBytes)}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

func categories(m Model) []string {
	cats := make([]string, len(m.Dates))
	for i, d := range m.Dates {
		cats[i] = d.Date.String()
	}
	return cats
}

// eventsChart: per date, the current entry's event count as a bar and each
// earlier retained generation's as a circle.
func eventsChart(m Model) template.HTML {
	var hi float64
	for _, d := range m.Dates {
		for _, c := range d.Changes {
			hi = math.Max(hi, float64(c.EventCount))
		}
	}
	ticks := countTicks(hi)
	c := newChart("chart-events", "Events per date, by retained generation", "events", categories(m),
		scale{lo: 0, hi: ticks[len(ticks)-1]})
	c.axes(ticks, count)
	c.legend(legendItem{"bar", colorCurrent, "visible now"}, legendItem{"circle", colorEarlier, "earlier retained generation"})
	if len(m.Dates) == 0 {
		c.empty("no date published")
	}
	for i, d := range m.Dates {
		cx, w := c.slot(i)
		bw, ex := barBeside(w, d.Published)
		for j, ch := range d.Changes {
			v := float64(ch.EventCount)
			tip := fmt.Sprintf("%s, generation %d (job %s): %d events", d.Date, ch.Generation, ch.JobID, ch.EventCount)
			if j == 0 && d.Published {
				fmt.Fprintf(&c.b, `<rect class="bar current" data-date="%s" data-generation="%d" data-value="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					d.Date, ch.Generation, ch.EventCount, cx-bw/2, c.y.y(v), bw, c.y.y(0)-c.y.y(v), colorCurrent, esc(tip))
				continue
			}
			fmt.Fprintf(&c.b, `<circle class="earlier" data-date="%s" data-generation="%d" data-value="%d" cx="%.1f" cy="%.1f" r="5" fill="#fff" stroke="%s" stroke-width="2"><title>%s</title></circle>`,
				d.Date, ch.Generation, ch.EventCount, cx+ex, c.y.y(v), colorEarlier, esc(tip))
		}
	}
	return c.html()
}

// barBeside is the width of a date's bar and the x offset of the markers
// of earlier generations, drawn beside the bar rather than hidden on it.
func barBeside(slot float64, published bool) (bw, dx float64) {
	bw = math.Min(slot*0.5, 64)
	if !published {
		return bw, 0
	}
	return bw, bw/2 + 10
}

// ratesChart: per date, the unknown-lesson rate of the current entry (bar)
// and of earlier retained generations (circles), the cap the entry's gate
// used (dashed), and rejected attempts' rates (crosses).
func ratesChart(m Model) template.HTML {
	var hi float64
	for _, d := range m.Dates {
		for _, ch := range d.Changes {
			hi = math.Max(hi, math.Max(ch.UnknownLessonRate, ch.Cap))
		}
		for _, r := range d.Rejected {
			hi = math.Max(hi, math.Max(r.Rate, r.Cap))
		}
	}
	ticks := niceTicks(math.Max(hi*1.1, 0.01))
	c := newChart("chart-rates", "Unknown-lesson rate per date against the gate's cap", "unknown-lesson rate", categories(m),
		scale{lo: 0, hi: ticks[len(ticks)-1]})
	c.axes(ticks, percent)
	c.legend(legendItem{"bar", colorCurrent, "visible now"}, legendItem{"circle", colorEarlier, "earlier retained generation"},
		legendItem{"dash", colorCap, "cap (unknown_lesson_cap)"}, legendItem{"cross", colorRejected, "rejected attempt"})
	if len(m.Dates) == 0 {
		c.empty("no date published")
	}
	for i, d := range m.Dates {
		cx, w := c.slot(i)
		bw, ex := barBeside(w, d.Published)
		if len(d.Changes) > 0 && d.Changes[0].HasCap {
			y := c.y.y(d.Changes[0].Cap)
			fmt.Fprintf(&c.b, `<line class="cap" data-date="%s" data-value="%g" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>%s</title></line>`,
				d.Date, d.Changes[0].Cap, cx-w/2, cx+w/2, y, y, colorCap, esc(fmt.Sprintf("%s: cap %s", d.Date, percent(d.Changes[0].Cap))))
		}
		for j, ch := range d.Changes {
			v := ch.UnknownLessonRate
			tip := fmt.Sprintf("%s, generation %d (job %s): rate %s, cap %s", d.Date, ch.Generation, ch.JobID, percent(v), percent(ch.Cap))
			if !ch.HasCap {
				tip = fmt.Sprintf("%s, generation %d (job %s): rate %s, cap not known (its gate report is gone)", d.Date, ch.Generation, ch.JobID, percent(v))
			}
			if j == 0 && d.Published {
				fmt.Fprintf(&c.b, `<rect class="bar current" data-date="%s" data-generation="%d" data-value="%.6f" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					d.Date, ch.Generation, v, cx-bw/2, c.y.y(v), bw, c.y.y(0)-c.y.y(v), colorCurrent, esc(tip))
				continue
			}
			fmt.Fprintf(&c.b, `<circle class="earlier" data-date="%s" data-generation="%d" data-value="%.6f" cx="%.1f" cy="%.1f" r="5" fill="#fff" stroke="%s" stroke-width="2"><title>%s</title></circle>`,
				d.Date, ch.Generation, v, cx+ex, c.y.y(v), colorEarlier, esc(tip))
		}
		for _, r := range d.Rejected {
			// Rejected for another check (a course conflict), the rate may
			// be under the cap: say which it was.
			rel := "over"
			if r.Rate <= r.Cap {
				rel = "within"
			}
			tip := fmt.Sprintf("%s, rejected job %s: rate %s %s cap %s", d.Date, r.JobID, percent(r.Rate), rel, percent(r.Cap))
			fmt.Fprintf(&c.b, `<g class="rejected" data-date="%s" data-job="%s" data-value="%.6f"><title>%s</title>`, d.Date, esc(r.JobID), r.Rate, esc(tip))
			c.cross(cx-bw/2-12, c.y.y(r.Rate), colorRejected)
			c.b.WriteString(`</g>`)
		}
	}
	return c.html()
}

// sizesChart: every current file on a log scale of bytes, against the
// 128-256 MB band the engines aim at.
func sizesChart(m Model) template.HTML {
	lo, hi := float64(1<<10), float64(1<<30)
	for _, d := range m.Dates {
		for _, f := range d.Files {
			for float64(f.Bytes) < 2*lo && lo > 1 {
				lo /= 10
			}
			for float64(f.Bytes) > hi {
				hi *= 10
			}
		}
	}
	c := newChart("chart-sizes", "Current file sizes per date against the 128–256 MB band", "file size (log scale)", categories(m),
		scale{lo: lo, hi: hi, log: true})
	top, bottom := c.y.y(BandHighBytes), c.y.y(BandLowBytes)
	fmt.Fprintf(&c.b, `<rect class="band" x="%g" y="%.1f" width="%g" height="%.1f" fill="%s" stroke="#38a169" stroke-dasharray="3 3"/>`,
		padLeft, top, plotW, bottom-top, colorBand)
	// The label sits above the band, where the files in it cannot cover it.
	fmt.Fprintf(&c.b, `<text x="%g" y="%.1f" text-anchor="end" font-size="12" fill="#276749">target band %s–%s</text>`,
		padLeft+plotW-6, top-5, Bytes(BandLowBytes), Bytes(BandHighBytes))
	c.axes(sizeTicks(lo, hi), Bytes)
	c.legend(legendItem{"dot", colorCurrent, "fact_lesson_engagement file"}, legendItem{"square", colorCourseDay, "course_day file"},
		legendItem{"band", colorBand, "target 128–256 MB"})
	if len(m.Dates) == 0 {
		c.empty("no date published")
	}
	for i, d := range m.Dates {
		cx, w := c.slot(i)
		var nFact, nDay int
		for _, f := range d.Files {
			tip := fmt.Sprintf("%s %s: %s (%d bytes)", d.Date, f.Path, Bytes(float64(f.Bytes)), f.Bytes)
			y := c.y.y(float64(f.Bytes))
			if f.Table == "course_day" {
				x := cx + w*0.12 + float64(nDay%4)*5
				nDay++
				fmt.Fprintf(&c.b, `<rect class="file course_day" data-date="%s" data-bytes="%d" x="%.1f" y="%.1f" width="10" height="10" fill="%s"><title>%s</title></rect>`,
					d.Date, f.Bytes, x-5, y-5, colorCourseDay, esc(tip))
				continue
			}
			x := cx - w*0.12 - float64(nFact%4)*5
			nFact++
			fmt.Fprintf(&c.b, `<circle class="file fact" data-date="%s" data-bytes="%d" cx="%.1f" cy="%.1f" r="5.5" fill="%s"><title>%s</title></circle>`,
				d.Date, f.Bytes, x, y, colorCurrent, esc(tip))
		}
	}
	return c.html()
}
