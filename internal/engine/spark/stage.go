package spark

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Stage implements engine.Engine.
func (e *Engine) Stage(ctx context.Context, spec engine.Spec, root, stagingDir string) (engine.Staged, error) {
	st := engine.Staged{
		Stage:          map[dates.Date]gate.StageFigures{},
		FactFiles:      map[dates.Date][]pointer.File{},
		CourseDayFiles: map[dates.Date][]pointer.File{},
	}
	spec, err := absSpec(spec)
	if err != nil {
		return st, err
	}
	if root, err = filepath.Abs(root); err != nil {
		return st, fmt.Errorf("warehouse %s: %w", root, err)
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
	w := writer{e: e, spec: spec, root: root, dates: withEvents}
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
	root  string
	dates []dates.Date
}

// write writes query (its last column is event_date) under relDir,
// partitioned by event_date, and returns the files per date.
//
// The file count comes from the bytes written, never from a shuffle
// partition count. The first pass measures: REBALANCE(event_date) lets AQE
// put a small date in one task (one file, the common case, done) and split
// a big one into advisory-size tasks written in parallel. A date that needs
// n > 1 files, or got more than one file, is written again, split by a
// hash of the table's grain into exactly n files: the second pass partitions by
// (event_date, _file) after REPARTITION(event_date, _file), so every
// (date, bucket) is written by one task into one file, and the bucket
// lives only in a directory name that is gone once the files are moved
// into the date's directory. The files are then renamed part-NNNNN.parquet
// and Spark's _SUCCESS and .crc files are removed.
func (w writer) write(ctx context.Context, relDir, query, splitKey string) (map[dates.Date][]pointer.File, error) {
	dir := warehouse.Abs(w.root, relDir)
	if err := w.ctas(ctx, dir, relDir, "event_date",
		"SELECT /*+ REBALANCE(event_date) */ * FROM ("+query+") t"); err != nil {
		return nil, err
	}
	split := map[dates.Date]int{}
	for _, d := range w.dates {
		files, err := dataFiles(dateDir(dir, d))
		if err != nil {
			return nil, err
		}
		var size int64
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				return nil, fmt.Errorf("stat staged %s: %w", f, err)
			}
			size += st.Size()
		}
		if n := engine.TargetFiles(size, w.spec.TargetFileBytes); n > 1 || len(files) != 1 {
			split[d] = n
		}
	}
	if len(split) > 0 {
		if err := w.split(ctx, dir, relDir, query, splitKey, split); err != nil {
			return nil, err
		}
	}
	if err := removeHidden(dir); err != nil {
		return nil, err
	}
	names := map[dates.Date][]string{}
	for _, d := range w.dates {
		n, err := rename(dateDir(dir, d))
		if err != nil {
			return nil, err
		}
		names[d] = n
	}
	// The rows of each file as Spark reads them back, in one scan of the
	// table's directory (which now holds only the renamed files).
	rows, err := w.e.rows(ctx, "count staged rows in "+relDir, fmt.Sprintf(
		`SELECT regexp_extract(_metadata.file_path, '([^/]+/[^/]+)$', 1), count(*) FROM %s GROUP BY 1`, pathRef(dir)))
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, r := range rows {
		name, _ := r.At(0).(string)
		if counts[name], err = asInt(r.At(1)); err != nil {
			return nil, err
		}
	}
	out := map[dates.Date][]pointer.File{}
	for _, d := range w.dates {
		for _, name := range names[d] {
			rel := "event_date=" + d.String() + "/" + name
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := warehouse.SyncFile(p); err != nil {
				return nil, err
			}
			st, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("stat staged %s: %w", p, err)
			}
			out[d] = append(out[d], pointer.File{Path: path.Join(relDir, rel), Bytes: st.Size(), Rows: counts[rel]})
		}
	}
	return out, syncDirs(dir)
}

// split rewrites the dates in n into n files each.
func (w writer) split(ctx context.Context, dir, relDir, query, splitKey string, n map[dates.Date]int) error {
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
	tmp := filepath.Join(dir, "_split")
	q := fmt.Sprintf(`SELECT /*+ REPARTITION(event_date, _file) */ *, pmod(hash(%s), CASE event_date %s END) AS _file
FROM (%s) t WHERE event_date IN (%s)`, splitKey, strings.Join(cases, " "), query, strings.Join(in, ", "))
	if err := w.ctas(ctx, tmp, relDir+"/_split", "event_date, _file", q); err != nil {
		return err
	}
	for _, d := range ds {
		old, err := dataFiles(dateDir(dir, d))
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("remove unsplit %s: %w", f, err)
			}
		}
		next := 0
		for i := 0; i < n[d]; i++ {
			files, err := dataFiles(filepath.Join(dateDir(tmp, d), fmt.Sprintf("_file=%d", i)))
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			if len(files) > 1 {
				return fmt.Errorf("split %s %s bucket %d: %d files, want one", relDir, d, i, len(files))
			}
			for _, f := range files {
				dst := filepath.Join(dateDir(dir, d), fmt.Sprintf("_split-%05d.parquet", next))
				if err := os.Rename(f, dst); err != nil {
					return fmt.Errorf("move split file %s: %w", f, err)
				}
				next++
			}
		}
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove %s: %w", tmp, err)
	}
	return nil
}

// ctas writes query to dir with CREATE TABLE … PARTITIONED BY … LOCATION,
// the SQL form of a partitioned write (spark-connect-go's writer has no
// partitionBy). The table is external and only a vehicle for the write: it
// is dropped at once, which leaves the files in place. Its name carries a
// hash of the job and the directory, so concurrent jobs on one server never
// share one.
func (w writer) ctas(ctx context.Context, dir, relDir, partitionBy, query string) error {
	h := fnv.New64a()
	h.Write([]byte(w.spec.JobID + "\x00" + relDir))
	name := fmt.Sprintf("engagement_stage_%016x", h.Sum64())
	drop := "DROP TABLE IF EXISTS " + name
	q := fmt.Sprintf("CREATE TABLE %s USING parquet OPTIONS (compression 'zstd') PARTITIONED BY (%s) LOCATION %s AS %s",
		name, partitionBy, quote(dir), query)
	if err := w.e.exec(ctx, "write staging "+relDir, q); err != nil {
		return err
	}
	return w.e.exec(ctx, "write staging "+relDir, drop)
}

// rename names a date's files part-NNNNN.parquet and drops Spark's
// checksum files; it returns the new names.
func rename(ddir string) ([]string, error) {
	if err := removeHidden(ddir); err != nil {
		return nil, err
	}
	files, err := dataFiles(ddir)
	if err != nil {
		return nil, err
	}
	var names []string
	for i, f := range files {
		name := fmt.Sprintf("part-%05d.parquet", i)
		if err := os.Rename(f, filepath.Join(ddir, name)); err != nil {
			return nil, fmt.Errorf("rename staged %s: %w", f, err)
		}
		names = append(names, name)
	}
	return names, nil
}

func dateDir(dir string, d dates.Date) string { return filepath.Join(dir, "event_date="+d.String()) }

// dataFiles lists the Parquet files Spark wrote in dir, sorted.
func dataFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, en := range entries {
		n := en.Name()
		if !en.IsDir() && strings.HasSuffix(n, ".parquet") && !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") ||
			strings.HasPrefix(n, "_split-") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// removeHidden deletes Spark's bookkeeping files (_SUCCESS, .*.crc) in dir.
func removeHidden(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, en := range entries {
		n := en.Name()
		if en.IsDir() || strings.HasPrefix(n, "_split-") {
			continue
		}
		if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("remove %s: %w", n, err)
			}
		}
	}
	return nil
}

// syncDirs fsyncs every directory from dir's date directories up to the
// staging root, so the new directory entries survive a crash as well as
// the files.
func syncDirs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if en.IsDir() {
			if err := warehouse.SyncFile(filepath.Join(dir, en.Name())); err != nil {
				return err
			}
		}
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := warehouse.SyncFile(d); err != nil {
			return err
		}
		if filepath.Base(d) == "staging" || filepath.Dir(d) == d {
			return nil
		}
	}
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
