package history

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// Rollback is one request to put dates back to an older generation.
type Rollback struct {
	Bucket storage.Bucket // the warehouse
	Store  pointer.Store  // the pointer on it
	Dates  []dates.Date
	To     int64 // the retained generation whose entries come back
	JobID  string
	// Now, Clock and WriterVersion are read by the command, never in a
	// transform. Now is when it started (the record's started_at); Clock,
	// when set, is read again for the generation's written_at just before
	// the swap, after the file checks, which on a bucket take a while
	// (Now when nil).
	Now           time.Time
	Clock         func() time.Time
	WriterVersion string
}

// ErrLanded begins the error of a rollback that moved the pointer and then
// found its files changed (a gc raced it) or could not look: exit 1, the
// outcome decided, whatever signal follows.
var ErrLanded = errors.New("rollback: landed")

// Record is the content of rollbacks/job_id=<id>.json.
type Record struct {
	JobID          string    `json:"job_id"`
	ToGeneration   int64     `json:"to_generation"`
	FromGeneration int64     `json:"from_generation"` // the current one when it started
	Dates          []string  `json:"dates"`
	Prefixes       []string  `json:"staging_prefixes"` // what the restored entries name
	StartedAt      time.Time `json:"started_at"`
	WriterVersion  string    `json:"writer_version"`
}

// Run writes a new generation whose entries for r.Dates are generation
// r.To's, byte for byte, through the same compare-and-swap as a publish.
// Before it moves anything it refuses (exit 2) a generation that is not
// retained, a date r.To does not hold and any file r.To names that is
// missing or has another size; a job id already named is exit 4. If a
// publish or another rollback changes one of r.Dates after Run read the
// pointer, Run writes nothing and returns an error wrapping
// pointer.ErrRaced.
func (r Rollback) Run(ctx context.Context) (pointer.Outcome, error) {
	if err := config.CheckJobID(r.JobID); err != nil {
		return pointer.Outcome{}, err
	}
	if len(r.Dates) == 0 {
		return pointer.Outcome{}, exitcode.UsageError(errors.New("rollback: --date: name at least one date"))
	}
	published, err := pointer.JobPublished(ctx, r.Store, r.JobID)
	if err != nil {
		return pointer.Outcome{}, fmt.Errorf("rollback: check job id %s: %w", r.JobID, err)
	}
	if published {
		return pointer.Outcome{}, exitcode.PublishedError(r.publishedError(ctx))
	}
	if err := r.unusedByAttempts(ctx); err != nil {
		return pointer.Outcome{}, err
	}
	cur, _, err := r.Store.Load(ctx)
	if err != nil {
		return pointer.Outcome{}, fmt.Errorf("rollback: %w", err)
	}
	if err := pointer.OwnCopy(ctx, r.Store, cur, warehouse.Witness(r.Bucket)); err != nil {
		return pointer.Outcome{}, fmt.Errorf("rollback: %w", err)
	}
	// Before the record, which would take the job id for nothing.
	if err := pointer.Refused(ctx, r.Store); err != nil {
		return pointer.Outcome{}, fmt.Errorf("rollback: %w", err)
	}
	// A write interrupted after its history copy (the commit) has happened:
	// the rollback starts from it, as the swap will once it rolls it forward.
	visible := cur
	if g := pointer.Committed(ctx, r.Store, cur); g != cur.Generation {
		if cur, err = r.Store.LoadGeneration(ctx, g); err != nil {
			return pointer.Outcome{}, fmt.Errorf("rollback: %w", err)
		}
	}
	src, err := r.source(ctx, cur, visible.Generation)
	if err != nil {
		return pointer.Outcome{}, err
	}
	entries := map[dates.Date]pointer.DateEntry{}
	same := 0
	for _, d := range r.Dates {
		e, ok := src.Dates[d]
		if !ok {
			return pointer.Outcome{}, exitcode.UsageError(fmt.Errorf("rollback: generation %d does not hold date %s (it holds %s)", r.To, d, heldDates(src)))
		}
		entries[d] = e
		ce, inCur := cur.Dates[d]
		ve, inVisible := visible.Dates[d]
		if inCur && inVisible && pointer.SameEntry(ce, e) && pointer.SameEntry(ve, e) {
			same++
		}
	}
	// Nothing to do only when readers see these entries and an
	// interrupted write, once rolled forward, keeps them. A killed
	// rollback run again (the runbook's remedy) goes on: readers still see
	// the old data, and its write rolls the committed one forward, where
	// "nothing to roll back" left them there.
	if same == len(r.Dates) {
		return pointer.Outcome{}, exitcode.UsageError(fmt.Errorf("rollback: dates %s already hold generation %d's entries in the current generation %d: nothing to roll back",
			strings.Join(dates.Strings(r.Dates), ","), r.To, cur.Generation))
	}
	// The record goes first, so that gc, which keeps what a recent record
	// names, cannot delete a file between the check below and the swap.
	if err := r.record(ctx, cur.Generation, entries); err != nil {
		return pointer.Outcome{}, err
	}
	if err := checkFiles(ctx, r.Bucket, r.To, entries); err != nil {
		// The record stays (gc keeps the files it names), and with it the
		// job id: a rerun of the same command would be refused for the id.
		return pointer.Outcome{}, fmt.Errorf("%w; job id %s is now taken by its record %s: rerun with a new job id",
			err, r.JobID, r.Bucket.Location().Join(warehouse.RollbackPath(r.JobID)))
	}
	base := map[dates.Date]pointer.DateEntry{}
	for _, d := range r.Dates {
		base[d] = cur.Dates[d]
	}
	baseGen := cur.Generation
	written := r.Now
	if r.Clock != nil {
		written = r.Clock()
	}
	out, err := pointer.PublishOutcome(ctx, r.Store, pointer.Commit{
		JobID: r.JobID, Entries: entries, WrittenAt: written.UTC(), WriterVersion: r.WriterVersion,
		Operation: pointer.OpRollback, Source: r.To,
		Check: func(now pointer.Pointer) error {
			if now.Generation < baseGen {
				// pointer.json still behind the committed generation the
				// rollback started from: the swap rolls it forward first.
				return nil
			}
			if err := pointer.TakenSince(ctx, r.Store, baseGen, now, r.JobID, pointer.OpRollback); err != nil {
				return err
			}
			for _, d := range r.Dates {
				if !pointer.SameEntry(now.Dates[d], base[d]) {
					return fmt.Errorf("%w: date %s changed after the rollback read generation %d (now generation %d, job %s); nothing of the rollback was written: "+
						"check `engagement history --date %s` and run the rollback again with a new job id if it is still wanted",
						pointer.ErrRaced, d, baseGen, now.Generation, now.Dates[d].JobID, d)
				}
			}
			return nil
		},
	})
	if err != nil && !errors.Is(err, pointer.ErrRaced) && !errors.Is(err, pointer.ErrJobIDTaken) && !errors.Is(err, pointer.ErrNotVisible) {
		// Past its record the id is spent, whatever failed: a rerun of the
		// same command would be refused for it.
		err = fmt.Errorf("rollback: %w; job id %s stays taken by its record %s: a rerun needs a new job id",
			err, r.JobID, r.Bucket.Location().Join(warehouse.RollbackPath(r.JobID)))
		if errors.Is(err, storage.ErrRefused) && exitcode.Code(err) == exitcode.Usage {
			// The store's refusal (credentials rotated since the record)
			// is no usage error here: the generation may be committed.
			err = exitcode.FailedError(err)
		}
		return out, err
	}
	if err != nil {
		return out, fmt.Errorf("rollback: %w", err)
	}
	// Without a lock (S3) a gc that read no record of this rollback yet
	// may have deleted the files between the check above and the swap:
	// readers would now fail on the dates, with exit 0. Look again.
	// Landed: the outcome stands whatever comes now, a signal included,
	// so the look is not cancelled with the command. Not bounded either:
	// it takes a request a file, and a bound failed healthy rollbacks of
	// many files; a second signal still ends the process at once.
	switch bad, err := badFiles(context.WithoutCancel(ctx), r.Bucket, r.To, entries); {
	case err != nil:
		return out, fmt.Errorf("%w as generation %d, but its files could not be checked again (check `engagement status --date` of each date): %w", ErrLanded, out.Pointer.Generation, err)
	case bad != "":
		return out, fmt.Errorf("%w as generation %d, but a gc deleted or changed files it names meanwhile: %s: readers of %s fail; publish them again with a new job id",
			ErrLanded, out.Pointer.Generation, bad, strings.Join(dates.Strings(r.Dates), ","))
	}
	return out, nil
}

// source loads the generation to go back to, refusing one that is not
// (or not yet, or no longer) retained. cur is the newest committed
// generation; readers may still see an older one, visible (an interrupted
// write the next one rolls forward), which the refusals then name, as
// status and history do.
func (r Rollback) source(ctx context.Context, cur pointer.Pointer, visible int64) (pointer.Pointer, error) {
	pending := ""
	if visible != cur.Generation {
		pending = fmt.Sprintf(" (committed by an interrupted write; readers see generation %d until the next write rolls it forward)", visible)
	}
	switch {
	case r.To < 1:
		return pointer.Pointer{}, exitcode.UsageError(fmt.Errorf("rollback: --to-generation %d: generations start at 1", r.To))
	case r.To > cur.Generation:
		return pointer.Pointer{}, exitcode.UsageError(fmt.Errorf("rollback: --to-generation %d: the warehouse is at generation %d%s", r.To, cur.Generation, pending))
	case r.To == cur.Generation:
		return pointer.Pointer{}, exitcode.UsageError(fmt.Errorf("rollback: --to-generation %d is the current generation%s: nothing to roll back", r.To, pending))
	}
	src, err := r.Store.LoadGeneration(ctx, r.To)
	if errors.Is(err, fs.ErrNotExist) {
		return pointer.Pointer{}, exitcode.UsageError(fmt.Errorf("rollback: --to-generation %d is not retained (expired by gc or never kept); `engagement history` lists the retained ones", r.To))
	}
	if err != nil {
		return pointer.Pointer{}, fmt.Errorf("rollback: read generation %d: %w", r.To, err)
	}
	if err := r.intact(ctx, cur, src); err != nil {
		return pointer.Pointer{}, err
	}
	return src, nil
}

// intact refuses a history copy changed after it was written: its
// successor recorded its bytes' digest as its parent, and a rollback
// copies its entries byte for byte, so an edited copy (figures, or file
// paths pointing at a rejected attempt's staging) would be published as
// the generation it claims to be. The successor is only as good as its own
// successor's record of it, so every link is checked, from the current
// generation down to src: a copy edited together with its successor's
// parent field passed a check of one link, and an edited parent field
// blamed the intact copy below it. Walking down, the first link that does
// not hold names the file changed. A generation without a parent (format
// 1) ends the chain: below it, each date rolled back is checked against
// what its job staged instead (its gate report's figures and rows, its
// attempt's pins, its own files): a copy edited there published another
// date's rows under the date with exit 0.
func (r Rollback) intact(ctx context.Context, cur, src pointer.Pointer) error {
	child := cur
	for child.Generation > src.Generation && child.Parent != nil {
		g := child.Generation - 1
		parent := src
		if g != src.Generation {
			var err error
			parent, err = r.Store.LoadGeneration(ctx, g)
			if errors.Is(err, fs.ErrNotExist) {
				return exitcode.UsageError(fmt.Errorf("rollback: --to-generation %d cannot be checked: generation %d, on the chain that records its digest, is not retained (pointer-history/%d.json is gone); "+
					"restore it from a backup to roll back to %d, or pick another generation from engagement history", r.To, g, g, r.To))
			}
			if err != nil {
				return fmt.Errorf("rollback: read generation %d: %w", g, err)
			}
		}
		if !child.NamesParent(parent) {
			return exitcode.UsageError(fmt.Errorf("rollback: pointer-history/%d.json is not the generation %d was written on (its sha256 %s, recorded as parent %d %s): "+
				"it was changed after it was written; nothing was changed. Restore it, or roll back to a generation above it",
				g, child.Generation, parent.Digest, child.Parent.Generation, child.Parent.SHA256))
		}
		child = parent
	}
	if child.Generation == src.Generation {
		return nil
	}
	witness := warehouse.Witness(r.Bucket)
	for _, d := range r.Dates {
		e, ok := src.Dates[d]
		if !ok {
			continue
		}
		// Its files first, as above the boundary: a file deleted or
		// replaced is no edit of the copy, and sent the operator to
		// restore an intact file.
		if err := checkFiles(ctx, r.Bucket, r.To, map[dates.Date]pointer.DateEntry{d: e}); err != nil {
			return err
		}
		why, err := witness(ctx, d, e)
		if err != nil {
			err = fmt.Errorf("rollback: --to-generation %d is below generation %d, written with no parent digest (format 1), so its %s entry is checked against what job %s staged, and that check failed: %w",
				r.To, child.Generation, d, e.JobID, err)
			if storage.IsNotExist(err) {
				// A record of the job gone: every retry meets it.
				err = exitcode.UsageError(err)
			}
			return err
		}
		if why != "" {
			return exitcode.UsageError(fmt.Errorf("rollback: pointer-history/%d.json's %s entry disagrees with what job %s staged: %s: "+
				"it was changed after it was written (generation %d, written with no parent digest, cannot vouch for it); nothing was changed. Restore it, or roll back to a generation above it",
				r.To, d, e.JobID, why, child.Generation))
		}
	}
	return nil
}

// unusedByAttempts refuses a job id that a publish attempt already took (a
// staging prefix), or that a record names (a rejection, a rollback, a
// generation gc expired): every job id names one operation, and an attempt
// in flight would otherwise publish under the rollback's id too.
func (r Rollback) unusedByAttempts(ctx context.Context) error {
	// The records first, as publish: while a gc expires a generation, its
	// expiry record (exit 4) is there before its staging goes.
	if err := CheckRecords(ctx, r.Bucket, r.JobID); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	objs, err := r.Bucket.List(ctx, warehouse.StagingDir(r.JobID)+"/")
	if err != nil {
		return fmt.Errorf("rollback: check job id %s: %w", r.JobID, err)
	}
	if len(objs) > 0 {
		return exitcode.UsageError(fmt.Errorf("rollback: job id %s was taken by a publish attempt (its staging prefix exists): use a new job id", r.JobID))
	}
	return nil
}

func (r Rollback) record(ctx context.Context, from int64, entries map[dates.Date]pointer.DateEntry) error {
	rec := Record{JobID: r.JobID, ToGeneration: r.To, FromGeneration: from, Dates: dates.Strings(r.Dates),
		StartedAt: r.Now.UTC(), WriterVersion: r.WriterVersion}
	for _, e := range entries {
		rec.Prefixes = append(rec.Prefixes, Prefixes(e)...)
	}
	slices.Sort(rec.Prefixes)
	rec.Prefixes = slices.Compact(rec.Prefixes)
	ctx, unlock, err := lock(ctx, r.Bucket)
	if err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	defer unlock()
	err = warehouse.WriteJSON(ctx, r.Bucket, warehouse.RollbackPath(r.JobID), rec, storage.Cond{IfAbsent: true})
	if errors.Is(err, storage.ErrPrecondition) {
		return exitcode.UsageError(fmt.Errorf("rollback: job id %s already has a rollback record %s: use a new job id", r.JobID, warehouse.RollbackPath(r.JobID)))
	}
	return err
}

// lock holds the bucket's writers still where it can (a local warehouse):
// gc decides under the same lock, so the record lands wholly before or
// wholly after a gc's decisions.
func lock(ctx context.Context, b storage.Bucket) (context.Context, func(), error) {
	if l, ok := b.(storage.Locker); ok {
		return l.Lock(ctx)
	}
	return ctx, func() {}, nil
}

// Prefixes returns the staging prefixes an entry's files and gate report
// lie in.
func Prefixes(e pointer.DateEntry) []string {
	var out []string
	for _, f := range slices.Concat(e.FactFiles, e.CourseDayFiles) {
		out = append(out, prefixOf(f.Path))
	}
	if e.GateReport != "" {
		out = append(out, prefixOf(e.GateReport))
	}
	slices.Sort(out)
	return slices.Compact(out)
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

// checkFiles proves every file the entries name is there with the size
// recorded, and every gate report is there: a rollback that named a
// deleted file would publish a hole.
func checkFiles(ctx context.Context, b storage.Bucket, gen int64, entries map[dates.Date]pointer.DateEntry) error {
	bad, err := badFiles(ctx, b, gen, entries)
	if err != nil || len(bad) == 0 {
		return err
	}
	return exitcode.UsageError(fmt.Errorf("rollback: generation %d names files that are not as it recorded them, nothing was changed: %s", gen, bad))
}

// badFiles lists (the first five of) the files and gate reports the
// entries name that are missing or not of their recorded size; "" when
// none is.
func badFiles(ctx context.Context, b storage.Bucket, gen int64, entries map[dates.Date]pointer.DateEntry) (string, error) {
	var bad []string
	ds := make([]dates.Date, 0, len(entries))
	for d := range entries {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	for _, d := range ds {
		e := entries[d]
		mismatched, err := warehouse.CheckFiles(ctx, b, slices.Concat(e.FactFiles, e.CourseDayFiles))
		if err != nil {
			return "", fmt.Errorf("rollback: %w", err)
		}
		for _, m := range mismatched {
			switch {
			case m.Missing:
				bad = append(bad, fmt.Sprintf("%s: missing", m.File.Path))
			case m.Size != m.File.Bytes:
				bad = append(bad, fmt.Sprintf("%s: %d bytes, generation %d recorded %d", m.File.Path, m.Size, gen, m.File.Bytes))
			case m.Footer != nil:
				bad = append(bad, fmt.Sprintf("%s: %s", m.File.Path, m.Why()))
			default:
				bad = append(bad, fmt.Sprintf("%s: holds %d rows, generation %d recorded %d", m.File.Path, m.Rows, gen, m.File.Rows))
			}
		}
		if e.GateReport != "" {
			if _, err := b.Stat(ctx, e.GateReport); storage.IsNotExist(err) {
				bad = append(bad, fmt.Sprintf("%s: missing", e.GateReport))
			} else if err != nil {
				return "", fmt.Errorf("rollback: check %s: %w", b.Location().Join(e.GateReport), err)
			}
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	more := ""
	if len(bad) > 5 {
		more = fmt.Sprintf(" and %d more", len(bad)-5)
		bad = bad[:5]
	}
	return strings.Join(bad, "; ") + more, nil
}

func heldDates(p pointer.Pointer) string {
	ds := sortedDates(p)
	if len(ds) == 0 {
		return "no dates"
	}
	return strings.Join(dates.Strings(ds), ",")
}

// publishedError words a rollback job id already taken. Taken by this
// rollback's own write, stopped after its commit (killed between its
// history copy and pointer.json), it says so, as publish does: the bare
// "already named" left an operator thinking the rollback had not happened
// while readers still saw the data it rolls back.
func (r Rollback) publishedError(ctx context.Context) error {
	if cur, _, err := r.Store.Load(ctx); err == nil && !pointer.Names(cur, r.JobID) {
		if g := pointer.Committed(ctx, r.Store, cur); g > cur.Generation {
			if committed, err := r.Store.LoadGeneration(ctx, g); err == nil && pointer.Names(committed, r.JobID) {
				return fmt.Errorf("rollback: job id %s is already written as generation %d (pointer-history/%d.json), which pointer.json does not show yet: its write stopped after the commit; "+
					"the next publish or rollback of any date (with a new job id) rolls pointer.json forward to it, and readers see it then", r.JobID, g, g)
			}
		}
	}
	return fmt.Errorf("rollback: job id %s is already named by the pointer or its history: use a new job id", r.JobID)
}
