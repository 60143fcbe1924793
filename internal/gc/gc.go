// Package gc deletes staging prefixes that nothing can read any more: no
// retained pointer generation names them and no attempt has touched them
// for a minimum age. It only ever deletes directories
// <warehouse>/staging/job_id=<id>; raw, the manifest, the enrollments, the
// pointer, its history and the rejection records are never touched, and
// anything it cannot judge with certainty is left alone and reported.
package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

const (
	// DefaultMinAge is how long a prefix must have been idle before it may
	// go: longer than any attempt runs, so a live attempt is never deleted.
	DefaultMinAge = 24 * time.Hour
	// MinAgeFloor is the shortest min-age accepted without Force.
	MinAgeFloor = time.Hour

	prefixPrefix = "job_id="
	// A prefix is renamed to this before it is removed, so a gc killed
	// mid-delete leaves a name the next gc recognises as its own leftover
	// rather than a half-deleted prefix with no attempt record.
	deletingPrefix = ".gc-deleting-"
)

// Locker is implemented by stores that can hold the pointer still (the
// local store's writer lock). Without it gc re-reads the history after
// deleting and reports a publisher that raced it.
type Locker interface {
	Lock(ctx context.Context) (unlock func(), err error)
}

// Options are one gc run. Now is read once by the caller.
type Options struct {
	Warehouse string
	Store     pointer.Store
	Now       time.Time
	MinAge    time.Duration
	Force     bool // accept a MinAge below MinAgeFloor
	DryRun    bool
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
	if _, err := os.Stat(filepath.Join(o.Warehouse, "pointer.json")); err != nil {
		return rep, exitcode.UsageError(fmt.Errorf("gc: %s has no pointer.json (%v): refusing to collect a warehouse nothing was published to; check --warehouse", o.Warehouse, errors.Unwrap(err)))
	}
	stagingAbs := warehouse.Abs(o.Warehouse, warehouse.StagingRoot)
	if fi, err := os.Lstat(stagingAbs); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	} else if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	} else if !fi.IsDir() {
		return rep, fmt.Errorf("gc: %s is not a directory (a symlink?): refusing to delete through it", stagingAbs)
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

	entries, err := os.ReadDir(stagingAbs)
	if err != nil {
		return rep, fmt.Errorf("gc: list %s: %w", stagingAbs, err)
	}
	for _, e := range entries {
		v := judge(o, stagingAbs, e, named)
		rep.Verdicts = append(rep.Verdicts, v)
	}
	sort.Slice(rep.Verdicts, func(i, j int) bool { return rep.Verdicts[i].Path < rep.Verdicts[j].Path })
	if o.DryRun {
		return rep, nil
	}
	var deleted []string
	for _, v := range rep.Deleted() {
		if err := remove(stagingAbs, filepath.Base(filepath.FromSlash(v.Path))); err != nil {
			return rep, err
		}
		deleted = append(deleted, v.Path)
	}
	// Under the lock nothing can have moved; without one, a publisher may
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

// judge decides one entry of staging/. Only a real directory named
// job_id=<valid id>, with a readable attempt record for that id, named by no
// retained generation, idle (attempt start and every mtime inside) for at
// least MinAge, and holding no symlink, is deleted.
func judge(o Options, stagingAbs string, e fs.DirEntry, named map[string]string) Verdict {
	rel := warehouse.StagingRoot + "/" + e.Name()
	keep := func(format string, args ...any) Verdict {
		return Verdict{Path: rel, Reason: fmt.Sprintf(format, args...)}
	}
	if strings.HasPrefix(e.Name(), deletingPrefix) && e.IsDir() {
		return Verdict{Path: rel, Delete: true, Reason: "left by an interrupted gc"}
	}
	if e.Type()&fs.ModeSymlink != 0 {
		return keep("a symlink, never followed or deleted")
	}
	id, ok := strings.CutPrefix(e.Name(), prefixPrefix)
	if !ok || !e.IsDir() || config.CheckJobID(id) != nil {
		return keep("not a job_id=<id> staging prefix")
	}
	if by := named[rel]; by != "" {
		return keep("named by %s", by)
	}
	dir := filepath.Join(stagingAbs, e.Name())
	b, err := os.ReadFile(filepath.Join(dir, "_attempt.json"))
	if err != nil {
		return keep("no readable _attempt.json (%v): not judged, inspect by hand", errors.Unwrap(err))
	}
	var a attempt
	if err := json.Unmarshal(b, &a); err != nil || a.StartedAt.IsZero() || a.JobID != id {
		return keep("_attempt.json does not record job_id %q and a start time: not judged, inspect by hand", id)
	}
	newest, size, link, err := scan(dir)
	if err != nil {
		return keep("cannot be read in full (%v): not judged", err)
	}
	if link != "" {
		return keep("holds a symlink %s: never deleted through, inspect by hand", link)
	}
	if a.StartedAt.After(newest) {
		newest = a.StartedAt
	}
	idle := o.Now.Sub(newest)
	if idle < o.MinAge {
		return keep("last activity %s ago, younger than --min-age %s: the attempt may still be running", idle.Round(time.Second), o.MinAge)
	}
	return Verdict{Path: rel, Delete: true, Bytes: size,
		Reason: fmt.Sprintf("named by no retained generation, idle %s", idle.Round(time.Second))}
}

// scan walks a prefix without following links and returns its newest
// modification time, its size and the first symlink found.
func scan(dir string) (newest time.Time, size int64, link string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			link = p
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	return newest, size, link, err
}

// remove hides the prefix under a gc-owned name, then deletes it. The
// rename is atomic, so a crash leaves either the untouched prefix or a
// .gc-deleting- leftover, never a half-deleted job prefix.
func remove(stagingAbs, name string) error {
	from := filepath.Join(stagingAbs, name)
	if strings.HasPrefix(name, deletingPrefix) {
		return removeAll(from)
	}
	to := filepath.Join(stagingAbs, deletingPrefix+name)
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("gc: hide %s: %w", from, err)
	}
	if err := warehouse.SyncDir(stagingAbs); err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	return removeAll(to)
}

func removeAll(p string) error {
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("gc: delete %s: %w", p, err)
	}
	return nil
}
