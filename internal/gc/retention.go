package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Retention: which history generations expire, the expiry record's job
// ids and reason, and the rejection and rollback records that go with them.

const historyDir = "pointer-history/"

// writers are the job ids that wrote generations gs, for the expiry
// record: an id stays taken after its generation is gone.
func writers(ctx context.Context, s pointer.Store, gs []int64) ([]string, error) {
	var ids []string
	for _, g := range gs {
		p, err := s.LoadGeneration(ctx, g)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("gc: read history generation %d: %w", g, err)
		}
		if !slices.Contains(ids, p.UpdatedByJobID) {
			ids = append(ids, p.UpdatedByJobID)
		}
	}
	return ids, nil
}

// why is the expiry record's reason: the rules the run applied.
func (o Options) why() string {
	var parts []string
	if o.RetainGenerations > 0 {
		parts = append(parts, fmt.Sprintf("--retain-generations %d", o.RetainGenerations))
	}
	if o.RetainFor > 0 {
		// Ten digits drop the float noise of a Duration read back as days
		// (0.1 printed as 0.09999999999999999 in the record).
		parts = append(parts, fmt.Sprintf("--retain-days %.10g", o.RetainFor.Hours()/24))
	}
	return "beyond " + strings.Join(parts, " and ")
}

// planExpiry decides which history generations expire: only with a
// retention rule, only older than the current generation (and than
// anything beyond it, which an interrupted write may still need), only
// older than MinAge (a publish confirming its write may be following the
// chain through them), and only a run of the oldest: once one is kept,
// every newer one is, so the history stays one contiguous chain.
func planExpiry(ctx context.Context, o Options) ([]int64, []Verdict, error) {
	if !o.retention() {
		return nil, nil, nil
	}
	cur, _, err := o.Store.Load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("gc: load pointer: %w", err)
	}
	gens, err := o.Store.Generations(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("gc: list pointer history: %w", err)
	}
	left, err := readersLeft(ctx, o, cur, gens)
	if err != nil {
		return nil, nil, err
	}
	var expire []int64
	var verdicts []Verdict
	kept := ""
	for i, g := range gens {
		rel := fmt.Sprintf("%s%d.json", historyDir, g)
		reason := kept
		if reason == "" || g >= cur.Generation { // the current one is kept as such
			next := cur.Generation
			if i+1 < len(gens) && gens[i+1] < next {
				next = gens[i+1]
			}
			reason, err = keepGeneration(ctx, o, cur, g, next, left[g])
			if err != nil {
				return nil, nil, err
			}
		}
		if reason != "" {
			if kept == "" {
				kept = fmt.Sprintf("newer than the retained generation %d (history expires oldest first)", g)
			}
			verdicts = append(verdicts, Verdict{Path: rel, Reason: reason})
			continue
		}
		expire = append(expire, g)
		verdicts = append(verdicts, Verdict{Path: rel, Delete: true, Reason: fmt.Sprintf("generation %d expired: %s", g, o.why())})
	}
	return expire, verdicts, nil
}

// readersLeft gives, for each listed generation g below the current one,
// the store's time by which pointer.json had stopped naming g: the write
// of the copy after g's successor (a writer copies generation n+1 only
// while pointer.json names n), or, when the successor is the current
// generation or no such copy is listed, pointer.json's own last write.
// The successor's written_at alone is not that time: an interrupted write
// commits its generation without showing it, and the next publish rolls
// it forward days later, keeping the old written_at; and it is the
// writer's clock, which may run behind. Readers saw g until then.
func readersLeft(ctx context.Context, o Options, cur pointer.Pointer, gens []int64) (map[int64]time.Time, error) {
	ptr, err := o.Bucket.Stat(ctx, "pointer.json")
	if err != nil {
		return nil, fmt.Errorf("gc: read pointer.json: %w", err)
	}
	files, _, err := o.Bucket.ListDir(ctx, strings.TrimSuffix(historyDir, "/"))
	if err != nil && !storage.IsNotExist(err) {
		return nil, fmt.Errorf("gc: list %s: %w", o.Bucket.Location().Join(historyDir), err)
	}
	written := map[string]time.Time{}
	for _, f := range files {
		written[path.Base(f.Key)] = f.ModTime
	}
	left := map[int64]time.Time{}
	for i, g := range gens {
		if g >= cur.Generation {
			break
		}
		left[g] = ptr.ModTime
		// gens[i+1] is g's successor when below the current generation.
		if i+2 < len(gens) && gens[i+1] < cur.Generation && gens[i+2] <= cur.Generation {
			if t, ok := written[fmt.Sprintf("%d.json", gens[i+2])]; ok {
				left[g] = t
			}
		}
	}
	return left, nil
}

// keepGeneration returns why generation g is retained, or "" when it
// expires. next is the generation after it in the history (the current
// one at most). A reader may hold g until next replaced it, so g's age
// runs from the later of next's written_at and left (readersLeft), not
// from its own write: a generation current for a month is a second old
// when its successor has just been published.
func keepGeneration(ctx context.Context, o Options, cur pointer.Pointer, g, next int64, left time.Time) (string, error) {
	switch {
	case g == cur.Generation:
		return "the current generation", nil
	case g > cur.Generation:
		return "beyond the current generation (an interrupted write's copy, or what a pointer.json put back by hand left past it: engagement history says which)", nil
	case o.RetainGenerations > 0 && g > cur.Generation-int64(o.RetainGenerations):
		return fmt.Sprintf("within the %d newest generations", o.RetainGenerations), nil
	}
	succ := cur
	if next != cur.Generation {
		var err error
		succ, err = o.Store.LoadGeneration(ctx, next)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("its successor, generation %d, is gone since it was listed", next), nil
		}
		if err != nil {
			return "", fmt.Errorf("gc: read history generation %d: %w", next, err)
		}
	}
	replaced := succ.WrittenAt
	if left.After(replaced) {
		replaced = left
	}
	age := o.Now.Sub(replaced)
	switch {
	case succ.WrittenAt.IsZero() && o.RetainFor > 0 && o.RetainGenerations == 0:
		return fmt.Sprintf("its successor, generation %d, is format 1, which records no write time, so --retain-days cannot age it", next), nil
	case o.RetainFor > 0 && age < o.RetainFor:
		return fmt.Sprintf("replaced %s ago (generation %d), within --retain-days", age.Round(time.Second), next), nil
	case !replaced.IsZero() && age < o.MinAge:
		return fmt.Sprintf("replaced %s ago (generation %d), younger than --min-age %s", age.Round(time.Second), next, o.MinAge), nil
	}
	return "", nil
}

// judgeRecords decides the rejection and rollback records, under retention
// only: a rejection record goes once idle for MinAge (a rejected job is
// never named by a generation); a rollback record once idle for MinAge and
// its rollback is named by no retained generation.
func judgeRecords(ctx context.Context, o Options, named map[string]string) ([]Verdict, error) {
	var out []Verdict
	for _, root := range []string{warehouse.RejectionsRoot, warehouse.RollbacksRoot} {
		files, _, err := o.Bucket.ListDir(ctx, root)
		if storage.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("gc: list %s: %w", o.Bucket.Location().Join(root), err)
		}
		for _, f := range files {
			name := path.Base(f.Key)
			id, ok := warehouse.RecordJobID(name)
			idle := o.Now.Sub(f.ModTime)
			switch {
			case f.Link:
				out = append(out, Verdict{Path: f.Key, Reason: "a symlink, never followed or deleted"})
			case !ok:
				out = append(out, Verdict{Path: f.Key, Reason: "not a job_id=<id>.json record"})
			case named[warehouse.StagingDir(id)] != "":
				out = append(out, Verdict{Path: f.Key, Reason: "its job is named by " + named[warehouse.StagingDir(id)]})
			case idle < o.MinAge:
				out = append(out, Verdict{Path: f.Key, Reason: fmt.Sprintf("written %s ago, younger than --min-age %s", idle.Round(time.Second), o.MinAge)})
			default:
				out = append(out, Verdict{Path: f.Key, Delete: true, Bytes: f.Size, Objects: []string{f.Key}, JobID: id,
					Reason: fmt.Sprintf("a record of job %s, named by no retained generation, idle %s", id, idle.Round(time.Second))})
			}
		}
	}
	return out, nil
}
