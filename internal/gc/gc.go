// Package gc deletes staging prefixes that nothing can read any more: no
// retained pointer generation names them and no attempt has touched them
// for a minimum age. Asked for retention (keep the last N generations
// and/or those of the last D days), it first expires older history
// generations, oldest first and never the current one, then also deletes
// the rejection and rollback records nothing retained needs. It deletes
// only under staging/job_id=<id>/, pointer-history/<G>.json, rejections/
// and rollbacks/, through the storage seam, on any backend; raw, the
// manifest, the enrollments and pointer.json are never touched, and
// anything it cannot judge with certainty is left alone and reported.
package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/history"
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

	// Before a prefix is deleted, a marker object staging/.gc-deleting-
	// <prefix> is written; it is removed last, so a gc killed mid-delete
	// leaves a marker the next gc recognises: the prefix, whose attempt
	// record may already be gone, is still judged by every other rule
	// (named, rollbacks, idle), and the marker goes once its prefix has.
	// (An older gc renamed the prefix to a directory of that name; such a
	// leftover is deleted too, itself only.)
	deletingPrefix = ".gc-deleting-"
)

// Locker is implemented by stores that can hold the pointer still (a
// local warehouse's writer lock). Without one gc relies on the minimum age
// and re-reads the history after deleting, reporting a publisher that
// raced it.
type Locker interface {
	Lock(ctx context.Context) (held context.Context, unlock func(), err error)
}

// Options are one gc run. Now is read once by the caller.
type Options struct {
	Bucket storage.Bucket // the warehouse
	Store  pointer.Store  // the pointer on it
	Now    time.Time
	MinAge time.Duration
	Force  bool // accept a MinAge below MinAgeFloor
	DryRun bool
	// RetainGenerations keeps the N newest generations; RetainFor keeps
	// those written within it. A generation expires only when neither keeps
	// it (both zero: nothing expires) and it is older than MinAge.
	RetainGenerations int
	RetainFor         time.Duration
	// WriterVersion names the build in the expiry record.
	WriterVersion string
}

func (o Options) retention() bool { return o.RetainGenerations > 0 || o.RetainFor > 0 }

// Verdict is what gc decided for one entry of staging/.
type Verdict struct {
	Path   string // relative to the warehouse, slash-separated
	Delete bool
	Reason string
	Bytes  int64
	// Objects are the keys a deleted prefix holds, for a dry run to list.
	Objects []string
	// Done: the deletion (or the expiry) happened; a run that failed part
	// way leaves it false on what it had not reached.
	Done bool
	// Marked: the deletion began (its marker is written) but did not end;
	// the next gc finishes it.
	Marked bool
	// JobID is the job of a rejection or rollback record.
	JobID string `json:"-"`
	// uploadsOf is the gone prefix a marker names: it holds no object, but
	// may hold the multipart uploads a gc stopped before aborting (S3's
	// DeletePrefix aborts them last), which nothing would list again. They
	// are aborted; no object is deleted under it.
	uploadsOf string
	// with is the staging prefix a marker is deleted with: the prefix's
	// own delete rewrites and removes it last, so a gc stopped before it
	// still leaves the marker naming the prefix.
	with string
}

// Report is the outcome of a run, in path order.
type Report struct {
	Generation int64 // the current pointer generation gc judged against
	Verdicts   []Verdict
	Expired    []int64 // history generations expired (or that would be)
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

// CheckMinAge refuses a negative min-age, and one below MinAgeFloor
// without force (usage errors).
func CheckMinAge(minAge time.Duration, force bool) error {
	if minAge < 0 {
		return exitcode.UsageError(fmt.Errorf("gc: --min-age %s: must not be negative", minAge))
	}
	if minAge < MinAgeFloor && !force {
		return exitcode.UsageError(fmt.Errorf("gc: --min-age %s is below the floor %s; an attempt still running could lose its staging: pass --force-min-age if every attempt has ended", minAge, MinAgeFloor))
	}
	return nil
}

// Run decides and, unless DryRun, deletes. It refuses to run (usage error)
// on a min-age below the floor without Force and on a warehouse with no
// pointer: a mistyped --warehouse pointing at someone else's directory must
// not be cleaned as "nothing published, everything unreferenced".
func Run(ctx context.Context, o Options) (Report, error) {
	var rep Report
	if err := CheckMinAge(o.MinAge, o.Force); err != nil {
		return rep, err
	}
	if o.RetainGenerations < 0 || o.RetainFor < 0 {
		return rep, exitcode.UsageError(fmt.Errorf("gc: --retain-generations %d, --retain-days %s: must not be negative", o.RetainGenerations, o.RetainFor))
	}
	root := o.Bucket.Location()
	if _, err := o.Bucket.Stat(ctx, "pointer.json"); err != nil {
		if errors.Is(err, storage.ErrNotObject) {
			return rep, fmt.Errorf("gc: %s is a directory, not the pointer: the warehouse is damaged; nothing was collected", root.Join("pointer.json"))
		}
		if !storage.IsNotExist(err) {
			return rep, fmt.Errorf("gc: %w", err)
		}
		if newest, lost, err := pointer.Lost(ctx, o.Store); err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		} else if lost {
			return rep, fmt.Errorf("gc: %w", pointer.LostError(root.String(), newest))
		} else if newest == 1 {
			// Not the command's mistake: once the next publish rolls
			// generation 1 forward, gc runs (exit 1, as a retry).
			return rep, fmt.Errorf("gc: %s; nothing to collect", pointer.LoneFirst(root.String()))
		}
		return rep, exitcode.UsageError(fmt.Errorf("gc: %s has no pointer.json: refusing to collect a warehouse nothing was published to; check --warehouse", root))
	}
	if l, ok := o.Store.(Locker); ok && !o.DryRun {
		held, unlock, err := l.Lock(ctx)
		if err != nil {
			return rep, fmt.Errorf("gc: %w", err)
		}
		defer unlock()
		// Its writes (the expiry record's conditional merge) are under it.
		ctx = held
	}
	// Retention and the staging verdicts are judged against pointer.json:
	// one that cannot be shown unedited (its copy missing or different) or
	// that was put back by hand behind its history, which publish and
	// rollback refuse, must not have gc expire the history it would be
	// checked against.
	cur, _, err := o.Store.Load(ctx)
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if err := pointer.OwnCopy(ctx, o.Store, cur, warehouse.Witness(o.Bucket)); err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	if err := pointer.Refused(ctx, o.Store); err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	expire, hist, err := planExpiry(ctx, o)
	if err != nil {
		return rep, err
	}
	rep.Expired = expire
	rep.Verdicts = append(rep.Verdicts, hist...)
	// What the retained generations name is judged as if the expiring ones
	// were gone already (a dry run judges so too).
	named, gen, err := referenced(ctx, o.Store, expire)
	if err != nil {
		return rep, err
	}
	rep.Generation = gen
	var recs []Verdict
	if o.retention() {
		if recs, err = judgeRecords(ctx, o, named); err != nil {
			return rep, err
		}
	}
	inUse, err := rollbacksInUse(ctx, o)
	if err != nil {
		return rep, err
	}
	rep.Verdicts = append(rep.Verdicts, recs...)

	files, dirs, err := o.Bucket.ListDir(ctx, warehouse.StagingRoot)
	if storage.IsNotExist(err) {
		// No staging at all: the records judged above still go.
		files, dirs, err = nil, nil, nil
	}
	if err != nil {
		return rep, fmt.Errorf("gc: list %s: %w", root.Join(warehouse.StagingRoot), err)
	}
	markers := map[string]bool{}
	for _, f := range files {
		name := path.Base(f.Key)
		rel := warehouse.StagingRoot + "/" + name
		switch target, ok := markerOf(name); {
		case f.Link:
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Reason: "a symlink, never followed or deleted"})
		case ok && slices.Contains(dirs, target):
			// Its prefix is judged below; deleting it removes the marker last.
			markers[target] = true
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Reason: "the marker of an interrupted gc of " + target + ", which is kept"})
		case ok:
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Delete: true, Bytes: f.Size, Objects: []string{rel},
				Reason: "the marker of an interrupted gc of " + target + ", which is gone", uploadsOf: warehouse.StagingRoot + "/" + target})
		default:
			rep.Verdicts = append(rep.Verdicts, Verdict{Path: rel, Reason: "not a job_id=<id> staging prefix"})
		}
	}
	probes, err := judgeProbes(ctx, o)
	if err != nil {
		return rep, err
	}
	rep.Verdicts = append(rep.Verdicts, probes...)
	deleting := map[string]bool{}
	for _, d := range dirs {
		v := judge(ctx, o, d, named, markers[d])
		if by := inUse[v.Path]; by != "" && v.Delete {
			v = Verdict{Path: v.Path, Reason: by}
		}
		deleting[d] = v.Delete
		rep.Verdicts = append(rep.Verdicts, v)
	}
	for i, v := range rep.Verdicts {
		// A marker whose prefix goes now goes with it (removed last by the
		// prefix's own delete): say so, instead of "kept".
		if target, ok := markerOf(path.Base(v.Path)); ok && markers[target] && deleting[target] {
			rep.Verdicts[i].Delete, rep.Verdicts[i].with = true, warehouse.StagingRoot+"/"+target
			rep.Verdicts[i].Reason = "the marker of an interrupted gc of " + target + ", deleted with it"
		}
	}
	sort.Slice(rep.Verdicts, func(i, j int) bool { return verdictLess(rep.Verdicts[i].Path, rep.Verdicts[j].Path) })
	if !o.DryRun {
		// The expiry record goes first, with every job id this run frees
		// of its last trace (the expired generations' writers, the
		// rejection and rollback records and the staging prefixes it
		// deletes): those ids stay taken.
		ids, err := writers(ctx, o.Store, expire)
		if err != nil {
			return rep, err
		}
		var recIDs []string
		for _, v := range recs {
			if v.Delete && !slices.Contains(recIDs, v.JobID) {
				recIDs = append(recIDs, v.JobID)
			}
		}
		// A staging prefix is the last trace of an attempt that failed
		// without a record (a crash, a lost lock, a changed input):
		// deleted, its id would publish again with exit 0.
		for _, v := range rep.Verdicts {
			rel, _ := strings.CutPrefix(v.Path, warehouse.StagingRoot+"/")
			id, ok := warehouse.StagingJobID(rel)
			if v.Delete && ok && !slices.Contains(ids, id) && !slices.Contains(recIDs, id) {
				recIDs = append(recIDs, id)
			}
		}
		if len(expire) > 0 || len(recIDs) > 0 {
			why := o.why()
			if len(expire) == 0 {
				// The retention rule expired nothing: citing it would read
				// as the reason these ids' traces went.
				why = fmt.Sprintf("records and staging named by no retained generation, idle over --min-age %s", o.MinAge)
			}
			e := history.Expiry{Generations: expire, JobIDs: ids, RecordJobIDs: recIDs, At: o.Now.UTC(), Reason: why, WriterVersion: o.WriterVersion}
			if err := history.RecordExpiry(ctx, o.Bucket, e, gen); err != nil {
				return rep, fmt.Errorf("gc: record expiry: %w", err)
			}
		}
		// Oldest first: a gc stopped half way leaves a history that is
		// still a contiguous run of the newest generations.
		for _, g := range expire {
			if err := o.Store.Expire(ctx, g); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			for i, v := range rep.Verdicts {
				if v.Path == fmt.Sprintf("%s%d.json", historyDir, g) {
					rep.Verdicts[i].Done = true
				}
			}
		}
	}
	if o.DryRun {
		return rep, nil
	}
	var deleted []string
	// A marker sorts before its prefix: deleted first on its own, a gc
	// stopped between left the prefix with neither its marker nor (an
	// interrupted delete goes in key order) its _attempt.json, kept by
	// every later gc as "inspect by hand".
	defer func() {
		for i, v := range rep.Verdicts {
			if v.with != "" {
				rep.Verdicts[i].Done = slices.Contains(deleted, v.with)
			}
		}
	}()
	for i, v := range rep.Verdicts {
		if !v.Delete || v.with != "" {
			continue
		}
		if strings.HasPrefix(v.Path, warehouse.StagingRoot+"/") && !strings.Contains(v.Path, deletingPrefix) {
			// Without a lock a rollback may have recorded this prefix since
			// it was judged: it is about to name it again.
			now, err := rollbacksInUse(ctx, o)
			if err != nil {
				return rep, err
			}
			if by := now[v.Path]; by != "" {
				rep.Verdicts[i] = Verdict{Path: v.Path, Reason: by}
				continue
			}
		}
		switch {
		case strings.HasPrefix(v.Path, historyDir):
			continue // expired above, before anything was judged against it
		case strings.HasPrefix(v.Path, warehouse.RejectionsRoot+"/"), strings.HasPrefix(v.Path, warehouse.RollbacksRoot+"/"),
			strings.HasPrefix(v.Path, warehouse.ProbeRoot+"/"):
			if err := o.Bucket.Delete(ctx, v.Path); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
			rep.Verdicts[i].Done = true
			continue
		}
		if a, ok := o.Bucket.(storage.UploadAborter); ok && v.uploadsOf != "" {
			if err := a.AbortUploads(ctx, v.uploadsOf); err != nil {
				return rep, fmt.Errorf("gc: %w", err)
			}
		}
		gone, marked, err := remove(ctx, o.Bucket, v.Path)
		if gone {
			rep.Verdicts[i].Done = true
			deleted = append(deleted, v.Path)
		}
		rep.Verdicts[i].Marked = marked && !gone
		if err != nil {
			return rep, err
		}
	}
	// Under a lock nothing can have moved; without one, a publisher may
	// have named a prefix between the read and the delete. Say so loudly.
	after, _, err := referenced(ctx, o.Store, nil)
	if err != nil {
		return rep, fmt.Errorf("gc: deleted %d prefixes, then could not check that no publisher named one meanwhile: %w", len(deleted), err)
	}
	for _, p := range deleted {
		if after[p] != "" {
			return rep, fmt.Errorf("gc: %s was deleted but %s now names it: a publish or a rollback raced gc (on S3, where no lock keeps them apart): readers of its dates fail; publish them again with a new job id", p, after[p])
		}
	}
	// Likewise a rollback whose record was written while its prefix was
	// being deleted (the check before each delete is not the delete).
	if len(deleted) > 0 {
		recorded, err := rollbacksInUse(ctx, o)
		if err != nil {
			return rep, fmt.Errorf("gc: deleted %d prefixes, then could not check that no rollback named one meanwhile: %w", len(deleted), err)
		}
		for _, p := range deleted {
			if by := recorded[p]; by != "" {
				return rep, fmt.Errorf("gc: %s was deleted but it is %s: a rollback raced gc; if it landed, publish its dates again with a new job id", p, by)
			}
		}
	}
	return rep, nil
}

// rollbacksInUse maps each staging prefix that a rollback record younger
// than MinAge names to why it is kept: that rollback checked (or is about
// to check) the prefix's files and will name them.
func rollbacksInUse(ctx context.Context, o Options) (map[string]string, error) {
	files, _, err := o.Bucket.ListDir(ctx, warehouse.RollbacksRoot)
	if storage.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gc: list %s: %w", o.Bucket.Location().Join(warehouse.RollbacksRoot), err)
	}
	out := map[string]string{}
	for _, f := range files {
		if _, rec := warehouse.RecordJobID(path.Base(f.Key)); f.Link || o.Now.Sub(f.ModTime) >= o.MinAge || !rec {
			// An operator's notes beside the records are no record:
			// judgeRecords reports them, and they name no prefix.
			continue
		}
		data, _, err := o.Bucket.Get(ctx, f.Key)
		if err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
		var rec history.Record
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("gc: read %s: %w", o.Bucket.Location().Join(f.Key), err)
		}
		for _, p := range rec.Prefixes {
			out[p] = fmt.Sprintf("named by rollback %s (to generation %d), recorded %s ago", rec.JobID, rec.ToGeneration, o.Now.Sub(f.ModTime).Round(time.Second))
		}
	}
	return out, nil
}

// referenced maps every staging prefix that the current pointer or any
// retained history generation names (by job id or by a file path) to the
// first generation naming it. Every generation in the history is retained:
// a reader may still hold any of them. An unreadable generation stops gc,
// since what it names is then unknown.
func referenced(ctx context.Context, s pointer.Store, expired []int64) (map[string]string, int64, error) {
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
			for _, prefix := range history.Prefixes(e) {
				mark(prefix)
			}
		}
	}
	add(cur, fmt.Sprintf("the current pointer (generation %d)", cur.Generation))
	var lastRead int64 // the newest generation read so far, 0 before one was
	for _, g := range gens {
		if slices.Contains(expired, g) {
			continue // a dry run judges as if it were gone
		}
		p, err := s.LoadGeneration(ctx, g)
		if errors.Is(err, fs.ErrNotExist) && lastRead == 0 {
			continue // expired since it was listed (gc expires the oldest first)
		}
		if errors.Is(err, fs.ErrNotExist) {
			// gc expires the oldest first: g went only if the one read
			// just before it went too (another gc expiring both; no lock
			// on S3). Otherwise it was not expired, and a store that
			// answered "not found" for a moment must not have gc delete
			// what g names: it is asked again first.
			if p, err = s.LoadGeneration(ctx, g); errors.Is(err, fs.ErrNotExist) {
				if _, again := s.LoadGeneration(ctx, lastRead); errors.Is(again, fs.ErrNotExist) {
					continue
				}
				return nil, 0, fmt.Errorf("gc: history generation %d was listed but reads as not found while the older generation %d is retained (gc expires the oldest first): run gc again, and if it stays, see the runbook on a history copy removed by hand: %w", g, lastRead, err)
			}
		}
		if err != nil {
			return nil, 0, fmt.Errorf("gc: read history generation %d: %w", g, err)
		}
		add(p, fmt.Sprintf("history generation %d", g))
		lastRead = g
	}
	return named, cur.Generation, nil
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
	if _, ok := markerOf(name); ok {
		return Verdict{Path: rel, Delete: true, Reason: "a directory an older gc renamed its prefix to before deleting it"}
	}
	id, ok := warehouse.StagingJobID(name)
	if !ok {
		return keep("not a job_id=<id> staging prefix")
	}
	if by := named[rel]; by != "" {
		return keep("named by %s", by)
	}
	objs, err := o.Bucket.List(ctx, rel+"/")
	if err != nil {
		return keep("cannot be listed in full (%v): not judged, inspect by hand", err)
	}
	var newest time.Time
	b, _, err := o.Bucket.Get(ctx, warehouse.AttemptPath(id))
	switch {
	case marked && storage.IsNotExist(err):
		// An interrupted gc deleted the record first; the files' times
		// still tell an idle prefix from one an attempt writes to.
	case err != nil:
		return keep("no readable _attempt.json (%v): not judged, inspect by hand", err)
	default:
		var a attempt
		if err := json.Unmarshal(b, &a); err != nil || a.StartedAt.IsZero() || a.JobID != id {
			return keep("_attempt.json does not record job_id %q and a start time: not judged, inspect by hand", id)
		}
		newest = a.StartedAt
	}
	for _, obj := range objs {
		if obj.ModTime.After(newest) {
			newest = obj.ModTime
		}
	}
	idle := o.Now.Sub(newest)
	if idle < o.MinAge {
		return keep("last activity %s ago, younger than --min-age %s: the attempt may still be running", idle.Round(time.Second), o.MinAge)
	}
	why := fmt.Sprintf("named by no retained generation, idle %s", idle.Round(time.Second))
	if marked {
		why += "; an interrupted gc had begun deleting it"
	}
	return Verdict{Path: rel, Delete: true, Bytes: total(objs), Objects: keys(objs), Reason: why}
}

// verdictLess orders verdicts by path, history copies by generation
// (pointer-history/2.json before 10.json, as they expire).
func verdictLess(a, b string) bool {
	ga, okA := historyGeneration(a)
	gb, okB := historyGeneration(b)
	if okA && okB {
		return ga < gb
	}
	return a < b
}

func historyGeneration(p string) (int64, bool) {
	n, ok := strings.CutPrefix(p, historyDir)
	if !ok {
		return 0, false
	}
	n, ok = strings.CutSuffix(n, ".json")
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(n, 10, 64)
	return g, err == nil
}
