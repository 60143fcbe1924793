package spark

import (
	"context"
	"fmt"
	"hash/fnv"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Stage implements engine.Engine.
func (e *Engine) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, stagingDir string) (engine.Staged, error) {
	st := engine.Staged{
		Stage:          map[dates.Date]gate.StageFigures{},
		FactFiles:      map[dates.Date][]pointer.File{},
		CourseDayFiles: map[dates.Date][]pointer.File{},
	}
	spec, err := absSpec(spec)
	if err != nil {
		return st, err
	}
	events, err := e.rawSource(ctx, spec)
	if err != nil {
		return st, err
	}
	// The input count is a separate scan of raw on purpose: the silent-drop
	// check must not be derived from the output it audits.
	if err := e.byDate(ctx, "count input events",
		"SELECT CAST(event_date AS STRING), count(*) FROM ("+events+") GROUP BY event_date",
		func(d dates.Date, n []int64) {
			f := st.Stage[d]
			f.InputEvents = n[0]
			st.Stage[d] = f
		}); err != nil {
		return st, err
	}

	// CACHE TABLE is eager: the joins and the aggregate run once here, and
	// the audit counts and both writes read the cached fact grain.
	if err := e.exec(ctx, "build fact_lesson_engagement", fmt.Sprintf("CACHE TABLE %s AS %s", factView, factQuery(spec, events))); err != nil {
		return st, err
	}
	defer e.exec(context.WithoutCancel(ctx), "uncache fact_lesson_engagement", "UNCACHE TABLE IF EXISTS "+factView)

	if err := e.byDate(ctx, "count course conflicts", fmt.Sprintf(
		`SELECT CAST(event_date AS STRING), CAST(sum(manifest_course_conflicts) AS BIGINT), count_if(course_conflict)
		 FROM %s GROUP BY event_date`, factView),
		func(d dates.Date, n []int64) {
			f := st.Stage[d]
			f.ManifestCourseConflicts, f.FactRowCourseConflicts = n[0], n[1]
			st.Stage[d] = f
		}); err != nil {
		return st, err
	}

	var withEvents []dates.Date
	for _, d := range spec.Dates {
		if st.Stage[d].InputEvents > 0 {
			withEvents = append(withEvents, d)
		}
	}
	if len(withEvents) == 0 {
		return st, nil
	}
	w := writer{e: e, spec: spec, wh: wh, dates: withEvents}
	if st.FactFiles, err = w.write(ctx, path.Join(stagingDir, engine.FactTable),
		"SELECT "+factColumns(spec)+" FROM "+factView, "learner_key, lesson_id"); err != nil {
		return st, err
	}
	failpoint.Hit(failpoint.MidStaging)
	if st.CourseDayFiles, err = w.write(ctx, path.Join(stagingDir, engine.CourseDayTable),
		courseDayQuery(spec), "course_id"); err != nil {
		return st, err
	}
	return st, nil
}

// writer writes one table's staging for the dates that have events.
type writer struct {
	e     *Engine
	spec  engine.Spec
	wh    storage.Bucket
	dates []dates.Date
}

// write writes query (its last column is event_date) under relDir,
// partitioned by event_date, and returns the files per date.
//
// The file count comes from the bytes written, never from a shuffle
// partition count. The first pass measures: REBALANCE(event_date) lets AQE
// put a small date in one task (one file, the common case, done) and split
// a big one into advisory-size tasks written in parallel. A date that needs
// n > 1 files, or got more than one file, is written again under
// <relDir>/split, split by a hash of the table's grain into exactly n
// files: the second pass partitions by (event_date, split_part) after
// REPARTITION(event_date, split_part), so every (date, part) is written by
// one task into one file, and its first-pass files are deleted. The
// finished files keep Spark's names and are found by listing (Spark's
// _SUCCESS and .crc files, hidden by their names, are not data); nothing is
// renamed.
func (w writer) write(ctx context.Context, relDir, query, splitKey string) (map[dates.Date][]pointer.File, error) {
	if err := w.ctas(ctx, relDir, relDir, "event_date",
		"SELECT /*+ REBALANCE(event_date) */ * FROM ("+query+") t"); err != nil {
		return nil, err
	}
	first, err := w.dataFiles(ctx, relDir)
	if err != nil {
		return nil, err
	}
	split := map[dates.Date]int{}
	for _, d := range w.dates {
		if n := engine.SplitInto(first[d], w.spec.TargetFileBytes); n > 0 {
			split[d] = n
		}
	}
	files := first
	if len(split) > 0 {
		splitDir := relDir + "/split"
		if err := w.split(ctx, splitDir, query, splitKey, split); err != nil {
			return nil, err
		}
		again, err := w.dataFiles(ctx, splitDir)
		if err != nil {
			return nil, err
		}
		for d, n := range split {
			if len(again[d]) != n {
				return nil, fmt.Errorf("split %s %s: %d files, want %d", relDir, d, len(again[d]), n)
			}
			for _, o := range first[d] {
				if err := w.wh.Delete(ctx, o.Key); err != nil {
					return nil, err
				}
			}
			files[d] = again[d]
		}
	}
	// Durable before anything names them, and listed as they are now.
	if _, err := w.wh.Seal(ctx, relDir+"/"); err != nil {
		return nil, err
	}
	return w.withRows(ctx, relDir, files)
}

// dataFiles lists the Parquet files Spark wrote under dir, by the date
// directory they are in, sorted. Spark's bookkeeping (_SUCCESS, and the
// .crc checksums its local filesystem keeps beside each file, which would
// refuse a file rewritten by anyone else) is deleted: the staged files are
// plain Parquet, judged by the gate on their bytes alone.
func (w writer) dataFiles(ctx context.Context, dir string) (map[dates.Date][]storage.Object, error) {
	objs, err := w.wh.List(ctx, dir+"/")
	if err != nil {
		return nil, err
	}
	out := map[dates.Date][]storage.Object{}
	for _, o := range objs {
		elems := strings.Split(strings.TrimPrefix(o.Key, dir+"/"), "/")
		if inputs.Hidden(elems[len(elems)-1]) {
			if err := w.wh.Delete(ctx, o.Key); err != nil {
				return nil, err
			}
			continue
		}
		ds, ok := strings.CutPrefix(elems[0], "event_date=")
		if !ok || len(elems) < 2 {
			continue // another pass's directory
		}
		d, err := dates.Parse(ds)
		if err != nil {
			return nil, fmt.Errorf("staged %s: %w", o.Key, err)
		}
		out[d] = append(out[d], o)
	}
	return out, nil
}

// withRows counts the rows of each staged file as Spark reads it back, in
// one query over exactly those files.
func (w writer) withRows(ctx context.Context, relDir string, files map[dates.Date][]storage.Object) (map[dates.Date][]pointer.File, error) {
	var parts []string
	for _, d := range w.dates {
		for _, o := range files[d] {
			parts = append(parts, fmt.Sprintf("SELECT %s AS f, count(*) AS n FROM %s", quote(o.Key), pathRef(w.uri(o.Key))))
		}
	}
	rows, err := w.e.rows(ctx, "count staged rows in "+relDir, strings.Join(parts, "\nUNION ALL\n"))
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, r := range rows {
		key, _ := r.At(0).(string)
		if counts[key], err = asInt(r.At(1)); err != nil {
			return nil, err
		}
	}
	out := map[dates.Date][]pointer.File{}
	for _, d := range w.dates {
		for _, o := range files[d] {
			out[d] = append(out[d], pointer.File{Path: o.Key, Bytes: o.Size, Rows: counts[o.Key]})
		}
	}
	return out, nil
}

// uri is where Spark reads or writes key: an absolute local path (the
// server resolves a relative one against its own directory).
func (w writer) uri(key string) string {
	u := w.wh.Location().Join(key).String()
	if !w.wh.Location().IsS3() {
		if a, err := filepath.Abs(u); err == nil {
			return a
		}
	}
	return u
}

// split writes the dates in n into n files each under dir.
func (w writer) split(ctx context.Context, dir, query, splitKey string, n map[dates.Date]int) error {
	var cases, in []string
	var ds []dates.Date
	for d := range n {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	for _, d := range ds {
		cases = append(cases, fmt.Sprintf("WHEN DATE %s THEN %d", quote(d.String()), n[d]))
		in = append(in, "DATE "+quote(d.String()))
	}
	q := fmt.Sprintf(`SELECT /*+ REPARTITION(event_date, split_part) */ *, pmod(hash(%s), CASE event_date %s END) AS split_part
FROM (%s) t WHERE event_date IN (%s)`, splitKey, strings.Join(cases, " "), query, strings.Join(in, ", "))
	return w.ctas(ctx, dir, dir, "event_date, split_part", q)
}

// ctas writes query under the warehouse directory dir with CREATE TABLE …
// PARTITIONED BY … LOCATION, the SQL form of a partitioned write
// (spark-connect-go's writer has no partitionBy). The table is external
// and only a vehicle for the write: it is dropped at once, which leaves the
// files in place. Its name carries a hash of the job and the directory, so
// concurrent jobs on one server never share one.
func (w writer) ctas(ctx context.Context, dir, what, partitionBy, query string) error {
	if _, err := w.wh.WriteURI(ctx, dir); err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(w.spec.JobID + "\x00" + dir))
	name := fmt.Sprintf("engagement_stage_%016x", h.Sum64())
	drop := "DROP TABLE IF EXISTS " + name
	q := fmt.Sprintf("CREATE TABLE %s USING parquet OPTIONS (compression 'zstd') PARTITIONED BY (%s) LOCATION %s AS %s",
		name, partitionBy, quote(w.uri(dir)), query)
	if err := w.e.exec(ctx, "write staging "+what, q); err != nil {
		return err
	}
	return w.e.exec(ctx, "write staging "+what, drop)
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
