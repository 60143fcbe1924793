package job

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// TestHorizonEndsYesterday: the horizon counts back from the newest ingest
// date that has ended, never today's, which is still being written. A
// daily run at 06:00 restating all H dates before it then restates each
// date once more after its last lateness partition has ended.
func TestHorizonEndsYesterday(t *testing.T) {
	today := dates.MustParse("2026-03-10")
	day := func(n int) dates.Date { return today.AddDays(n) }
	span := func(from, to int) []dates.Date {
		var out []dates.Date
		for n := from; n <= to; n++ {
			out = append(out, day(n))
		}
		return out
	}
	tests := []struct {
		name    string
		landed  []dates.Date
		horizon int
		dates   []dates.Date
		refused string // "" when the dates are inside
		code    int    // the refusal's exit code: usage unless given
	}{
		// Counted from today's open partition, the horizon would be
		// today-1..today and the oldest date refused.
		{"today landed: the H dates before it", span(-5, 0), 2, span(-2, -1), "", 0},
		{"today landed: production's three", span(-5, 0), 3, span(-3, -1), "", 0},
		{"today landed: one past", span(-5, 0), 2, span(-3, -1), "[2026-03-07] outside the restatement horizon 2026-03-08..2026-03-09 (newest ended ingest_date 2026-03-09: today's is still being written", 0},
		{"yesterday newest", span(-5, -1), 2, span(-2, -1), "", 0},
		{"yesterday newest: one past", span(-5, -1), 2, span(-3, -1), "[2026-03-07] outside the restatement horizon 2026-03-08..2026-03-09 (newest ingest_date 2026-03-09,", 0},
		// Not outside: not landed yet, which a retry may cure (it was exit
		// 2, and the DAG failed fast on a late ingestion).
		{"a date after the newest", span(-5, -2), 2, span(-2, -1), "ingest_date=2026-03-09 has not landed", exitcode.Error},
		{"a date after the newest, one before the horizon", span(-5, -2), 2, span(-4, -1), "[2026-03-06] outside the restatement horizon 2026-03-07..2026-03-08", 0},
		// Only partitions dated after today: a date not over is the
		// command's mistake first (review CT: it became exit 1, "nothing
		// has landed yet", when freshness was judged on every refusal).
		{"not over, only future partitions", span(1, 2), 2, span(0, 0), "[2026-03-10] not over", 0},
		{"over, only future partitions", span(1, 2), 2, span(-1, -1), "nothing has landed yet", exitcode.Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := config.Job{Raw: "raw", Dates: tc.dates, RestatementHorizonDays: tc.horizon}
			_, _, err := checkDates(job, tc.landed, today, slog.New(slog.DiscardHandler))
			code := tc.code
			if code == 0 {
				code = exitcode.Usage
			}
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("accepted; want %q", tc.refused)
			case tc.refused != "" && (!strings.Contains(err.Error(), tc.refused) || exitcode.Code(err) != code):
				t.Fatalf("refused with %v (exit %d); want exit %d with %q", err, exitcode.Code(err), code, tc.refused)
			}
		})
	}
}

// TestAsOfAfterToday: an as-of date after today (UTC) cannot make a day be
// over; the run date is today, and the run says so rather than replace the
// date without a word. One before today is the run date, unwarned.
func TestAsOfAfterToday(t *testing.T) {
	today := dates.MustParse("2026-03-10")
	for _, tc := range []struct {
		asOf   string
		run    string
		warned bool
	}{
		{"2030-01-01", "2026-03-10", true},
		{"2026-03-08", "2026-03-08", false},
		{"2026-03-10", "2026-03-10", false},
	} {
		t.Run(tc.asOf, func(t *testing.T) {
			var logs bytes.Buffer
			job := config.Job{Raw: "raw", Dates: []dates.Date{today.AddDays(-3)}, RestatementHorizonDays: 3,
				AsOf: dates.MustParse(tc.asOf), AsOfSet: true}
			run, _, err := checkDates(job, []dates.Date{today.AddDays(-4), today.AddDays(-3), today.AddDays(-2)}, today, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if run.String() != tc.run {
				t.Errorf("run date %s, want %s", run, tc.run)
			}
			if warned := strings.Contains(logs.String(), "the as-of date is after today"); warned != tc.warned {
				t.Errorf("warned %v, want %v: %s", warned, tc.warned, logs.String())
			}
		})
	}
}

// TestStaleBeforeNotLanded: when yesterday's partition has not landed
// because ingestion stopped, the answer is stale raw (exit 1, ingestion's
// page), not the missing partition nor, as it was, the horizon (exit 2).
func TestStaleBeforeNotLanded(t *testing.T) {
	now := time.Date(2026, 3, 10, 6, 0, 0, 0, time.UTC)
	today := dates.FromTime(now)
	job := config.Job{Raw: "raw", Dates: []dates.Date{today.AddDays(-2), today.AddDays(-1)}, RestatementHorizonDays: 3, FreshnessMaxDays: 1}
	landed := []dates.Date{today.AddDays(-4), today.AddDays(-3)}
	err := DatesRefused(job, landed, now)
	if err == nil || exitcode.Code(err) != exitcode.Error || !strings.Contains(err.Error(), "stale") {
		t.Errorf("ingestion two days behind: %v (exit %d), want stale raw, exit 1", err, exitcode.Code(err))
	}
	job.FreshnessMaxDays = 5
	err = DatesRefused(job, landed, now)
	if err == nil || exitcode.Code(err) != exitcode.Error || !strings.Contains(err.Error(), "ingest_date=2026-03-08, ingest_date=2026-03-09 has not landed") {
		t.Errorf("within freshness: %v (exit %d), want both not landed, exit 1", err, exitcode.Code(err))
	}
}

// TestWindowEndsByYesterday: the read window stops at yesterday, whose
// partition has ended, and never before the last requested date.
func TestWindowEndsByYesterday(t *testing.T) {
	today := dates.MustParse("2026-03-10")
	for _, tc := range []struct {
		name     string
		last     dates.Date
		lateness int
		want     dates.Date
	}{
		{"the DAG's yesterday: today's partition left out", today.AddDays(-1), 2, today.AddDays(-1)},
		{"an older date: its lateness window whole", today.AddDays(-5), 2, today.AddDays(-3)},
		{"lateness up to yesterday", today.AddDays(-3), 2, today.AddDays(-1)},
		{"no lateness", today.AddDays(-1), 0, today.AddDays(-1)},
	} {
		spec := Spec(config.Job{Dates: []dates.Date{tc.last.AddDays(-1), tc.last}, LatenessDays: tc.lateness}, today)
		if spec.IngestFrom != tc.last.AddDays(-1) || spec.IngestTo != tc.want {
			t.Errorf("%s: window %s..%s, want %s..%s", tc.name, spec.IngestFrom, spec.IngestTo, tc.last.AddDays(-1), tc.want)
		}
	}
}

// TestWarnUnsettled: a date outside the horizon whose last publish did not
// read every partition of its lateness window that raw holds now is warned
// of, naming what it missed: one whose run was missed, one missed twice,
// one read across an ingestion gap since filled, and one left so long ago
// that it is past any horizon's length. Not warned of: a date whose publish
// read its window, one whose publish ran with a smaller lateness and read
// that window, one the run restates, one whose lateness partitions raw no
// longer holds, and one whose attempt record is gone.
func TestWarnUnsettled(t *testing.T) {
	dir := t.TempDir()
	loc, err := storage.Parse(dir)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := open.Warehouse(t.Context(), loc, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := dates.MustParse
	type record struct {
		read     []string // the ingest partitions of the raw files it listed
		lateness *int     // nil: a record older than the field
	}
	zero, two := 0, 2
	records := map[string]record{
		"restated":     {[]string{"2026-11-19", "2026-11-20", "2026-11-21"}, &two},
		"missed":       {[]string{"2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21"}, &two},
		"settled":      {[]string{"2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21"}, &two},
		"twice-missed": {[]string{"2026-11-17", "2026-11-18", "2026-11-19"}, &two},
		"own-lateness": {[]string{"2026-11-17"}, &zero},
		"gap":          {[]string{"2026-11-16", "2026-11-18"}, nil},
		"long-ago":     {[]string{"2026-11-15", "2026-11-16"}, &two},
		"old":          {[]string{"2026-11-10", "2026-11-11"}, &two},
	}
	for id, r := range records {
		// As a real record is: the window asked for reaches further than
		// what had landed, and the landed partitions include the run day's
		// open one, which the window left out; the raw files read are the
		// window's.
		var raw []map[string]string
		for _, g := range r.read {
			raw = append(raw, map[string]string{"path": "raw/ingest_date=" + g + "/part-0.parquet", "ingest_date": g})
		}
		rec := map[string]any{"job_id": id, "ingest_to": "2026-11-25", "inputs": map[string]any{
			"ingest_dates": append(r.read, d(r.read[len(r.read)-1]).AddDays(1).String()), "raw": raw}}
		if r.lateness != nil {
			rec["lateness_days"] = *r.lateness
		}
		b, _ := json.Marshal(rec)
		if err := os.MkdirAll(filepath.Join(dir, "staging", "job_id="+id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, warehouse.AttemptPath(id)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := pointer.Pointer{Dates: map[dates.Date]pointer.DateEntry{
		d("2026-11-21"): {JobID: "restated"},     // in this run's dates
		d("2026-11-20"): {JobID: "missed"},       // needs 11-22, read 11-21
		d("2026-11-19"): {JobID: "settled"},      // needs 11-21, read it
		d("2026-11-18"): {JobID: "twice-missed"}, // needs 11-20, read 11-19
		d("2026-11-17"): {JobID: "own-lateness"}, // ran with lateness 0
		d("2026-11-16"): {JobID: "gap"},          // 11-17 had not landed (today's lateness)
		d("2026-11-15"): {JobID: "long-ago"},     // needs 11-17, two horizons back
		d("2026-11-14"): {JobID: "no-record"},
		d("2026-11-10"): {JobID: "old"}, // raw no longer holds 11-10..11-12
	}}
	var landed []dates.Date
	for g := d("2026-11-14"); g <= d("2026-11-24"); g = g.AddDays(1) {
		landed = append(landed, g)
	}
	// This run's listing of raw: every landed partition holds the file
	// the records name.
	listed := func() map[dates.Date]inputs.Partition {
		l := map[dates.Date]inputs.Partition{}
		for _, g := range landed {
			l[g] = inputs.Partition{Files: []inputs.File{{Path: "raw/ingest_date=" + g.String() + "/part-0.parquet"}}}
		}
		return l
	}
	with := func(g string, edit func(*inputs.Partition)) map[dates.Date]inputs.Partition {
		l := listed()
		p := l[d(g)]
		edit(&p)
		l[d(g)] = p
		return l
	}
	var logs bytes.Buffer
	p := &Publisher{Warehouse: wh, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	job := config.Job{Dates: []dates.Date{d("2026-11-21"), d("2026-11-22"), d("2026-11-23")}, RestatementHorizonDays: 3, LatenessDays: 2}
	got := p.warnUnsettled(t.Context(), job, base, landed, d("2026-11-24"), listed())
	if want := []dates.Date{d("2026-11-15"), d("2026-11-16"), d("2026-11-18"), d("2026-11-20")}; !slices.Equal(got, want) {
		t.Errorf("returned %v, want %v", got, want)
	}
	for _, want := range []string{
		"2026-11-15 (job long-ago did not read ingest_date 2026-11-17)",
		"2026-11-16 (job gap did not read ingest_date 2026-11-17)",
		"2026-11-18 (job twice-missed did not read ingest_date 2026-11-20)",
		"2026-11-20 (job missed did not read ingest_date 2026-11-22)",
		"--allow-outside-horizon"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in\n%s", want, logs.String())
		}
	}
	for _, not := range []string{"job settled", "job restated", "job own-lateness", "job old", "no-record"} {
		if strings.Contains(logs.String(), not) {
			t.Errorf("%q warned of:\n%s", not, logs.String())
		}
	}
	// Every date read through its last lateness partition: no warning.
	logs.Reset()
	for _, u := range got {
		delete(base.Dates, u)
	}
	if got := p.warnUnsettled(t.Context(), job, base, landed, d("2026-11-24"), listed()); logs.Len() != 0 || got != nil {
		t.Errorf("warned with every date settled (returned %v):\n%s", got, logs.String())
	}
	// A partition the publish read and this run lists again has changed
	// since: a late flush added a file of 11-19's late events to 11-21
	// after job settled read it. Unsettled, naming the file; as is a
	// rewritten one (not a removed one: its events were counted, and raw's
	// retention removes old files); and in a partition older than this run's
	// window too (11-17, which own-lateness read for 11-17): the warning
	// stays until the date is restated.
	for _, tc := range []struct {
		name string
		l    map[dates.Date]inputs.Partition
		want string
		day  string
	}{
		{"added", with("2026-11-21", func(p *inputs.Partition) {
			p.Files = append(p.Files, inputs.File{Path: "raw/ingest_date=2026-11-21/part-1.parquet", Bytes: 7})
		}), "2026-11-19 (job settled read ingest_date 2026-11-21 before it changed: part-1.parquet added)", "2026-11-19"},
		{"rewritten", with("2026-11-21", func(p *inputs.Partition) { p.Files[0].Bytes = 9 }),
			"2026-11-19 (job settled read ingest_date 2026-11-21 before it changed: part-0.parquet rewritten (its size or write time changed))", "2026-11-19"},
		{"replaced", with("2026-11-21", func(p *inputs.Partition) {
			p.Files = []inputs.File{{Path: "raw/ingest_date=2026-11-21/part-2.parquet"}}
		}), "2026-11-19 (job settled read ingest_date 2026-11-21 before it changed: part-2.parquet added)", "2026-11-19"},
		{"an old partition", with("2026-11-17", func(p *inputs.Partition) {
			p.Files = append(p.Files, inputs.File{Path: "raw/ingest_date=2026-11-17/part-9.parquet"})
		}), "2026-11-17 (job own-lateness read ingest_date 2026-11-17 before it changed: part-9.parquet added)", "2026-11-17"},
		// A flush written as a directory, or a copy left in flight: not
		// judged outside the window, so they were dropped with no word
		// (review CL); the restatement will refuse them until moved.
		{"a nested directory", with("2026-11-21", func(p *inputs.Partition) { p.Unreadable = []string{"hour=23/"} }),
			"2026-11-19 (job settled read ingest_date 2026-11-21 before it changed: hour=23/ added, which a restatement refuses until it is moved", "2026-11-19"},
		{"a copy in flight", with("2026-11-17", func(p *inputs.Partition) { p.Unreadable = []string{"part-1.parquet._COPYING_"} }),
			"2026-11-17 (job own-lateness read ingest_date 2026-11-17 before it changed: part-1.parquet._COPYING_ added, which a restatement refuses", "2026-11-17"},
	} {
		logs.Reset()
		if got := p.warnUnsettled(t.Context(), job, base, landed, d("2026-11-24"), tc.l); !slices.Equal(got, []dates.Date{d(tc.day)}) || !strings.Contains(logs.String(), tc.want) {
			t.Errorf("%s: returned %v, want [%s] and %q in\n%s", tc.name, got, tc.day, tc.want, logs.String())
		}
	}
	// A partition no publish read that holds only a directory: not landed
	// (no data file), so 11-20's missed partition was not warned of at all
	// (review CM).
	logs.Reset()
	base.Dates[d("2026-11-20")] = pointer.DateEntry{JobID: "missed"}
	only := listed()
	only[d("2026-11-22")] = inputs.Partition{Unreadable: []string{"hour=00/"}}
	notLanded := slices.DeleteFunc(slices.Clone(landed), func(g dates.Date) bool { return g == d("2026-11-22") })
	want := "2026-11-20 (job missed did not read ingest_date 2026-11-22, which holds only hour=00/: a restatement refuses it until it is moved)"
	if got := p.warnUnsettled(t.Context(), job, base, notLanded, d("2026-11-24"), only); !slices.Equal(got, []dates.Date{d("2026-11-20")}) || !strings.Contains(logs.String(), want) {
		t.Errorf("a partition of only a directory: returned %v, want [2026-11-20] and %q in\n%s", got, want, logs.String())
	}
	delete(base.Dates, d("2026-11-20"))
	// Files removed since (raw's retention, a file at a time): no warning.
	logs.Reset()
	gone := listed()
	gone[d("2026-11-21")], gone[d("2026-11-17")] = inputs.Partition{}, inputs.Partition{}
	if got := p.warnUnsettled(t.Context(), job, base, landed, d("2026-11-24"), gone); got != nil || logs.Len() != 0 {
		t.Errorf("files removed since: returned %v, want no warning:\n%s", got, logs.String())
	}
	// The same files through another spelling of the raw root (a link)
	// and with another version (cp -a keeps size and time, not the inode):
	// nothing changed.
	same := listed()
	for g := range same {
		same[g].Files[0].Path = "/mnt/raw-link/ingest_date=" + g.String() + "/part-0.parquet"
		same[g].Files[0].Version = "another-inode"
	}
	logs.Reset()
	if got := p.warnUnsettled(t.Context(), job, base, landed, d("2026-11-24"), same); got != nil || logs.Len() != 0 {
		t.Errorf("the same files by another root and version: returned %v, want no warning:\n%s", got, logs.String())
	}
}
