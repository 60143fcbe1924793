package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// TestRenderManyDates draws a production-sized model (60 dates, files in
// and over the band, a rollback, a date only in history) and checks what a
// person needs of it: every SVG is well-formed XML, each published date
// has its bar in both charts, the x labels thin out so they cannot overlap,
// and a file over the band sits above it. ENGAGEMENT_REPORT_DUMP=FILE
// writes the page for a look.
func TestRenderManyDates(t *testing.T) {
	const n = 60
	at := time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)
	// A bidi override in the warehouse's name (a path may hold one) must
	// not reverse the rest of the line, past its element.
	m := Model{Warehouse: "s3://curated/engagement\u202e-x", Generation: 70, UpdatedBy: "nightly-70", WrittenAt: at}
	first := dates.MustParse("2026-01-01")
	for i := range n {
		d := first.AddDays(i)
		ch := func(g int64, events int64, op string) Change {
			return Change{Change: history.Change{Generation: g, WrittenAt: at.Add(time.Duration(g) * time.Hour), Operation: op,
				UpdatedByJobID: fmt.Sprintf("nightly-%d", g), Date: d, JobID: fmt.Sprintf("nightly-%d", g),
				ManifestID: "dim-1", EnrollmentSnapshotID: "enr-1", EventCount: events,
				UnknownLessonRate: 0.004 + float64(i%7)/1000}, Cap: 0.02, HasCap: true}
		}
		dd := Date{Date: d, Published: i != n-1, Changes: []Change{ch(int64(10+i), int64(1_000_000+i*5000), pointer.OpPublish)}}
		if i%10 == 0 {
			dd.Changes = append(dd.Changes, ch(int64(5+i), int64(900_000+i*5000), pointer.OpPublish))
		}
		if i == 3 {
			dd.Changes[0].Operation, dd.Changes[0].SourceGeneration = pointer.OpRollback, 2
			dd.Changes[0].UpdatedByJobID, dd.Changes[0].JobID = "rollback-0305", "nightly-2"
		}
		if i == 4 {
			// The oldest retained generation, its parent expired: it shows
			// what it holds, not a change it made (the rollback's row was
			// shown as a rollback of a date it never touched).
			dd.Changes[0].Operation, dd.Changes[0].SourceGeneration, dd.Changes[0].Oldest = pointer.OpRollback, 1, true
		}
		if i == 6 {
			// After a gap (its parent removed by hand): what it holds, not
			// a publish of an entry another job made.
			dd.Changes[0].AfterGap = true
		}
		if i == 8 {
			// A pin with a bidi override read as dim-2026-03-04 in the
			// lineage table; and one with a trailing space as the plain one.
			dd.Changes[0].ManifestID, dd.Changes[0].EnrollmentSnapshotID = "\u202e40-30-6202-mid", "enr-2026-03-04 "
		}
		if i == 11 {
			// Its gate report gone: no cap, not a 0% one the rate is over.
			dd.Changes[0].Cap, dd.Changes[0].HasCap = 0, false
		}
		if i == 12 {
			// A real cap of 0 (--unknown-cap 0): shown, not taken for none.
			dd.Changes[0].Cap = 0
		}
		if dd.Published {
			dd.Files = []File{{Table: "fact_lesson_engagement", Path: "f1", Bytes: 190 << 20}, {Table: "course_day", Path: "c1", Bytes: 40 << 10}}
			if i == 5 {
				dd.Files = append(dd.Files, File{Table: "fact_lesson_engagement", Path: "f2", Bytes: 400 << 20})
			}
		}
		if i == 7 {
			// The second rejected for another check, under the cap.
			dd.Rejected = []RejectedRate{{JobID: "bad", Rate: 0.031, Cap: 0.02}, {JobID: "conflict", Rate: 0.0103, Cap: 0.02}}
		}
		m.Dates = append(m.Dates, dd)
	}
	m.Runs = []Run{{JobID: "bad", At: at, Rejected: true, Partial: true,
		Checks: map[CheckKey]gate.Check{{gate.CheckUnknownLessonCap, "2026-01-08"}: {Name: gate.CheckUnknownLessonCap, Date: "2026-01-08", Detail: "rate 0.0310, cap 0.0200"}}}}
	m.Checks = checkRows(m.Runs)
	m.Expiries = []history.Expiry{{Generations: []int64{1, 2, 3}, At: at, Reason: "retain-generations 60"},
		{RecordJobIDs: []string{"cap-bad", "sig-1"}, At: at, Reason: "records and staging named by no retained generation"}}
	var b bytes.Buffer
	if err := Render(&b, m); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.ContainsRune(page, '\u202e') || !strings.Contains(page, `s3://curated/engagement\u202e-x`) {
		t.Error("the warehouse's or a pin's bidi override reached the page as itself, not as its escape")
	}
	if !strings.Contains(page, `<code>\u202e40-30-6202-mid</code>`) || !strings.Contains(page, `<code>&#34;enr-2026-03-04 &#34;</code>`) {
		t.Error("the lineage table does not show the pins escaped and quoted")
	}
	if p := os.Getenv("ENGAGEMENT_REPORT_DUMP"); p != "" {
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The last date is only in history: not one readers see.
	for _, want := range []string{"rejected job bad: rate 3.1% over cap 2%", "rejected job conflict: rate 1.03% within cap 2%", fmt.Sprintf("%d dates published.", n-1)} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 3 {
		t.Fatalf("%d charts, want 3", len(svgs))
	}
	for _, svg := range svgs {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Errorf("chart is not well-formed: %v", err)
				}
				break
			}
		}
		if labels := strings.Count(svg, `class="xlabel"`); labels > 14 || labels < 10 {
			t.Errorf("%d x labels for %d dates, want 10 to 14", labels, n)
		}
	}
	for _, chart := range svgs[:2] {
		if bars := strings.Count(chart, `class="bar current"`); bars != n-1 {
			t.Errorf("%d bars, want %d (every published date)", bars, n-1)
		}
		if earlier := strings.Count(chart, `class="earlier"`); earlier != n/10+1 {
			t.Errorf("%d earlier marks, want %d", earlier, n/10+1)
		}
	}
	// A cap not known is said so; a cap of 0 is drawn and listed (review CN).
	if !strings.Contains(page, "2026-01-12, generation 21 (job nightly-21): rate 0.8%, cap not known (its gate report is gone)") || strings.Contains(page, "2026-01-12: cap") {
		t.Errorf("the date without a gate report shows a cap")
	}
	if !regexp.MustCompile(`<line class="cap" data-date="2026-01-13" data-value="0"`).MatchString(page) ||
		!strings.Contains(page, `<td class="num">1060000</td><td class="num">0.0090</td><td class="num">0.0000</td>`) {
		t.Errorf("the cap of 0 is not drawn and listed")
	}
	// The rollback's own job id is on its row, beside the job whose files
	// the entry holds.
	if !regexp.MustCompile(`<td>rollback to 2 by rollback-0305</td><td><code>nightly-2</code></td>`).MatchString(page) {
		t.Errorf("the lineage lacks the rollback and its job id")
	}
	for _, want := range []string{"generations 1-3 expired at 2026-03-04T06:00:00Z by gc (retain-generations 60)",
		"the records or staging of jobs cap-bad, sig-1 deleted at 2026-03-04T06:00:00Z"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks the expiry %q", want)
		}
	}
	if !regexp.MustCompile(`data-date="2026-01-05" data-generation="14"><td>2026-01-05</td><td class="num">14</td><td>[^<]*</td><td>oldest retained \(earlier history expired\)</td>`).MatchString(page) {
		t.Errorf("the oldest retained generation's row is not marked so")
	}
	if !regexp.MustCompile(`data-date="2026-01-07" data-generation="16"><td>2026-01-07</td><td class="num">16</td><td>[^<]*</td><td>after a gap \(what it holds\)</td>`).MatchString(page) {
		t.Errorf("the row after a gap is not marked so")
	}
	over := regexp.MustCompile(`data-bytes="419430400" cx="[0-9.]+" cy="([0-9.]+)"`).FindStringSubmatch(svgs[2])
	band := regexp.MustCompile(`class="band" x="[0-9.]+" y="([0-9.]+)"`).FindStringSubmatch(svgs[2])
	if over == nil || band == nil || !(atof(over[1]) < atof(band[1])) {
		t.Errorf("the 400 MB file is not drawn above the band (file %v, band %v)", over, band)
	}
}

func atof(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// TestCountAxisLabels: an events axis ticks whole counts, reaches the
// highest count (its top tick is at or over it) and labels each tick with
// every digit it has, from a date of two events to the design volume.
func TestCountAxisLabels(t *testing.T) {
	for _, tc := range []struct {
		hi   float64
		want string
	}{
		{0, "0 1 2 3 4 5"},
		{2, "0 1 2 3 4 5"},
		{9, "0 2 4 6 8 10"},
		{12, "0 5 10 15"},
		{60e6, "0 20M 40M 60M"},
		{62e6, "0 20M 40M 60M 80M"},
		{11e6, "0 2.5M 5M 7.5M 10M 12.5M"},
	} {
		var got []string
		for _, v := range countTicks(tc.hi) {
			got = append(got, count(v))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("events up to %.0f: axis %q, want %q", tc.hi, s, tc.want)
		}
	}
}
