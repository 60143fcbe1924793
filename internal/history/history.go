// Package history is the operator's view of a warehouse over time: which
// retained pointer generation changed which date and how (publish,
// rollback), where expired generations went, and the rollback that writes
// an old generation's entries as a new one. It reads and moves the pointer
// only through pointer.Store.
package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// OpExpiry is how an expiry record reads in the history: not a generation,
// the gc run that removed some.
const OpExpiry = "expiry"

// Change is one retained generation's change to one date.
type Change struct {
	Generation       int64     `json:"generation"`
	WrittenAt        time.Time `json:"written_at,omitzero"`
	WriterVersion    string    `json:"writer_version,omitempty"`
	Operation        string    `json:"operation"` // publish or rollback; empty for format 1
	SourceGeneration int64     `json:"source_generation,omitempty"`
	UpdatedByJobID   string    `json:"updated_by_job_id"`
	Current          bool      `json:"current"`
	// Oldest marks the oldest retained generation: its parent is gone, so
	// every date it holds is listed, changed or not.
	Oldest bool `json:"oldest_retained"`
	// AfterGap marks a generation whose parent is missing from the history
	// though older ones are retained (a file removed by hand): every date
	// it holds is listed too.
	AfterGap bool `json:"after_gap,omitempty"`

	Date                 dates.Date `json:"date"`
	JobID                string     `json:"job_id"`
	ManifestID           string     `json:"manifest_id"`
	EnrollmentSnapshotID string     `json:"enrollment_snapshot_id"`
	EventCount           int64      `json:"event_count"`
	UnknownLessonRate    float64    `json:"unknown_lesson_rate"`
	Files                int        `json:"files"` // both tables
	Bytes                int64      `json:"bytes"`
}

// Expiry is the record a gc run leaves when it expires generations or
// deletes rejection and rollback records.
type Expiry struct {
	Generations []int64 `json:"generations"`
	// StillRetained are those of Generations the history still holds: the
	// gc that wrote the record is still running, or stopped before
	// expiring them (set by List).
	StillRetained []int64 `json:"still_retained,omitempty"`
	// JobIDs are the jobs that wrote the expired generations: their ids
	// stay taken once no retained generation names them.
	JobIDs []string `json:"job_ids,omitempty"`
	// RecordJobIDs are the jobs whose rejection or rollback record, or
	// staging prefix, the run deleted: their ids stay taken too.
	RecordJobIDs  []string  `json:"record_job_ids,omitempty"`
	At            time.Time `json:"at"`
	Reason        string    `json:"reason"`
	WriterVersion string    `json:"writer_version"`
}

// Log is a warehouse's retained history, newest generation first.
type Log struct {
	Current  int64    `json:"current_generation"`
	Changes  []Change `json:"changes"`
	Expiries []Expiry `json:"expiries"`
	// Missing are the generations from the oldest retained one up to the
	// current one that the history lacks: gc expires the oldest only, so
	// these were removed by some other hand (the current one's copy
	// included, when the whole of pointer-history/ went).
	Missing []int64 `json:"missing_generations,omitempty"`
	// Pending is the generation an interrupted write committed past
	// pointer.json (its history copy a true successor), which readers do
	// not see until the next publish or rollback rolls it forward; 0 when
	// none. PendingJobID wrote it.
	Pending      int64  `json:"pending_generation,omitempty"`
	PendingJobID string `json:"pending_job_id,omitempty"`
	// Refused is why the next publish or rollback would refuse to move
	// pointer.json (the history past it is not an interrupted write's:
	// pointer.json was put back by hand); empty when it would not.
	Refused string `json:"next_write_refused,omitempty"`
	// Altered are the retained generations whose history copy is not the
	// bytes its successor recorded as its parent: edited after it was
	// written, so its figures are not what was published, and rollback
	// refuses it.
	Altered []int64 `json:"altered_generations,omitempty"`
	// CurrentDiffers: pointer.json is not the current generation's copy,
	// byte for byte; one of them was edited in place, and publish and
	// rollback refuse to build on it.
	CurrentDiffers bool `json:"current_copy_differs,omitempty"`
	// PointerEdited, when CurrentDiffers, says how pointer.json disagrees
	// with what its jobs staged while the copy agrees: pointer.json is the
	// one edited.
	PointerEdited string `json:"pointer_edited,omitempty"`
	copyEdited    string // the same of the current copy, then in Altered
}

// List reads the retained history: for each retained generation, the dates
// it changed from its parent (only date only, when set). A generation that
// expires while it is read is skipped.
func List(ctx context.Context, s pointer.Store, b storage.Bucket, only *dates.Date) (Log, error) {
	cur, _, err := s.Load(ctx)
	if err != nil {
		return Log{}, err
	}
	gens, err := s.Generations(ctx)
	if err != nil {
		return Log{}, err
	}
	log := Log{Current: cur.Generation, Changes: []Change{}}
	var prev *pointer.Pointer
	var retained []int64 // the listed generations that were read
	var broken []int64   // generations whose parent is not the copy before them
	var changed []int64  // copies known changed themselves (the newest, by pointer.json's record)
	for _, g := range gens {
		if g > cur.Generation {
			retained = append(retained, g) // an interrupted write's copy is not history yet
			continue
		}
		p, err := s.LoadGeneration(ctx, g)
		if errors.Is(err, fs.ErrNotExist) && len(retained) == 0 {
			// gc expires the oldest first: one running now took it since
			// the listing. It is no gap, and the next one read is the
			// oldest.
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			prev = nil
			continue
		}
		if err != nil {
			return Log{}, err
		}
		if prev != nil && prev.Generation == g-1 && p.Parent != nil && !p.NamesParent(*prev) {
			broken = append(broken, g)
		}
		if g == cur.Generation && p.Digest != cur.Digest {
			log.CurrentDiffers = true
			// pointer.json records its parent too: when it names the copy
			// below as written while the newest copy does not, the newest
			// copy is the one changed (its parent field), not the one below.
			// When both name it, a figure or a file list was edited on one
			// side, and nothing tells which: the copy was blamed, while
			// publish blamed pointer.json.
			// Else what the jobs staged may tell (as publish judges it).
			if prev != nil && prev.Generation == g-1 && cur.NamesParent(*prev) && !p.NamesParent(*prev) {
				changed = append(changed, g)
			} else if prev != nil && prev.Generation == g-1 && p.NamesParent(*prev) && !cur.NamesParent(*prev) && cur.Parent != nil {
				log.PointerEdited = fmt.Sprintf("its parent record no longer names generation %d as written", g-1)
			} else if side, why := pointer.Judge(ctx, warehouse.Witness(b), cur, p); side == "copy" {
				changed = append(changed, g)
				log.copyEdited = why
			} else if side == "pointer.json" {
				log.PointerEdited = why
			}
		}
		oldest := len(retained) == 0
		retained = append(retained, g)
		gap := !oldest && (prev == nil || prev.Generation != g-1)
		for _, d := range sortedDates(p) {
			if only != nil && d != *only {
				continue
			}
			e := p.Dates[d]
			if prev != nil && prev.Generation == g-1 {
				if pe, ok := prev.Dates[d]; ok && pointer.SameEntry(pe, e) {
					continue
				}
			}
			c := change(p, d, e, g == cur.Generation, oldest)
			c.AfterGap = gap
			log.Changes = append(log.Changes, c)
		}
		prev = &p
	}
	log.Altered = blame(broken, changed)
	// Newest generation first, its dates in order.
	slices.SortStableFunc(log.Changes, func(a, b Change) int { return cmp.Compare(b.Generation, a.Generation) })
	if log.Expiries, err = Expiries(ctx, b); err != nil {
		return Log{}, err
	}
	for i, e := range log.Expiries {
		for _, g := range e.Generations {
			if slices.Contains(retained, g) {
				log.Expiries[i].StillRetained = append(log.Expiries[i].StillRetained, g)
			}
		}
	}
	if ps, ok := s.(pointer.Pender); ok {
		// A history copy that cannot be read says nothing here: the
		// listing above read the retained ones, and the next write names
		// what it meets.
		orphan, err := ps.Pending(ctx)
		switch {
		case errors.Is(err, pointer.ErrBrokenChain):
			log.Refused = err.Error()
		case err == nil && orphan != nil:
			log.Pending, log.PendingJobID = orphan.Generation, orphan.UpdatedByJobID
		}
	} else if g := pointer.Committed(ctx, s, cur); g != cur.Generation {
		log.Pending = g
		if p, err := s.LoadGeneration(ctx, g); err == nil {
			log.PendingJobID = p.UpdatedByJobID
		}
	}
	from := cur.Generation
	if len(retained) > 0 {
		from = min(retained[0], cur.Generation)
	}
	for g := from; g <= cur.Generation && g > 0; g++ {
		if !slices.Contains(retained, g) {
			log.Missing = append(log.Missing, g)
		}
	}
	return log, nil
}

// Current is date d of generation p as a change of the current generation,
// for a reader of pointer.json beside the history (report).
func Current(p pointer.Pointer, d dates.Date) Change {
	return change(p, d, p.Dates[d], true, false)
}

// SameEntry reports whether two changes show the same date entry, as far
// as a change records one: the job, pins, figures, file count and bytes.
func SameEntry(a, b Change) bool {
	return a.JobID == b.JobID && a.ManifestID == b.ManifestID && a.EnrollmentSnapshotID == b.EnrollmentSnapshotID &&
		a.EventCount == b.EventCount && a.UnknownLessonRate == b.UnknownLessonRate && a.Files == b.Files && a.Bytes == b.Bytes
}

func change(p pointer.Pointer, d dates.Date, e pointer.DateEntry, current, oldest bool) Change {
	c := Change{
		Generation: p.Generation, WrittenAt: p.WrittenAt, WriterVersion: p.WriterVersion, Operation: p.Operation,
		SourceGeneration: p.SourceGeneration, UpdatedByJobID: p.UpdatedByJobID, Current: current, Oldest: oldest,
		Date: d, JobID: e.JobID, ManifestID: e.ManifestID, EnrollmentSnapshotID: e.EnrollmentSnapshotID,
		EventCount: e.EventCount, UnknownLessonRate: e.UnknownLessonRate,
		Files: len(e.FactFiles) + len(e.CourseDayFiles),
	}
	for _, f := range slices.Concat(e.FactFiles, e.CourseDayFiles) {
		c.Bytes += f.Bytes
	}
	return c
}

func sortedDates(p pointer.Pointer) []dates.Date {
	ds := make([]dates.Date, 0, len(p.Dates))
	for d := range p.Dates {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds
}

// RecordExpiry writes the record of one gc run that expired generations
// or deleted records, named by the newest generation it expired, else by
// cur (the current generation). A record already under that name (a gc
// run again after one that stopped part way) is merged into, never
// overwritten: the generations and job ids it holds stay recorded.
func RecordExpiry(ctx context.Context, b storage.Bucket, e Expiry, cur int64) error {
	key := path.Join(warehouse.ExpiryRoot, strconv.FormatInt(cur, 10)+".json")
	if len(e.Generations) > 0 {
		key = path.Join(warehouse.ExpiryRoot, strconv.FormatInt(slices.Max(e.Generations), 10)+".json")
	}
	// The merge is a compare-and-swap: two gc runs at once (an S3
	// warehouse has no lock) writing the same record read-merge-wrote it
	// unconditionally, and one run's job ids, then free, were lost.
	for attempt := 0; ; attempt++ {
		merged := e
		var cond storage.Cond
		data, attrs, err := b.Get(ctx, key)
		switch {
		case err == nil:
			var old Expiry
			if err := json.Unmarshal(data, &old); err != nil {
				return fmt.Errorf("read %s: %w: %s", b.Location().Join(key), err, expiryRemedy)
			}
			merged.Generations = union(old.Generations, e.Generations)
			merged.JobIDs = union(old.JobIDs, e.JobIDs)
			merged.RecordJobIDs = union(old.RecordJobIDs, e.RecordJobIDs)
			if old.Reason != "" && old.Reason != e.Reason {
				merged.Reason = old.Reason + "; then " + e.Reason
			}
			cond.IfMatch = attrs.Version
		case storage.IsNotExist(err):
			cond.IfAbsent = true
		default:
			return err
		}
		if merged.Generations == nil {
			merged.Generations = []int64{} // readers count it: null is not "none"
		}
		err = warehouse.WriteJSON(ctx, b, key, merged, cond)
		if !errors.Is(err, storage.ErrPrecondition) || attempt == expiryAttempts-1 {
			return err
		}
	}
}

// expiryAttempts bounds the merges a record's writer retries while other
// gc runs write it too.
const expiryAttempts = 20

// expiryRemedy is what to do with an expiry record that does not decode.
const expiryRemedy = "the expiry record is damaged: restore it from a backup, or move it out of pointer-expiry/ " +
	"(the job ids it lists can then be used again, and history no longer shows that expiry)"

func union[T cmp.Ordered](a, b []T) []T {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// Expiries reads every expiry record, oldest first.
func Expiries(ctx context.Context, b storage.Bucket) ([]Expiry, error) {
	files, _, err := b.ListDir(ctx, warehouse.ExpiryRoot)
	if storage.IsNotExist(err) {
		return []Expiry{}, nil
	}
	if err != nil {
		return nil, err // names the location already (storage.Bucket)
	}
	out := []Expiry{}
	for _, f := range files {
		if f.Link || !strings.HasSuffix(f.Key, ".json") {
			continue
		}
		data, _, err := b.Get(ctx, f.Key)
		if err != nil {
			return nil, err
		}
		var e Expiry
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("read %s: %w: %s", b.Location().Join(f.Key), err, expiryRemedy)
		}
		if len(e.Generations) == 0 && len(e.RecordJobIDs) == 0 {
			// A record names what it retired; one naming nothing has lost it.
			return nil, fmt.Errorf("read %s: names no generation and no record: %s", b.Location().Join(f.Key), expiryRemedy)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Expiry) int { return a.At.Compare(b.At) })
	return out, nil
}

// Warnings say, one sentence each, what a reader of the history must know
// before trusting its figures: an interrupted write, altered copies, an
// edited pointer.json, generations removed by hand. history and report
// show the same words.
func (l Log) Warnings() []string {
	var w []string
	if l.Pending > 0 {
		w = append(w, fmt.Sprintf("pointer-history/%d.json (job %s) is committed past pointer.json (generation %d): an interrupted write, or one that replaces pointer.json next (run history again to tell); "+
			"readers see generation %d until that writer or the next publish or rollback rolls it forward", l.Pending, l.PendingJobID, l.Current, l.Current))
	}
	if l.Refused != "" {
		w = append(w, "the next publish or rollback will refuse to move pointer.json: "+l.Refused)
	}
	for _, g := range l.Altered {
		by := fmt.Sprintf("generation %d recorded another digest for it", g+1)
		switch {
		case g == l.Current && l.copyEdited != "":
			by = l.copyEdited + ", while pointer.json's agrees"
		case g == l.Current:
			by = "pointer.json records its parent as written, and this copy does not"
		}
		w = append(w, fmt.Sprintf("pointer-history/%d.json was changed after it was written (%s): "+
			"the figures listed for generation %d are not what was published, and rollback refuses it; restore it from a backup", g, by, g))
	}
	switch {
	case l.CurrentDiffers && l.PointerEdited != "":
		w = append(w, fmt.Sprintf("pointer.json is not pointer-history/%d.json, the copy written with it: pointer.json was edited in place (%s, while the copy's agrees), "+
			"and publish and rollback refuse to build on it; docs/runbook.md says how to restore it", l.Current, l.PointerEdited))
	case l.CurrentDiffers && slices.Contains(l.Altered, l.Current):
		w = append(w, fmt.Sprintf("pointer.json is not pointer-history/%d.json, the copy written with it: the copy was edited (above), "+
			"and publish and rollback refuse to build on it; docs/runbook.md says how to restore it", l.Current))
	case l.CurrentDiffers:
		w = append(w, fmt.Sprintf("pointer.json is not pointer-history/%d.json, the copy written with it: one of them was edited in place, "+
			"and publish and rollback refuse to build on it; docs/runbook.md says how to restore it", l.Current))
	}
	gaps := l.Missing
	if slices.Contains(gaps, l.Current) {
		// No generation comes after it to list its dates, and every write
		// refuses: the gap warning's words would say neither.
		gaps = slices.DeleteFunc(slices.Clone(gaps), func(g int64) bool { return g == l.Current })
		w = append(w, fmt.Sprintf("pointer-history/%d.json, the copy written with pointer.json (generation %d), is missing: the dates generation %d changed are listed under none here, "+
			"and publish, rollback and gc refuse until it is restored; docs/runbook.md says how", l.Current, l.Current, l.Current))
	}
	if len(gaps) > 0 {
		w = append(w, fmt.Sprintf("pointer-history/ lacks generations %s, up to the current %d: gc expires only the oldest, so they were removed by hand; "+
			"the generation after each gap lists every date it holds", Spans(gaps), l.Current))
	}
	return w
}

// Spans writes ascending generations as ranges: 1-4,7.
func Spans(gens []int64) string {
	var parts []string
	for i := 0; i < len(gens); {
		j := i
		for j+1 < len(gens) && gens[j+1] == gens[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", gens[i], gens[j]))
		} else {
			parts = append(parts, fmt.Sprint(gens[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Summary is the expiry in words, as history and the report print it: a
// run that expired no generation (records and staging only) names the
// jobs whose records went, not an empty list of generations.
func (e Expiry) Summary() string {
	at := e.At.UTC().Format(time.RFC3339)
	if len(e.Generations) == 0 {
		return fmt.Sprintf("the records or staging of jobs %s deleted at %s by gc (%s)", strings.Join(e.RecordJobIDs, ", "), at, e.Reason)
	}
	s := fmt.Sprintf("generations %s expired at %s by gc (%s)", Spans(e.Generations), at, e.Reason)
	if len(e.StillRetained) > 0 {
		s += fmt.Sprintf("; %s still retained: that gc is still running, or stopped before expiring them", Spans(e.StillRetained))
	}
	if len(e.JobIDs) == 0 {
		// Every generation has a writer, and this build's gc records
		// them: a gc of an older build freed those ids.
		s += "; the job ids that wrote them are not recorded (a gc of an older build), so a publish or rollback may take one again"
	}
	if len(e.RecordJobIDs) > 0 {
		s += fmt.Sprintf("; the records or staging of jobs %s deleted", strings.Join(e.RecordJobIDs, ", "))
	}
	return s
}

// blame names the changed copies from the broken links, each a generation g
// whose recorded parent is not the copy of g-1. Judged from the newest
// down, as a rollback checks: g-1 is blamed only when g itself was not
// found changed, since a copy whose parent field was edited breaks its own
// link and the one above, and blaming g-1 sent an operator to restore an
// intact file. changed are copies known changed on other evidence, which
// blame passes over the same way.
func blame(broken, changed []int64) []int64 {
	altered := map[int64]bool{}
	for _, g := range changed {
		altered[g] = true
	}
	slices.Sort(broken)
	for i := len(broken) - 1; i >= 0; i-- {
		if g := broken[i]; !altered[g] {
			altered[g-1] = true
		}
	}
	return slices.Sorted(maps.Keys(altered))
}
