package spark

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Stage implements engine.Engine: the shared driver (engine.RunStage)
// decides the order and the files; runner runs Spark's SQL.
func (e *Engine) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, stagingDir string) (engine.Staged, error) {
	spec, err := absSpec(spec)
	if err != nil {
		return engine.Staged{}, err
	}
	events, err := e.rawSource(ctx, spec)
	if err != nil {
		return engine.Staged{}, err
	}
	r := runner{e: e, events: events, probe: &taskProbe{why: "the fact grain was not built"}, factStarted: newLatch()}
	st, err := engine.RunStage(ctx, r, spec, wh, stagingDir, e.progress)
	st.Tasks, st.TasksUnavailable = r.probe.tasks, r.probe.why
	return st, e.namedDamage(ctx, spec, e.whereNotUTF8(ctx, spec, err))
}

// runner is the Spark side of engine.Runner. It writes a table's dates in
// one partitioned write.
type runner struct {
	e      *Engine
	events string     // the raw relation over exactly the listed files
	probe  *taskProbe // the enrollment join stage's tasks, read after BuildFacts
	// factStarted opens once the fact write's first job runs: course_day's
	// write, run beside it (OverlapsWrites), waits for it, so that Spark's
	// FIFO scheduler ranks the fact write, the longer, first.
	factStarted *latch
}

// latch is a gate opened once.
type latch struct {
	once sync.Once
	open chan struct{}
}

func newLatch() *latch    { return &latch{open: make(chan struct{})} }
func (l *latch) release() { l.once.Do(func() { close(l.open) }) }
func (l *latch) wait(ctx context.Context) error {
	select {
	case <-l.open:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// BuildFacts implements engine.Runner. CACHE TABLE is eager: the joins and
// the aggregate run once here, and every date's figures (one aggregate) and
// both writes read the cached fact grain. The grain is built unmerged
// (factQuery) and built again merged (mergedFactQuery) only when its
// figures show a suspect (factFigures).
func (r runner) BuildFacts(ctx context.Context, spec engine.Spec) (map[dates.Date]engine.DateFigures, func(), error) {
	release := func() {
		r.e.exec(context.WithoutCancel(ctx), "uncache fact_lesson_engagement", "UNCACHE TABLE IF EXISTS "+factView)
	}
	probe := r.e.startProbe(ctx)
	err := r.e.exec(ctx, "build fact_lesson_engagement", fmt.Sprintf("CACHE TABLE %s AS %s", factView, factQuery(spec, r.events)))
	if err == nil {
		probe.finish(ctx)
	}
	*r.probe = *probe
	if err != nil {
		return nil, release, err
	}
	figs, suspects, err := r.e.factFigures(ctx)
	if err != nil || suspects == 0 {
		return figs, release, err
	}
	// CACHE TABLE … AS will not replace a view, so the view goes too. It
	// is uncached first: a view that keeps its analyzed plan (defaults)
	// leaves its cache behind when dropped, on the server, for any later
	// plan alike to read.
	for _, q := range []string{"UNCACHE TABLE IF EXISTS " + factView, "DROP VIEW IF EXISTS " + factView} {
		if err := r.e.exec(ctx, "merge conflict rows", q); err != nil {
			return nil, release, err
		}
	}
	if err := r.e.exec(ctx, "merge conflict rows", fmt.Sprintf("CACHE TABLE %s AS %s", factView, mergedFactQuery(spec, r.events))); err != nil {
		return nil, release, err
	}
	r.e.merges++
	figs, _, err = r.e.factFigures(ctx)
	return figs, release, err
}

// factFigures counts each date's figures of the cached grain, and the
// suspects of a fact row left split over courses by factQuery. A fact row
// of several courses is several rows there, one a course, and its events'
// course ids are non-null and differ, or some are null. So one of its rows
// has a null course_id, or it has a pinned course (the lesson's manifest
// course), which at least one of its rows' courses differs from, counted
// in manifest_course_conflicts, or, unpinned (an unknown lesson, a null
// manifest course), its key repeats among the unpinned rows. The sum of
// those three counts is the suspects: none, and every fact row is one row
// of the grain, which is then exact.
func (e *Engine) factFigures(ctx context.Context) (map[dates.Date]engine.DateFigures, int64, error) {
	out := map[dates.Date]engine.DateFigures{}
	var suspects int64
	err := e.byDate(ctx, "count course conflicts", fmt.Sprintf(
		`SELECT CAST(event_date AS STRING), CAST(sum(manifest_course_conflicts) AS BIGINT), count_if(course_conflict),
		 count(*), CAST(sum(octet_length(learner_key) + octet_length(lesson_id) + coalesce(octet_length(course_id), 0)) AS BIGINT),
		 count(DISTINCT course_id), count_if(course_id IS NULL),
		 (SELECT count(*) FROM (SELECT 1 FROM %[1]s WHERE NOT course_pinned GROUP BY learner_key, lesson_id, event_date HAVING count(*) > 1) r)
		 FROM %[1]s GROUP BY event_date`, factView),
		func(d dates.Date, n []int64) {
			out[d] = engine.DateFigures{ManifestCourseConflicts: n[0], FactRowCourseConflicts: n[1], FactRows: n[2], FactWidth: n[3], Courses: n[4]}
			suspects += n[0] + n[5] + n[6]
		})
	return out, suspects, err
}

// OverlapsWrites implements engine.Overlapper: the fact write is a task a
// date (on the design day three tasks on two cores, the last alone for
// half the write), and course_day's aggregate takes the idle core. Spark's
// scheduler gives the fact write's tasks their cores first (FIFO by job).
func (runner) OverlapsWrites() bool { return true }

// Write implements engine.Runner in one partitioned write of every date,
// so no date is done before the others (the driver counts them when Write
// returns).
// When no date is split, REPARTITION(event_date) gives each date one task,
// so one file. Otherwise every date goes under splitDir, partitioned by
// (event_date, split_part) after REPARTITION(event_date, split_part), so
// every (date, part) is written by one task into one file; a date of one
// part is part 0. Spark's bookkeeping files are hidden by their names and
// deleted by the driver; Spark's file names are kept.
//
// The fact rows are repartitioned as the cache holds them, before
// factRows adds the title and the constant columns.
func (r runner) Write(ctx context.Context, spec engine.Spec, table string, n map[dates.Date]int, dir, splitDir engine.Dir, _ func(dates.Date)) error {
	var cases, in []string
	var ds []dates.Date
	split := false
	for d, parts := range n {
		ds = append(ds, d)
		split = split || parts > 1
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	for _, d := range ds {
		cases = append(cases, fmt.Sprintf("WHEN DATE %s THEN %d", quote(d.String()), n[d]))
		in = append(in, "DATE "+quote(d.String()))
	}
	hint, part, cols, uri, what := "REPARTITION(event_date)", "", "event_date", dir.URI, table
	if split {
		hint, cols, uri, what = "REPARTITION(event_date, split_part)", "event_date, split_part", splitDir.URI, table+" (split)"
		part = fmt.Sprintf(", pmod(hash(%s), CASE event_date %s END) AS split_part", engine.GrainKey[table], strings.Join(cases, " "))
	}
	repartitioned := func(src string) string {
		return fmt.Sprintf("SELECT /*+ %s */ *%s FROM %s WHERE event_date IN (%s)", hint, part, src, strings.Join(in, ", "))
	}
	if table != engine.FactTable {
		if err := r.factStarted.wait(ctx); err != nil {
			return err
		}
		return r.ctas(ctx, spec, uri, what, cols, repartitioned("("+courseDayQuery(spec)+") t"))
	}
	defer r.factStarted.release()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	watch := r.e.jobStarted(wctx, r.factStarted.release)
	go watch()
	tail := ""
	if split {
		tail = ", f.split_part"
	}
	return r.ctas(ctx, spec, uri, what, cols, factRows(spec, repartitioned(factView), tail))
}

// ctas writes query under the directory uri with CREATE TABLE …
// PARTITIONED BY … LOCATION, the SQL form of a partitioned write
// (spark-connect-go's writer has no partitionBy). The table is external
// and only a vehicle for the write: it is dropped at once, which leaves the
// files in place. Its name carries a hash of the job and the directory, so
// concurrent jobs on one server never share one.
func (r runner) ctas(ctx context.Context, spec engine.Spec, uri, what, partitionBy, query string) error {
	uri, err := serverPath(uri)
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(spec.JobID + "\x00" + uri))
	name := fmt.Sprintf("engagement_stage_%016x", h.Sum64())
	q := fmt.Sprintf("CREATE TABLE %s USING parquet OPTIONS (compression 'zstd') PARTITIONED BY (%s) LOCATION %s AS %s",
		name, partitionBy, quote(uri), query)
	if err := r.e.exec(ctx, "write staging "+what, q); err != nil {
		return err
	}
	return r.e.exec(ctx, "write staging "+what, "DROP TABLE IF EXISTS "+name)
}

// byDate runs a query whose first column is a date (as a string) and whose
// other columns are counts, and hands each row to fn.
func (e *Engine) byDate(ctx context.Context, what, q string, fn func(dates.Date, []int64)) error {
	rows, err := e.rows(ctx, what, q)
	if err != nil {
		return err
	}
	for _, r := range rows {
		s, _ := r.At(0).(string)
		d, err := dates.Parse(s)
		if err != nil {
			return fmt.Errorf("%s: date %v: %w", what, r.At(0), err)
		}
		n := make([]int64, r.Len()-1)
		for i := range n {
			if n[i], err = asInt(r.At(i + 1)); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		fn(d, n)
	}
	return nil
}
