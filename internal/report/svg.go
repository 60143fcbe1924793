package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The charts are SVG written here rather than drawn by script: the page
// needs no code to run, renders the same in any browser, and its figures
// can be read back from the markup (data-* attributes) by a test.

const (
	chartW                                   = 960.0
	chartH                                   = 330.0
	padLeft, padRight, padTop, padBottom     = 78.0, 24.0, 56.0, 64.0
	plotW                                    = chartW - padLeft - padRight
	plotH                                    = chartH - padTop - padBottom
	colorCurrent, colorEarlier, colorCap     = "#2b6cb0", "#2b6cb0", "#c53030"
	colorCourseDay, colorBand, colorRejected = "#dd6b20", "#c6f6d5", "#c53030"
)

// scale maps a value to a y pixel: linear from 0, or log10.
type scale struct {
	lo, hi float64
	log    bool
}

func (s scale) y(v float64) float64 {
	if s.log {
		v, lo, hi := math.Log10(math.Max(v, s.lo)), math.Log10(s.lo), math.Log10(s.hi)
		return padTop + plotH*(1-(v-lo)/(hi-lo))
	}
	return padTop + plotH*(1-(v-s.lo)/(s.hi-s.lo))
}

// chart is one SVG figure over categorical x (the dates).
type chart struct {
	id     string
	title  string
	cats   []string
	yTitle string
	y      scale
	b      strings.Builder
}

func newChart(id, title, yTitle string, cats []string, y scale) *chart {
	c := &chart{id: id, title: title, cats: cats, yTitle: yTitle, y: y}
	fmt.Fprintf(&c.b, `<svg class="chart" id="%s" role="img" aria-label="%s" viewBox="0 0 %g %g" width="%g" height="%g" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), esc(title), chartW, chartH, chartW, chartH)
	fmt.Fprintf(&c.b, `<title>%s</title>`, esc(title))
	return c
}

// slot is the x centre and width of category i.
func (c *chart) slot(i int) (cx, w float64) {
	w = plotW / float64(max(len(c.cats), 1))
	return padLeft + w*(float64(i)+0.5), w
}

// axes draws the grid, the y ticks (labelled by label), the x labels and
// the axis titles. Called first so marks draw over the grid.
func (c *chart) axes(ticks []float64, label func(float64) string) {
	for _, t := range ticks {
		y := c.y.y(t)
		fmt.Fprintf(&c.b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#e2e8f0"/>`, padLeft, padLeft+plotW, y, y)
		fmt.Fprintf(&c.b, `<text class="tick" x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle" font-size="12" fill="#4a5568">%s</text>`,
			padLeft-8, y, esc(label(t)))
	}
	fmt.Fprintf(&c.b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="#4a5568"/>`, padLeft, padLeft, padTop, padTop+plotH)
	fmt.Fprintf(&c.b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="#4a5568"/>`, padLeft, padLeft+plotW, padTop+plotH, padTop+plotH)
	// Label every k-th date so labels (about 70 px wide) never touch.
	_, w := c.slot(0)
	every := max(1, int(math.Ceil(84/w)))
	for i, cat := range c.cats {
		if i%every != 0 {
			continue
		}
		cx, _ := c.slot(i)
		fmt.Fprintf(&c.b, `<text class="xlabel" x="%.1f" y="%g" text-anchor="middle" font-size="12" fill="#2d3748">%s</text>`,
			cx, padTop+plotH+18, esc(cat))
	}
	fmt.Fprintf(&c.b, `<text x="%g" y="%g" text-anchor="middle" font-size="13" fill="#2d3748">event date</text>`,
		padLeft+plotW/2, chartH-14)
	fmt.Fprintf(&c.b, `<text x="%d" y="%g" text-anchor="middle" font-size="13" fill="#2d3748" transform="rotate(-90 %d %g)">%s</text>`,
		18, padTop+plotH/2, 18, padTop+plotH/2, esc(c.yTitle))
}

// legend draws the items left to right above the plot; each is a mark
// kind (bar, circle, dash, cross, square, band) with its colour.
func (c *chart) legend(items ...legendItem) {
	x := padLeft
	y := 24.0
	for _, it := range items {
		switch it.kind {
		case "bar":
			fmt.Fprintf(&c.b, `<rect x="%g" y="%g" width="14" height="14" fill="%s"/>`, x, y-7, it.color)
		case "circle":
			fmt.Fprintf(&c.b, `<circle cx="%g" cy="%g" r="5" fill="#fff" stroke="%s" stroke-width="2"/>`, x+7, y, it.color)
		case "dot":
			fmt.Fprintf(&c.b, `<circle cx="%g" cy="%g" r="5.5" fill="%s"/>`, x+7, y, it.color)
		case "dash":
			fmt.Fprintf(&c.b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`, x, x+22, y, y, it.color)
		case "cross":
			c.cross(x+7, y, it.color)
		case "square":
			fmt.Fprintf(&c.b, `<rect x="%g" y="%g" width="10" height="10" fill="%s"/>`, x+2, y-5, it.color)
		case "band":
			fmt.Fprintf(&c.b, `<rect x="%g" y="%g" width="22" height="14" fill="%s" stroke="#38a169"/>`, x, y-7, it.color)
		}
		fmt.Fprintf(&c.b, `<text class="legend" x="%g" y="%g" dominant-baseline="middle" font-size="12" fill="#2d3748">%s</text>`, x+28, y, esc(it.label))
		x += 28 + 7*float64(len(it.label)) + 24
	}
}

type legendItem struct{ kind, color, label string }

func (c *chart) cross(x, y float64, color string) {
	fmt.Fprintf(&c.b, `<path d="M%.1f %.1fl10 10m0 -10l-10 10" stroke="%s" stroke-width="2.5"/>`, x-5, y-5, color)
}

// empty writes a note in the plot when there is nothing to draw.
func (c *chart) empty(msg string) {
	fmt.Fprintf(&c.b, `<text x="%g" y="%g" text-anchor="middle" font-size="14" fill="#718096">%s</text>`,
		padLeft+plotW/2, padTop+plotH/2, esc(msg))
}

func (c *chart) html() template.HTML {
	return template.HTML(c.b.String() + "</svg>") //nolint:gosec // every value in it went through esc
}

func esc(s string) string { return html.EscapeString(s) }

// niceTicks are 0 and about five round steps up to at least hi.
func niceTicks(hi float64) []float64 { return ticksOf(hi, false) }

// countTicks are niceTicks for a count: whole steps only, so that no axis
// reads 0 0 1 2 2 over ticks 0, 0.5, 1, 1.5, 2.
func countTicks(hi float64) []float64 { return ticksOf(math.Max(hi, 5), true) }

func ticksOf(hi float64, whole bool) []float64 {
	if hi <= 0 {
		hi = 1
	}
	raw := hi / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if whole && m*mag != math.Trunc(m*mag) {
			continue
		}
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// Up to the first tick at or over hi: the axis ends there, and a top
	// tick below hi (9 over ticks of 2) drew the highest bar past it.
	n := int(math.Ceil(hi/step - 1e-9))
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks
}

// sizeTicks are powers of ten of KB, MB and GB from lo to hi (bytes).
func sizeTicks(lo, hi float64) []float64 {
	var ticks []float64
	for _, unit := range []float64{1 << 10, 1 << 20, 1 << 30} {
		for _, m := range []float64{1, 10, 100} {
			if v := unit * m; v >= lo && v <= hi && !(unit == 1<<30 && m > 1) {
				ticks = append(ticks, v)
			}
		}
	}
	return ticks
}

// Bytes writes a size in binary units, as the band (128-256 MB) is meant.
func Bytes(v float64) string {
	switch {
	case v >= 1<<30:
		return trim(v/(1<<30)) + " GB"
	case v >= 1<<20:
		return trim(v/(1<<20)) + " MB"
	case v >= 1<<10:
		return trim(v/(1<<10)) + " KB"
	}
	return trim(v) + " B"
}

// count writes an axis count short: 1.5M, 12.5M, 250k, 900. Its ticks
// are whole counts in steps of 1, 2, 2.5 or 5 of a power of ten, so every
// digit they have is shown (12.5M read 12M).
func count(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

func trim(v float64) string {
	if v >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// percent writes a rate as a percentage with as many decimals as the
// scale's step needs.
func percent(v float64) string {
	s := fmt.Sprintf("%.2f", v*100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}
