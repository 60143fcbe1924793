// Package gc deletes staging prefixes that nothing can read any more: no
// retained pointer generation names them and no attempt has touched them
// for a minimum age. It only ever deletes under <warehouse>/staging/
// job_id=<id>/, through the storage seam, on any backend; raw, the
// manifest, the enrollments, the pointer, its history and the rejection
// records are never touched, and anything it cannot judge with certainty
// is left alone and reported.
package gc

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

const (
	// DefaultMinAge is how long a prefix must have been idle before it may
	// go: longer than any attempt runs, so a live attempt is never deleted.
	DefaultMinAge = 24 * time.Hour
	// MinAgeFloor is the shortest min-age accepted without Force.
	MinAgeFloor = time.Hour

	prefixPrefix = "job_id="
	// Before a prefix is deleted, a marker object staging/.gc-deleting-
	// <prefix> is written; it is removed last, so a gc killed mid-delete
	// leaves a marker the next gc recognises and finishes. (An older gc
	// renamed the prefix to a directory of that name; such a leftover is
	// deleted too.)
	deletingPrefix = ".gc-deleting-"
)

// Locker is implemented by stores that can hold the pointer still (a
// local warehouse's writer lock). Without one gc relies on the minimum age
// and re-reads the history after deleting, reporting a publisher that
// raced it.
type Locker interface {
	Lock(ctx context.Context) (unlock func(), err error)
}

// Options are one gc run. Now is read once by the caller.
type Options struct {
	Bucket storage.Bucket // the warehouse
	Store  pointer.Store  // the pointer on it
	Now    time.Time
	MinAge time.Duration
	Force  bool // accept a MinAge below MinAgeFloor
	DryRun bool
}

// Verdict is what gc decided for one entry of staging/.
type Verdict struct {
	Path   string // relative to the warehouse, slash-separated
	Delete bool
	Reason string
	Bytes  int64
}

// Report is the outcome of a run, in path order.
type Report struct {
	Generation int64 // the current pointer generation gc judged against
	Verdicts   []Verdict
}

// Deleted returns the verdicts that delete (or would, in a dry run).
func (r Report) Deleted() []Verdict {
	var out []Verdict
	for _, v := range r.Verdicts {
		if v.Delete {
			out = append(out, v)
		}
	}
	return out
}

// Run decides and, unless DryRun, deletes. It refuses to run (usage error)
// on a min-age below the floor without Force and on a warehouse with no
// pointer: a mistyped --warehouse pointing at someone else's directory must
// not be cleaned as "nothing published, everything unreferenced".
func Run(ctx context.Context, o Options) (Report, error) {
	var rep Report
	if o.MinAge < 0 {
		return rep, exitcode.UsageError(fmt.Errorf("gc: --min-age %s: must not be negative", o.MinAge))
	}
	if o.MinAge < MinAgeFloor && !o.Force {
		return rep, exitcode.UsageError(fmt.Errorf("gc: --min-age %s is below the floor %s; an attempt still running could lose its staging: pass --force-min-age if every attempt has ended", o.MinAge, MinAgeFloor))
	}
	root := o.Bucket.Location()
	if _, err := o.Bucket.Stat(ctx, "pointer.json"); err != nil {
		if !storage.IsNotExist(err) {
			return rep, fmt.Errorf("gc: %w", err)
		}
		return rep, exitcode.UsageError(fmt.Errorf("gc: %s has no pointer.json: refusing to collect a warehouse nothing was published to; check --warehouse", root))
	}
	if l, ok := o.Store.(Locker); ok && !o.DryRun {
		unlock, err := l.Lock(ctx)
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		defer unlock()
	}
	named, gen, err := referenced(ctx, o.Store)
	if err != nil {
		return rep, err
	}
	rep.Generation = gen

	files, dirs, err := o.Bucket.ListDir(ctx, warehouse.StagingRoot)
	if storage.IsNotExist(err) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("gc: list %s: %w", root.Join(warehouse.StagingRoot), err)
	}
	markers := map[string]bool{}
	for _, f := range files {
		name := path.Base(f.Key)
		rel := warehouse.StagingRoot + "/" + name
		switch target, ok := strings.CutPrefix(name, deletingPrefix); {
		case f.Link:
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Reason: "a symlink, never followed or deleted"})
		case ok:
			markers[target] = true
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Delete: named[warehouse.StagingRoot+"/"+target] == "",
				Reason: "the marker of an interrupted gc of " + target})
		default:
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Reason: "not a job_id=<id> staging prefix"})
		}
	}
	for _, d := range dirs {
		rep.Verdicts = append(rep.Verdicts, judge(ctx, o, d, named, markers[d]))
	}
	sort.Slice(rep.Verdicts, func(i, j int) bool { return rep.Verdicts[i].Path < rep.Verdicts[j].Path })
	if o.DryRun {
		return rep, nil
	}
	var deleted []string
	for _, v := range rep.Deleted() {
		if err := remove(ctx, o.Bucket, v.Path); err != nil {
			return rep, err
		}
		deleted = append(deleted, v.Path)
	}
	// Under a lock nothing can have moved; without one, a publisher may
	// have named a prefix between the read and the delete. Say so loudly.
	after, _, err := referenced(ctx, o.Store)
	if err != nil {
		return rep, err
	}
	for _, p := range deleted {
		if after[p] != "" {
			return rep, fmt.Errorf("gc: %s was deleted but %s now names it: a publisher raced gc; republish its dates with a new job id", p, after[p])
		}
	}
	return rep, nil
}

// referenced maps every staging prefix that the current pointer or any
// retained history generation names (by job id or by a file path) to the
// first generation naming it. Every generation in the history is retained:
// a reader may still hold any of them. An unreadable generation stops gc,
// since what it names is then unknown.
func referenced(ctx context.Context, s pointer.Store) (map[string]string, int64, error) {
	cur, _, err := s.Load(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("gc: load pointer: %w", err)
	}
	gens, err := s.Generations(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("gc: list pointer history: %w", err)
	}
	named := map[string]string{}
	add := func(p pointer.Pointer, what string) {
		mark := func(prefix string) {
			if _, ok := named[prefix]; !ok {
				named[prefix] = what
			}
		}
		mark(warehouse.StagingDir(p.UpdatedByJobID))
		for _, e := range p.Dates {
			mark(warehouse.StagingDir(e.JobID))
			for _, f := range append(append([]pointer.File{}, e.FactFiles...), e.CourseDayFiles...) {
				mark(prefixOf(f.Path))
			}
			if e.GateReport != "" {
				mark(prefixOf(e.GateReport))
			}
		}
	}
	add(cur, fmt.Sprintf("the current pointer (generation %d)", cur.Generation))
	for _, g := range gens {
		p, err := s.LoadGeneration(ctx, g)
		if err != nil {
			return nil, 0, fmt.Errorf("gc: read history generation %d: %w", g, err)
		}
		add(p, fmt.Sprintf("history generation %d", g))
	}
	return named, cur.Generation, nil
}

// prefixOf returns the first two elements of a warehouse-relative path
// (staging/job_id=<id>), or the path itself when shorter.
func prefixOf(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 {
		return p
	}
	return parts[0] + "/" + parts[1]
}

// attempt is the part of _attempt.json gc relies on.
type attempt struct {
	JobID     string    `json:"job_id"`
	StartedAt time.Time `json:"started_at"`
}

// judge decides one directory of staging/. Only job_id=<valid id>, with a
// readable attempt record for that id, named by no retained generation, idle
// (attempt start and every object's modification time) for at least MinAge,
// and listable in full (on a local disk: holding no symlink), is deleted.
// A directory a gc was deleting when it was interrupted is finished.
func judge(ctx context.Context, o Options, name string, named map[string]string, marked bool) Verdict {
	rel := warehouse.StagingRoot + "/" + name
	keep := func(format string, args ...any) Verdict {
		return Verdict{Path: rel, Reason: fmt.Sprintf(format, args...)}
	}
	if strings.HasPrefix(name, deletingPrefix) {
		return Verdict{Path: rel, Delete: true, Reason: "left by an interrupted gc"}
	}
	id, ok := strings.CutPrefix(name, prefixPrefix)
	if !ok || config.CheckJobID(id) != nil {
		return keep("not a job_id=<id> staging prefix")
	}
	if by := named[rel]; by != "" {
		return keep("named by %s", by)
	}
	objs, err := o.Bucket.List(ctx, rel+"/")
	if err != nil {
		return keep("cannot be listed in full (%v): not judged, inspect by hand", err)
	}
	if marked {
		return Verdict{Path: rel, Delete: true, Bytes: total(objs), Reason: "an interrupted gc had begun deleting it"}
	}
	b, _, err := o.Bucket.Get(ctx, warehouse.AttemptPath(id))
	if err != nil {
		return keep("no readable _attempt.json (%v): not judged, inspect by hand", err)
	}
	var a attempt
	if err := json.Unmarshal(b, &a); err != nil || a.StartedAt.IsZero() || a.JobID != id {
		return keep("_attempt.json does not record job_id %q and a start time: not judged, inspect by hand", id)
	}
	newest := a.StartedAt
	for _, obj := range objs {
		if obj.ModTime.After(newest) {
			newest = obj.ModTime
		}
	}
	idle := o.Now.Sub(newest)
	if idle < o.MinAge {
		return keep("last activity %s ago, younger than --min-age %s: the attempt may still be running", idle.Round(time.Second), o.MinAge)
	}
	return Verdict{Path: rel, Delete: true, Bytes: total(objs),
		Reason: fmt.Sprintf("named by no retained generation, idle %s", idle.Round(time.Second))}
}

func total(objs []storage.Object) int64 {
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return n
}

// remove deletes one verdict's entry. A staging prefix is first marked (a
// staging/.gc-deleting-<name> object), then deleted, then unmarked, so a
// gc killed between leaves a marker the next gc finishes instead of a
// half-deleted prefix nobody recognises.
func remove(ctx context.Context, b storage.Bucket, rel string) error {
	name := path.Base(rel)
	if target, ok := strings.CutPrefix(name, deletingPrefix); ok {
		// A marker: its prefix went with the same run (judge found it
		// marked), or an older gc's renamed directory.
		if err := b.DeletePrefix(ctx, warehouse.StagingRoot+"/"+target+"/"); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		if err := b.DeletePrefix(ctx, rel+"/"); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		if err := b.Delete(ctx, rel); err != nil {
			return fmt.Errorf("gc: %w", err)
		}
		return nil
	}
	marker := warehouse.StagingRoot + "/" + deletingPrefix + name
	if _, err := b.Put(ctx, marker, []byte(rel+"\n"), storage.Cond{}); err != nil {
		return fmt.Errorf("gc: mark %s: %w", rel, err)
	}
	if err := b.DeletePrefix(ctx, rel+"/"); err != nil {
		return fmt.Errorf("gc: delete %s: %w", rel, err)
	}
	if err := b.Delete(ctx, marker); err != nil {
		return fmt.Errorf("gc: unmark %s: %w", rel, err)
	}
	return nil
}
