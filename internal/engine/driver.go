package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Runner is what an engine brings to the staging driver (RunStage): its SQL
// dialect and its way of running it. The driver decides the order of the
// steps, which files are written where, when a date is split, and which
// files are staged; no engine lists, splits or finalizes files itself.
type Runner interface {
	// BuildFacts computes the fact grain with both joins once, for the
	// conflict counts and both tables' writes, and each date's figures of
	// it (the audit counts and what sizes the files); release frees it,
	// and is not nil when err is.
	BuildFacts(ctx context.Context, spec Spec) (figs map[dates.Date]DateFigures, release func(), err error)
	// Write writes table's rows of each date d of n once: into one file
	// under dir/event_date=<d>/ when n[d] is 1, else split by a hash of the
	// table's grain (GrainKey) into n[d] parts, part i under
	// splitDir/event_date=<d>/split_part=<i>/, one file each (none for an
	// empty part). splitDir is prepared only when some n[d] exceeds 1.
	// Write calls written(d) as soon as date d's files are complete, when
	// it writes the dates one by one; an engine that writes every date in
	// one statement need not call it: the driver counts every date done
	// when Write returns.
	Write(ctx context.Context, spec Spec, table string, n map[dates.Date]int, dir, splitDir Dir, written func(dates.Date)) error
}

// Overlapper is a Runner whose engine runs two statements at once on
// shared cores (Spark: a session's statements are jobs of one scheduler).
// The driver then writes course_day while the fact table is written: the
// fact write is a task a date, so a day of fewer dates than cores (or an
// odd number on two) leaves cores idle that course_day's aggregate fills.
// Both Writes may then run at once, and call written from two goroutines.
type Overlapper interface {
	OverlapsWrites() bool
}

// DateFigures are one date's figures of the built fact grain.
type DateFigures struct {
	// ManifestCourseConflicts are the events whose course_id differs from
	// the manifest's; FactRowCourseConflicts the fact rows whose events
	// disagree on course_id.
	ManifestCourseConflicts, FactRowCourseConflicts int64
	// FactRows, FactWidth (the summed byte lengths of learner_key,
	// lesson_id and course_id) and Courses size both tables' files before
	// they are written (PlannedFiles).
	FactRows, FactWidth, Courses int64
}

// Fixed widths of what FactWidth leaves out: per fact row, two timestamps,
// the event count and the enrolled flag; per course_day row, five counts.
// The other columns are one value per file or per lesson, which Parquet's
// dictionary stores once.
const factFixedWidth, courseDayRowWidth = 8 + 8 + 8 + 1, 48

// parquetShrink is how many times smaller a table's zstd Parquet bytes are
// than its plain widths (measured 2.8 on the design day, whose keys are
// regular): keys that shrink less (random or hashed ones) write fewer,
// larger files than planned, up to twice the target (measured with SHA-256
// and base64 learner keys), which the file layout monitor warns of above
// 4/3 of the target; keys that shrink much more (long, repetitive ones)
// write more, smaller files than the bytes need, which it pages on, since
// nothing is measured before the one write.
const parquetShrink = 3

// PlannedFiles is the number of files each table's date is written into,
// from the aggregate's figures, before anything is written: a date is
// written once, split by its grain when its estimated bytes exceed the
// target (TargetFiles), into no more files than it has rows and at most
// MaxFilesPerDate. A target of a few bytes (a typo for 192MB) asked for a
// file per row or more, and DuckDB writes each part with its own COPY over
// the date's rows: a run that never ended.
func PlannedFiles(table string, f DateFigures, targetBytes int64) int {
	rows := f.FactRows
	if table == CourseDayTable {
		rows = f.Courses
	}
	return max(1, min(TargetFiles(PlannedBytes(table, f), targetBytes), int(min(rows, MaxFilesPerDate))))
}

// MaxFilesPerDate bounds the files of one table's date: 1,000 files at the
// 192 MB default are 190 GB, far past a design day's 20 GB.
const MaxFilesPerDate = 1000

// PlannedBytes is the estimate PlannedFiles makes of the Parquet bytes of
// table's date with figures f.
func PlannedBytes(table string, f DateFigures) int64 {
	width := f.FactWidth + factFixedWidth*f.FactRows
	if table == CourseDayTable {
		width = courseDayRowWidth * f.Courses
	}
	return width / parquetShrink
}

// Dir is a warehouse directory an engine writes into: URI names it (as the
// bucket gives it: a local path or an s3:// URL), and Sub prepares a
// directory below it (rel, slash-separated) for an engine that names each
// file itself, returning its URI. An engine that writes a partitioned
// directory (Spark) needs only URI.
type Dir struct {
	URI string
	Sub func(rel string) (string, error)
}

// ErrNotInspected is Stage called with a spec whose InputEvents Inspect
// did not fill.
var ErrNotInspected = errors.New("stage: the spec carries no input counts: run Inspect first and pass its Events as Spec.InputEvents")

// GrainKey is the split key of each table: its grain without the date.
var GrainKey = map[string]string{FactTable: "learner_key, lesson_id", CourseDayTable: "course_id"}

// RunStage stages both tables for spec under stagingDir of the warehouse
// through r: the fact grain, the conflict counts, then each table for the
// dates that have events (fact first; the mid-staging failpoint sits
// between the tables). The input counts are Inspect's (spec.InputEvents):
// counted in its scan of raw, never derived from the output they audit.
// Each written date is reported to p (Reporter.Dates; nil reports nothing).
func RunStage(ctx context.Context, r Runner, spec Spec, wh storage.Bucket, stagingDir string, p progress.Reporter) (Staged, error) {
	st := Staged{
		Stage:          map[dates.Date]gate.StageFigures{},
		FactFiles:      map[dates.Date][]pointer.File{},
		CourseDayFiles: map[dates.Date][]pointer.File{},
	}
	if spec.InputEvents == nil {
		// A nil map is a caller that skipped Inspect, not a day without
		// events: staging without the counts would publish unaudited.
		return st, ErrNotInspected
	}
	for d, n := range spec.InputEvents {
		f := st.Stage[d]
		f.InputEvents = n
		st.Stage[d] = f
	}
	figs, release, err := r.BuildFacts(ctx, spec)
	defer release()
	if err != nil {
		return st, err
	}
	for d, n := range figs {
		f := st.Stage[d]
		f.ManifestCourseConflicts, f.FactRowCourseConflicts = n.ManifestCourseConflicts, n.FactRowCourseConflicts
		st.Stage[d] = f
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
	if p == nil {
		p = progress.Discard
	}
	t := tableStager{r: r, spec: spec, wh: wh, dates: withEvents, figs: figs, progress: newDateProgress(p, len(spec.Dates), withEvents, figs)}
	factDir, courseDayDir := path.Join(stagingDir, FactTable), path.Join(stagingDir, CourseDayTable)
	if o, ok := r.(Overlapper); ok && o.OverlapsWrites() {
		st.FactFiles, st.CourseDayFiles, err = t.stageBoth(ctx, factDir, courseDayDir)
		return st, err
	}
	if st.FactFiles, err = t.stage(ctx, FactTable, factDir); err != nil {
		return st, err
	}
	failpoint.HitCtx(ctx, failpoint.MidStaging)
	if st.CourseDayFiles, err = t.stage(ctx, CourseDayTable, courseDayDir); err != nil {
		return st, err
	}
	return st, nil
}

// stageBoth stages course_day while the fact table is staged (Overlapper).
// The mid-staging failpoint is where it is without the overlap: the fact
// table staged, course_day not (yet) complete. A failure of either write
// cancels the other, and the first error is returned.
func (t tableStager) stageBoth(ctx context.Context, factDir, courseDayDir string) (fact, courseDay map[dates.Date][]pointer.File, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		var err error
		courseDay, err = t.stage(ctx, CourseDayTable, courseDayDir)
		if err != nil {
			cancel(err)
		}
		done <- err
	}()
	fact, err = t.stage(ctx, FactTable, factDir)
	if err != nil {
		cancel(err)
		<-done
		// The write that failed first is the one to report, not the
		// other's cancellation.
		return nil, nil, context.Cause(ctx)
	}
	failpoint.HitCtx(ctx, failpoint.MidStaging)
	if err := <-done; err != nil {
		return nil, nil, err
	}
	return fact, courseDay, nil
}

type tableStager struct {
	r        Runner
	spec     Spec
	wh       storage.Bucket
	dates    []dates.Date
	figs     map[dates.Date]DateFigures
	progress *dateProgress
}

// dateProgress counts the requested dates finished (both tables written; a
// date without events has nothing to write and is finished from the start)
// and the share of the writes done, for the time-left estimate. The
// aggregate before the writes is done once for all dates, so the estimate's
// clock starts after it (the first report, share 0).
//
// Each table's write of a date weighs the date's fact rows, which both
// writes read, times the table's writeCost.
type dateProgress struct {
	mu              sync.Mutex // written is called by both writes at once (Overlapper)
	p               progress.Reporter
	finished, total int
	pending         map[tableDate]bool
	rows            map[dates.Date]float64
	done, all       float64
	// rowsWritten are the rows the writes have written: a date's fact rows
	// and its courses (course_day's rows), as each table's write ends.
	rowsWritten int64
	tableRows   map[tableDate]int64
}

type tableDate struct {
	table string
	d     dates.Date
}

// writeCost is a table's write time per fact row of its date, relative to
// the fact table's: course_day writes few rows but aggregates all of the
// date's. DuckDB's profile (benchmark run 13): on the 60M design day a fact
// date 1.8 to 2.2 s, a course_day date 1.2 to 1.4 s; on the ten-date
// backfill the fact batches 87 s, the course_day batches 53 s. At 0.4, set
// when a fact date took 2.3 to 2.5 s, the backfill's time left ran 20 to
// 27 s short.
var writeCost = map[string]float64{FactTable: 1, CourseDayTable: 0.6}

func newDateProgress(p progress.Reporter, requested int, withEvents []dates.Date, figs map[dates.Date]DateFigures) *dateProgress {
	dp := &dateProgress{p: p, finished: requested - len(withEvents), total: requested,
		pending: map[tableDate]bool{}, rows: map[dates.Date]float64{}, tableRows: map[tableDate]int64{}}
	for _, d := range withEvents {
		dp.rows[d] = float64(max(1, figs[d].FactRows))
		dp.tableRows[tableDate{FactTable, d}] = figs[d].FactRows
		dp.tableRows[tableDate{CourseDayTable, d}] = figs[d].Courses
		for table, cost := range writeCost {
			dp.pending[tableDate{table, d}] = true
			dp.all += cost * dp.rows[d]
		}
	}
	p.Dates(dp.finished, dp.total, 0, 0)
	return dp
}

// written records that table's date d is written; a repeated report is
// ignored.
func (dp *dateProgress) written(table string, d dates.Date) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	k := tableDate{table, d}
	if !dp.pending[k] {
		return
	}
	delete(dp.pending, k)
	dp.done += writeCost[table] * dp.rows[d]
	dp.rowsWritten += dp.tableRows[k]
	if !dp.pending[tableDate{FactTable, d}] && !dp.pending[tableDate{CourseDayTable, d}] {
		dp.finished++
	}
	share := dp.done / dp.all
	if len(dp.pending) == 0 {
		share = 1 // exactly, whatever the float sums
	}
	dp.p.Dates(dp.finished, dp.total, dp.rowsWritten, share)
}

// stage writes one table under relDir and returns its files per date. The
// file count comes from the bytes the aggregate says the date will take
// (PlannedFiles), never from a partition count, and each date is written
// once: a date over the target is split in that same write, under
// relDir/split. The finished files are found by listing; nothing is
// renamed.
func (t tableStager) stage(ctx context.Context, table, relDir string) (map[dates.Date][]pointer.File, error) {
	n := map[dates.Date]int{}
	split := false
	for _, d := range t.dates {
		n[d] = PlannedFiles(table, t.figs[d], t.spec.TargetFileBytes)
		split = split || n[d] > 1
	}
	dir, err := t.dir(ctx, relDir)
	if err != nil {
		return nil, err
	}
	splitRel := relDir + "/split"
	var splitDir Dir
	if split {
		if splitDir, err = t.dir(ctx, splitRel); err != nil {
			return nil, err
		}
	}
	written := func(d dates.Date) { t.progress.written(table, d) }
	if err := t.r.Write(ctx, t.spec, table, n, dir, splitDir, written); err != nil {
		return nil, err
	}
	for _, d := range t.dates {
		written(d)
	}
	files, err := t.dataFiles(ctx, relDir)
	if err != nil {
		return nil, err
	}
	if split {
		parts, err := t.dataFiles(ctx, splitRel)
		if err != nil {
			return nil, err
		}
		for d, objs := range parts {
			files[d] = append(files[d], objs...)
		}
	}
	for _, d := range t.dates {
		if len(files[d]) == 0 || len(files[d]) > n[d] {
			return nil, fmt.Errorf("write %s %s: %d files, want 1 to %d", relDir, d, len(files[d]), n[d])
		}
	}
	// Each file's rows are its footer's, read here for every engine alike:
	// a query per table cost the Spark engine a job per publish.
	out := map[dates.Date][]pointer.File{}
	for _, d := range t.dates {
		for _, o := range files[d] {
			rows, err := inputs.Rows(ctx, t.wh, o.Key, o.Size)
			if err != nil {
				return nil, fmt.Errorf("count staged rows: %w", err)
			}
			// An empty split part (an engine that writes a file for it)
			// holds no row of the table: it is not staged.
			if rows == 0 && n[d] > 1 {
				if err := t.wh.Delete(ctx, o.Key); err != nil {
					return nil, err
				}
				continue
			}
			out[d] = append(out[d], pointer.File{Path: o.Key, Bytes: o.Size, Rows: rows})
		}
	}
	// Durable before anything names them.
	if _, err := t.wh.Seal(ctx, relDir+"/"); err != nil {
		return nil, err
	}
	return out, nil
}

func (t tableStager) dir(ctx context.Context, rel string) (Dir, error) {
	uri, err := t.wh.WriteURI(ctx, rel)
	if err != nil {
		return Dir{}, err
	}
	return Dir{URI: uri, Sub: func(sub string) (string, error) { return t.wh.WriteURI(ctx, path.Join(rel, sub)) }}, nil
}

// dataFiles lists the Parquet files written under dir, by the event_date
// directory they are in, sorted by key. An engine's bookkeeping (hidden
// names: Spark's _SUCCESS, and the .crc checksums its local filesystem keeps
// beside each file, which would refuse a file rewritten by anyone else) is
// deleted: the staged files are plain Parquet, judged by the gate on their
// bytes alone. Another pass's directory (split/) is not this pass's.
func (t tableStager) dataFiles(ctx context.Context, dir string) (map[dates.Date][]storage.Object, error) {
	objs, err := t.wh.List(ctx, dir+"/")
	if err != nil {
		return nil, err
	}
	out := map[dates.Date][]storage.Object{}
	for _, o := range objs {
		if strings.HasSuffix(o.Key, "/") {
			// A directory marker, which Hadoop's S3A connector may leave
			// on S3 for a directory it made: no file of the table.
			continue
		}
		elems := strings.Split(strings.TrimPrefix(o.Key, dir+"/"), "/")
		if inputs.Hidden(elems[len(elems)-1]) {
			if err := t.wh.Delete(ctx, o.Key); err != nil {
				return nil, err
			}
			continue
		}
		ds, ok := strings.CutPrefix(elems[0], "event_date=")
		if !ok || len(elems) < 2 {
			continue
		}
		d, err := dates.Parse(ds)
		if err != nil {
			return nil, fmt.Errorf("staged %s: %w", o.Key, err)
		}
		out[d] = append(out[d], o)
	}
	return out, nil
}
