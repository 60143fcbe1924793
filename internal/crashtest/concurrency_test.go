package crashtest

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// shifts is how many event dates the concurrency inputs hold.
const shifts = 8

// eightDates builds inputs with eight event dates from the committed
// fixture: raw holds eight copies of mon's events (its late event included)
// shifted by 0..7 days, event_time and ingest_date alike, with event ids
// made unique per copy. Lessons and enrollments are the fixture's, so every
// shifted date's true figures are mon's in expected.json by construction.
// The config widens the restatement horizon to the eight dates and judges
// freshness the morning after the newest ingest date.
func eightDates(t *testing.T, db *sql.DB) (*world, []string) {
	fx := publishtest.LoadFixture(t, "")
	dir := filepath.Join(t.TempDir(), "eight")
	for _, in := range []string{"lessons", "enrollments"} {
		if err := os.CopyFS(filepath.Join(dir, in), os.DirFS(filepath.Join(fx.Dir, in))); err != nil {
			t.Fatal(err)
		}
	}
	src := dates.MustParse(mon)
	parts, err := os.ReadDir(filepath.Join(fx.Dir, "raw"))
	if err != nil {
		t.Fatal(err)
	}
	var newest dates.Date
	for _, part := range parts {
		ingest := dates.MustParse(strings.TrimPrefix(part.Name(), "ingest_date="))
		from := fmt.Sprintf(`FROM read_parquet('%s/*.parquet', hive_partitioning=false)
			WHERE CAST(timezone('UTC', CAST(event_time AS TIMESTAMPTZ)) AS DATE) = DATE '%s'`, filepath.Join(fx.Dir, "raw", part.Name()), src)
		var n int64
		if err := db.QueryRow("SELECT count(*) " + from).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		for k := range shifts {
			out := filepath.Join(dir, "raw", "ingest_date="+ingest.AddDays(k).String())
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			q := fmt.Sprintf(`COPY (SELECT event_id || '-shift%[1]d' AS event_id, learner_key, lesson_id, course_id,
				event_time + INTERVAL %[1]d DAY AS event_time %[2]s) TO '%[3]s/part-shift%[1]d.parquet' (FORMAT parquet)`, k, from, out)
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			newest = max(newest, ingest.AddDays(k))
		}
	}
	fx8 := publishtest.Fixture{Dir: dir, Expected: fx.Expected}
	w := newWorld(t, fx8, db)
	w.truth = func(dates.Date) dates.Date { return src }

	conf, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	// A key given twice: the later line wins.
	conf = fmt.Appendf(conf, "\nengagement.restatementHorizonDays %d\nengagement.asOfDate %s\n", int(newest-src)+1, newest.AddDays(1))
	w.config = filepath.Join(t.TempDir(), "eight.conf")
	if err := os.WriteFile(w.config, conf, 0o644); err != nil {
		t.Fatal(err)
	}

	var ds []string
	for k := range shifts {
		ds = append(ds, src.AddDays(k).String())
	}
	// The build, checked without the product: each date holds mon's events.
	var counts []int64
	rows, err := db.Query(fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s/raw/*/*.parquet', hive_partitioning=false)
		GROUP BY CAST(timezone('UTC', CAST(event_time AS TIMESTAMPTZ)) AS DATE) ORDER BY 1`, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
	}
	if want := slices.Repeat([]int64{fx.Expected.ByDate[src].Events}, shifts); !slices.Equal(counts, want) {
		t.Fatalf("shifted inputs hold %v events per date, want %v", counts, want)
	}
	return w, ds
}

// race runs one real publish process per (job id, dates) at once and fails
// the test unless every one exits 0.
func (w *world) race(jobs map[string][]string) {
	w.t.Helper()
	publishtest.Binary(w.t) // built once, before the goroutines
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]string{}
	var spans [][2]time.Time
	for id, ds := range jobs {
		wg.Go(func() {
			start := time.Now()
			code, _, stderr, _ := w.run(nil, id, ds, 0)
			end := time.Now()
			mu.Lock()
			defer mu.Unlock()
			spans = append(spans, [2]time.Time{start, end})
			if code != 0 {
				failed[id] = fmt.Sprintf("exit %d: %s", code, lastLine(stderr))
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		w.t.Fatalf("concurrent publishers failed: %v", failed)
	}
	// A race only tests something if the processes overlapped.
	peak := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o[0].After(s[0]) && o[1].After(s[0]) {
				n++
			}
		}
		peak = max(peak, n)
	}
	w.t.Logf("%d publishers, at most %d running at once", len(jobs), peak)
	if peak < 2 {
		w.t.Fatalf("the %d publishers ran one after another; nothing raced", len(jobs))
	}
}

// checkChain checks the history generations from+1..to written by a race:
// each is one job of jobs (each job exactly once), names that job for its
// dates, keeps every other date's entry of the generation before it, and
// drops no date: a linear chain of supersets, no lost update, no mix.
func (w *world) checkChain(from, to int64, jobs map[string][]string) []string {
	hist, bad := w.history()
	seen := map[string]int{}
	for g := from + 1; g <= to; g++ {
		prev, okPrev := hist[g-1]
		cur, ok := hist[g]
		if !ok || (!okPrev && g-1 > 0) {
			bad = append(bad, fmt.Sprintf("history generation %d or %d missing", g-1, g))
			continue
		}
		mine, ok := jobs[cur.UpdatedByJobID]
		if !ok {
			bad = append(bad, fmt.Sprintf("generation %d by %s, not one of the racing jobs", g, cur.UpdatedByJobID))
			continue
		}
		seen[cur.UpdatedByJobID]++
		for d := range prev.Dates {
			if _, ok := cur.Dates[d]; !ok {
				bad = append(bad, fmt.Sprintf("generation %d dropped %s", g, d))
			}
		}
		for d, e := range cur.Dates {
			switch {
			case slices.Contains(mine, d.String()):
				if e.JobID != cur.UpdatedByJobID {
					bad = append(bad, fmt.Sprintf("generation %d by %s: %s names %s", g, cur.UpdatedByJobID, d, e.JobID))
				}
			case !reflect.DeepEqual(e, prev.Dates[d]):
				bad = append(bad, fmt.Sprintf("generation %d by %s changed %s, which it did not publish", g, cur.UpdatedByJobID, d))
			}
		}
	}
	for id := range jobs {
		if seen[id] != 1 {
			bad = append(bad, fmt.Sprintf("%s wrote %d generations, want exactly 1", id, seen[id]))
		}
	}
	return bad
}

// TestConcurrentPublishers races real publisher processes on one
// warehouse: eight on eight different dates must all become visible with
// one generation each; four on one date must leave that date naming exactly
// one of them, whole and gated, never a mix of two jobs.
func TestConcurrentPublishers(t *testing.T) {
	db := publishtest.DB(t)
	w, all := eightDates(t, db)
	if _, bad := w.publish("base", all); len(bad) > 0 {
		t.Fatalf("baseline publish: %v", bad)
	}
	report := func(t *testing.T, what string, bad []string) {
		t.Helper()
		for _, b := range bad {
			t.Errorf("%s: %s", what, b)
		}
	}

	t.Run("EightDates", func(t *testing.T) {
		w.t = t
		before := w.snapshot()
		jobs := map[string][]string{}
		for _, ds := range all {
			jobs[w.newID("date-"+ds)] = []string{ds}
		}
		w.race(jobs)
		p, _, err := w.pointer()
		if err != nil {
			t.Fatal(err)
		}
		if p.Generation != before.ptr.Generation+shifts {
			t.Errorf("generation %d, want %d + %d", p.Generation, before.ptr.Generation, shifts)
		}
		for id, ds := range jobs {
			if got := p.Dates[dates.MustParse(ds[0])].JobID; got != id {
				t.Errorf("%s names %s, want %s: an update was lost", ds[0], got, id)
			}
		}
		if len(p.Dates) != shifts {
			t.Errorf("pointer has %d dates, want %d", len(p.Dates), shifts)
		}
		report(t, "readers", w.checkReaders(p))
		report(t, "history", w.checkChain(before.ptr.Generation, p.Generation, jobs))
	})

	t.Run("FourOnOneDate", func(t *testing.T) {
		w.t = t
		for round := range 3 {
			day := all[round*3] // a different date each round
			before := w.snapshot()
			jobs := map[string][]string{}
			for range 4 {
				jobs[w.newID("same-"+day)] = []string{day}
			}
			w.race(jobs)
			p, _, err := w.pointer()
			if err != nil {
				t.Fatal(err)
			}
			if p.Generation != before.ptr.Generation+4 {
				t.Errorf("round %d: generation %d, want %d + 4", round, p.Generation, before.ptr.Generation)
			}
			winner := p.Dates[dates.MustParse(day)].JobID
			if _, ok := jobs[winner]; !ok || p.UpdatedByJobID != winner {
				t.Errorf("round %d: %s names %s (pointer updated by %s), want one of %v", round, day, winner, p.UpdatedByJobID, keys(jobs))
			}
			for d, e := range before.ptr.Dates {
				if d.String() != day && !reflect.DeepEqual(p.Dates[d], e) {
					t.Errorf("round %d: %s changed although only %s was published", round, d, day)
				}
			}
			// Every listed file under the winner's prefix, its gate passed,
			// every visible row carrying its job id, the figures the truth.
			report(t, fmt.Sprintf("round %d readers", round), w.checkReaders(p))
			report(t, fmt.Sprintf("round %d history", round), w.checkChain(before.ptr.Generation, p.Generation, jobs))
		}
	})
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
