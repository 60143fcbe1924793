package engine

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Runner is what an engine brings to the staging driver (RunStage): its SQL
// dialect and its way of running it. The driver decides the order of the
// steps, which files are written where, when a date is split, and which
// files are staged; no engine lists, splits or finalizes files itself.
type Runner interface {
	// CountInputs counts the raw events of each requested date in the
	// listed files, in a scan of its own: the silent-drop check must not be
	// derived from the output it audits.
	CountInputs(ctx context.Context, spec Spec) (map[dates.Date]int64, error)
	// BuildFacts computes the fact grain with both joins once, for the
	// conflict counts and both tables' writes; release frees it.
	BuildFacts(ctx context.Context, spec Spec) (release func(), err error)
	// Conflicts counts, per date of the built facts, the events whose
	// course_id differs from the manifest's and the fact rows whose events
	// disagree on course_id.
	Conflicts(ctx context.Context, spec Spec) (map[dates.Date][2]int64, error)
	// Write writes table's rows of the dates ds as Parquet under dir, one
	// event_date=<d>/ directory per date, any number of files each.
	Write(ctx context.Context, spec Spec, table string, ds []dates.Date, dir Dir) error
	// WriteSplit writes table's rows of each date d in n into exactly n[d]
	// files, split by a hash of the table's grain (GrainKey), under
	// dir/event_date=<d>/split_part=<i>/.
	WriteSplit(ctx context.Context, spec Spec, table string, n map[dates.Date]int, dir Dir) error
	// CountRows reads back the row count of each file, in order.
	CountRows(ctx context.Context, uris []string) ([]int64, error)
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

// GrainKey is the split key of each table: its grain without the date.
var GrainKey = map[string]string{FactTable: "learner_key, lesson_id", CourseDayTable: "course_id"}

// RunStage stages both tables for spec under stagingDir of the warehouse
// through r: the input count, the fact grain, the conflict counts, then each
// table for the dates that have events (fact first; the mid-staging
// failpoint sits between the tables).
func RunStage(ctx context.Context, r Runner, spec Spec, wh storage.Bucket, stagingDir string) (Staged, error) {
	st := Staged{
		Stage:          map[dates.Date]gate.StageFigures{},
		FactFiles:      map[dates.Date][]pointer.File{},
		CourseDayFiles: map[dates.Date][]pointer.File{},
	}
	counts, err := r.CountInputs(ctx, spec)
	if err != nil {
		return st, err
	}
	for d, n := range counts {
		f := st.Stage[d]
		f.InputEvents = n
		st.Stage[d] = f
	}
	release, err := r.BuildFacts(ctx, spec)
	if err != nil {
		return st, err
	}
	defer release()
	conflicts, err := r.Conflicts(ctx, spec)
	if err != nil {
		return st, err
	}
	for d, n := range conflicts {
		f := st.Stage[d]
		f.ManifestCourseConflicts, f.FactRowCourseConflicts = n[0], n[1]
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
	t := tableStager{r: r, spec: spec, wh: wh, dates: withEvents}
	if st.FactFiles, err = t.stage(ctx, FactTable, path.Join(stagingDir, FactTable)); err != nil {
		return st, err
	}
	failpoint.HitCtx(ctx, failpoint.MidStaging)
	if st.CourseDayFiles, err = t.stage(ctx, CourseDayTable, path.Join(stagingDir, CourseDayTable)); err != nil {
		return st, err
	}
	return st, nil
}

type tableStager struct {
	r     Runner
	spec  Spec
	wh    storage.Bucket
	dates []dates.Date
}

// stage writes one table under relDir and returns its files per date. The
// file count comes from the bytes written, never from a partition count:
// a first write measures, and a date that needs a different count
// (SplitInto) is written again under relDir/split, split by its grain, and
// its first files deleted. The finished files are found by listing; nothing
// is renamed.
func (t tableStager) stage(ctx context.Context, table, relDir string) (map[dates.Date][]pointer.File, error) {
	dir, err := t.dir(ctx, relDir)
	if err != nil {
		return nil, err
	}
	if err := t.r.Write(ctx, t.spec, table, t.dates, dir); err != nil {
		return nil, err
	}
	first, err := t.dataFiles(ctx, relDir)
	if err != nil {
		return nil, err
	}
	split := map[dates.Date]int{}
	for _, d := range t.dates {
		if n := SplitInto(first[d], t.spec.TargetFileBytes); n > 0 {
			split[d] = n
		}
	}
	files := first
	if len(split) > 0 {
		splitDir := relDir + "/split"
		dir, err := t.dir(ctx, splitDir)
		if err != nil {
			return nil, err
		}
		if err := t.r.WriteSplit(ctx, t.spec, table, split, dir); err != nil {
			return nil, err
		}
		again, err := t.dataFiles(ctx, splitDir)
		if err != nil {
			return nil, err
		}
		for d, n := range split {
			if len(again[d]) != n {
				return nil, fmt.Errorf("split %s %s: %d files, want %d", relDir, d, len(again[d]), n)
			}
			for _, o := range first[d] {
				if err := t.wh.Delete(ctx, o.Key); err != nil {
					return nil, err
				}
			}
			files[d] = again[d]
		}
	}
	// Durable before anything names them, and listed as they are now.
	if _, err := t.wh.Seal(ctx, relDir+"/"); err != nil {
		return nil, err
	}
	var uris []string
	for _, d := range t.dates {
		for _, o := range files[d] {
			uris = append(uris, t.wh.Location().Join(o.Key).String())
		}
	}
	rows, err := t.r.CountRows(ctx, uris)
	if err != nil {
		return nil, err
	}
	if len(rows) != len(uris) {
		return nil, fmt.Errorf("count staged rows in %s: %d counts for %d files", relDir, len(rows), len(uris))
	}
	out := map[dates.Date][]pointer.File{}
	i := 0
	for _, d := range t.dates {
		for _, o := range files[d] {
			out[d] = append(out[d], pointer.File{Path: o.Key, Bytes: o.Size, Rows: rows[i]})
			i++
		}
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
