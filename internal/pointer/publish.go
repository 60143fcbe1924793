package pointer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"slices"
	"time"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// maxPublishAttempts bounds the conflict retries of Publish. Every conflict
// means another writer moved the pointer, so with N concurrent publishers a
// job waits for at most N-1 others; 256 covers far more concurrent jobs than
// a warehouse ever sees (the suites run 64 at once) while still ending a
// livelock.
const maxPublishAttempts = 256

// Commit is one change of the pointer: a job's entries for its dates, and
// what the new generation records about its making. WrittenAt and
// WriterVersion come from the command (its clock, its build), never from a
// transform.
type Commit struct {
	JobID         string
	Entries       map[dates.Date]DateEntry
	WrittenAt     time.Time
	WriterVersion string
	Operation     string // OpPublish when empty
	// Source is the generation a rollback copies its entries from.
	Source int64
	// Check, when set, is asked before every merge whether c may still be
	// made on top of cur; its error ends the publish, nothing written. It
	// is how a rollback and a publish of the same date exclude each other
	// (ErrRaced) instead of the later silently undoing the earlier.
	Check func(cur Pointer) error
}

// ErrRaced: another operation changed one of this one's dates after it read
// the pointer, in a way this one must not silently undo (a rollback
// against a publish of the same date). Nothing of this operation was
// written. It is exitcode's sentinel (exit 6), so that no retry repeats it.
var ErrRaced = exitcode.ErrRaced

// NoRollbackSince is the Check of a publish that read generation base
// before it began: it refuses once a rollback written after base has
// changed one of ds, since publishing over it would undo an operator's
// decision made while the job ran.
func NoRollbackSince(ctx context.Context, s Store, base int64, ds []dates.Date) func(cur Pointer) error {
	return func(cur Pointer) error {
		return eachSince(ctx, s, base, cur, "check for a rollback", func(h Pointer) error {
			if h.Operation != OpRollback {
				return nil
			}
			for _, d := range ds {
				if _, ok := h.Dates[d]; !ok {
					continue
				}
				if changed, err := touched(ctx, s, h, d); err != nil {
					return err
				} else if changed {
					return fmt.Errorf("%w: generation %d (job %s) rolled %s back to generation %d after this job read generation %d; "+
						"nothing of this job was written: check `engagement history --date %s`, then rerun with a new job id if the rollback should be replaced",
						ErrRaced, h.Generation, h.UpdatedByJobID, d, h.SourceGeneration, base, d)
				}
			}
			return nil
		})
	}
}

// ErrJobIDTaken is TakenSince's refusal: a job id already published
// (exit 4). Its other errors (a history copy that could not be read) are
// failures to retry.
var ErrJobIDTaken = exitcode.ErrAlreadyPublished

// TakenSince refuses a generation after base, up to cur, that an operation
// other than op wrote under jobID: a publish and a rollback given one job
// id, racing, each of which checked the id before the other had taken it.
// Each job id names one operation; the refusal is ErrJobIDTaken.
func TakenSince(ctx context.Context, s Store, base int64, cur Pointer, jobID, op string) error {
	return eachSince(ctx, s, base, cur, "check job id "+jobID, func(h Pointer) error {
		if h.UpdatedByJobID == jobID && h.Operation != op {
			return exitcode.PublishedError(fmt.Errorf("job id %s was taken by generation %d (a %s) while this %s ran; nothing of this %s was written: rerun it with a new job id",
				jobID, h.Generation, h.Operation, op, op))
		}
		return nil
	})
}

// eachSince calls fn on every retained generation after base up to cur
// (cur itself as given), oldest first, until fn fails. Generations no
// longer retained are skipped: expiry keeps the newest ones, which are the
// ones that matter.
func eachSince(ctx context.Context, s Store, base int64, cur Pointer, why string, fn func(Pointer) error) error {
	for g := base + 1; g <= cur.Generation; g++ {
		h := cur
		if g < cur.Generation {
			var err error
			if h, err = s.LoadGeneration(ctx, g); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return fmt.Errorf("read generation %d to %s: %w", g, why, err)
			}
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// Pender is a Store that can say, writing nothing, what its next Swap
// would find past pointer.json: nil when nothing, the copy an interrupted
// Swap left (which it would roll forward), or the error wrapping
// ErrBrokenChain it would refuse with (objstore.Store).
type Pender interface {
	Pending(ctx context.Context) (*Pointer, error)
}

// Refused is the error, wrapping ErrBrokenChain, that the next Swap of s
// would refuse with (a pointer.json put back by hand), or nil. Publish and
// rollback ask it before any work: a swap refused after an hour of
// staging would only be retried, and refused again.
func Refused(ctx context.Context, s Store) error {
	pd, ok := s.(Pender)
	if !ok {
		return nil
	}
	if _, err := pd.Pending(ctx); errors.Is(err, ErrBrokenChain) {
		return err
	}
	return nil
}

// Committed is the newest generation committed when base was read from
// pointer.json: base's own, or the true successor an interrupted write
// left in the history (its history copy is the commit, and the next swap
// rolls it forward). A publish checks for rollbacks after this one, not
// after base. A failed read gives base: refusing is the safe answer.
func Committed(ctx context.Context, s Store, base Pointer) int64 {
	if h, err := s.LoadGeneration(ctx, base.Generation+1); err == nil && Successor(base, h) {
		return h.Generation
	}
	return base.Generation
}

// touched reports whether generation h changed date d from its parent. A
// parent no longer retained counts as a change: refusing is the safe
// answer. A parent that could not be read is an error: refused as a race
// (exit 6, not retried), a rollback of another date would fail the DAG
// run for a moment's read error.
func touched(ctx context.Context, s Store, h Pointer, d dates.Date) (bool, error) {
	if h.Generation <= 1 {
		return true, nil
	}
	parent, err := s.LoadGeneration(ctx, h.Generation-1)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read generation %d to check for a rollback: %w", h.Generation-1, err)
	}
	return !SameEntry(parent.Dates[d], h.Dates[d]), nil
}

// SameEntry reports whether two date entries are equal field by field,
// file lists included: the same published bytes with the same figures.
func SameEntry(a, b DateEntry) bool {
	return a.JobID == b.JobID && a.ManifestID == b.ManifestID && a.EnrollmentSnapshotID == b.EnrollmentSnapshotID &&
		a.EventCount == b.EventCount && a.UnknownLessonCount == b.UnknownLessonCount &&
		a.UnknownLessonRate == b.UnknownLessonRate && a.GateReport == b.GateReport &&
		slices.Equal(a.FactFiles, b.FactFiles) && slices.Equal(a.CourseDayFiles, b.CourseDayFiles)
}

// Merge returns the successor of cur that c makes: cur's entries with c's
// dates replaced (all other dates untouched), Generation cur.Generation+1,
// the parent (cur's generation and digest, for cur.Generation >= 1),
// UpdatedByJobID c.JobID, the current FormatVersion. It does not mutate cur
// or c; the result shares no slices or maps with either.
func Merge(cur Pointer, c Commit) Pointer {
	op := c.Operation
	if op == "" {
		op = OpPublish
	}
	next := Pointer{
		FormatVersion:    FormatVersion,
		Generation:       cur.Generation + 1,
		WrittenAt:        c.WrittenAt.UTC(),
		WriterVersion:    c.WriterVersion,
		Operation:        op,
		SourceGeneration: c.Source,
		UpdatedByJobID:   c.JobID,
		Dates:            make(map[dates.Date]DateEntry, len(cur.Dates)+len(c.Entries)),
	}
	if cur.Generation > 0 {
		next.Parent = &Parent{Generation: cur.Generation, SHA256: cur.Digest}
	}
	for d, e := range cur.Dates {
		next.Dates[d] = normalizeEntry(e)
	}
	for d, e := range c.Entries {
		next.Dates[d] = normalizeEntry(e)
	}
	return next
}

// Successor reports whether h is a true successor of cur: the next
// generation, naming cur (generation and the digest of its stored bytes) as
// its parent, or generation 1 without a parent when nothing is stored yet.
func Successor(cur, h Pointer) bool {
	if h.Generation != cur.Generation+1 {
		return false
	}
	if cur.Generation == 0 {
		return h.Parent == nil
	}
	return h.Parent != nil && h.Parent.Generation == cur.Generation && cur.Digest != "" && h.Parent.SHA256 == cur.Digest
}

// ErrBrokenChain: the history holds a generation beyond the stored pointer
// that is not its true successor. Nothing was written; a human decides.
var ErrBrokenChain = errors.New("pointer history does not continue pointer.json")

// ErrHandEdited: pointer.json is a generation older than the newest history
// copy because someone put it there, not because a write was interrupted.
// It always comes wrapped with ErrBrokenChain: nothing was written, and
// the way back to an old generation is a rollback.
var ErrHandEdited = errors.New("pointer.json was replaced by hand")

// ErrLost: pointer.json is missing while the history holds generations
// that no interrupted first write explains.
var ErrLost = errors.New("pointer.json is lost")

// Lost reports, for a store without pointer.json, whether its history
// shows it was lost or deleted: any generation but a lone generation 1,
// which a first write may have committed before it died (the next write
// rolls it forward) or which was published and then lost; the history
// cannot tell, and the next write restores it either way. newest is the
// highest generation.
func Lost(ctx context.Context, s Store) (newest int64, lost bool, err error) {
	gens, err := s.Generations(ctx)
	if err != nil || len(gens) == 0 {
		return 0, false, err
	}
	newest = gens[len(gens)-1]
	if newest == 1 && Committed(ctx, s, Pointer{}) == 1 {
		return newest, false, nil
	}
	return newest, true, nil
}

// LoneFirst is the one wording of a store whose pointer.json is missing
// and whose history holds only generation 1 (Lost's second case).
func LoneFirst(where string) string {
	return fmt.Sprintf("%s has no pointer.json and its history holds only generation 1: a first publish stopped after committing it, or pointer.json was deleted since; "+
		"readers see nothing until the next publish, which rolls generation 1 forward", where)
}

// LostError is the one wording of a lost pointer.json at where.
func LostError(where string, newest int64) error {
	return fmt.Errorf("%w: %s has no pointer.json, but pointer-history/ holds generations up to %d: it was lost or deleted by hand, and readers see nothing; "+
		"nothing was changed: copy pointer-history/%d.json over pointer.json to restore what they saw", ErrLost, where, newest, newest)
}

// Beyond decides, for a Swap about to take generation cur.Generation+1,
// what the history holds past cur: nil when nothing (the generation is
// free); the next generation when it is a true successor of cur, which an
// interrupted Swap left behind and which must be rolled forward before
// anything else moves; or an error wrapping ErrBrokenChain when the history
// beyond cur is anything else. A Swap takes a generation only from the one
// before it, so an interrupted Swap leaves at most one generation past the
// pointer: a second one (G+2) means pointer.json was put back by hand or
// lost, which is never silently undone. load reads one history generation
// (an error wrapping fs.ErrNotExist when there is none); newest, asked only
// to word a refusal, is the highest generation the history holds.
func Beyond(cur Pointer, load func(int64) (Pointer, error), newest func() (int64, error)) (*Pointer, error) {
	next := cur.Generation + 1
	if _, err := load(next + 1); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read pointer-history/%d.json: %w", next+1, err)
	} else if err == nil {
		n, nerr := newest()
		if nerr != nil && !errors.Is(nerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: pointer-history holds generation %d beyond pointer.json (generation %d): %w", ErrBrokenChain, next+1, cur.Generation, nerr)
		}
		if n < next+1 {
			n = next + 1
		}
		back := ""
		if cur.Generation > 0 {
			back = fmt.Sprintf(", then use `engagement rollback --to-generation %d` to put dates back to generation %d (a rollback is recorded; a hand-copied pointer is refused)", cur.Generation, cur.Generation)
		}
		return nil, fmt.Errorf("%w: pointer-history goes up to generation %d but pointer.json is at generation %d, and an interrupted write leaves at most generation %d: "+
			"pointer.json was replaced by hand or lost; nothing was changed: to return to the newest generation copy pointer-history/%d.json over pointer.json%s",
			ErrBrokenChain, n, cur.Generation, next, n, back)
	}
	h, err := load(next)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: pointer-history/%d.json beyond pointer.json (generation %d) cannot be read: %w; nothing was changed",
			ErrBrokenChain, next, cur.Generation, err)
	}
	if Successor(cur, h) {
		return &h, nil
	}
	why := "it names no parent (written by an engagement older than pointer format 2), so it cannot be proven a successor: finish that write with the version that made it, or move it aside"
	if h.Parent != nil {
		why = fmt.Sprintf("it names generation %d with sha256 %s as its parent, pointer.json is generation %d with sha256 %s: a planted, renumbered or edited history file; check what it names, then move it aside",
			h.Parent.Generation, h.Parent.SHA256, cur.Generation, cur.Digest)
	}
	return nil, fmt.Errorf("%w: pointer-history/%d.json (job %s) is not a successor of pointer.json (generation %d) and is not rolled forward: %s; nothing was changed",
		ErrBrokenChain, next, h.UpdatedByJobID, cur.Generation, why)
}

// Outcome is what Publish did, for a caller that reports more than success.
type Outcome struct {
	// Pointer is the pointer this job wrote, its Digest set.
	Pointer Pointer
	// LandedDespite is the error a Swap reported for the write that a
	// re-read then showed had landed; nil when the Swap reported success.
	// A caller reports it, because the store misbehaved even though the
	// publish happened.
	LandedDespite error
	// Current is the generation pointer.json showed when the write was
	// confirmed: this job's, or a later one built on it.
	Current int64
	// Superseded are this job's dates that a later generation, built on
	// this job's, already names another job for.
	Superseded []dates.Date
}

// ErrNotVisible: the job's generation is in the history, but pointer.json,
// what readers load, does not show it.
var ErrNotVisible = errors.New("written to the pointer history, but pointer.json does not show it")

// Publish moves the pointer for c and returns the pointer it wrote. See
// PublishOutcome.
func Publish(ctx context.Context, s Store, c Commit) (Pointer, error) {
	out, err := PublishOutcome(ctx, s, c)
	return out.Pointer, err
}

// PublishOutcome moves the pointer for c's dates: Load, Merge, Swap, and a
// re-read of the pointer.
//
// On ErrConflict it re-reads, re-merges only this job's dates and retries
// (at most maxPublishAttempts, deterministic backoff, ctx respected); giving
// up returns an error wrapping ErrConflict, and nothing of this job was
// written. ErrBrokenChain and ErrNotWritten from Swap are returned at once:
// nothing was written and no retry of this attempt can mend it.
//
// On any other Swap error it re-reads to learn whether its write landed
// (landed = the history generation it tried to write exists and names the
// job as updated_by_job_id). When it certainly did not land it returns an
// error wrapping ErrNotWritten and the original; when the re-read cannot
// tell, one wrapping both ErrOutcomeUnknown and the original.
//
// A write that landed is then confirmed by re-reading pointer.json, which
// is what readers load, without ctx's cancellation: it must show this job's
// generation, or a later one whose parent chain leads back to it (a
// concurrent job built on this one). Otherwise the error wraps
// ErrNotVisible (the history holds the generation, pointer.json does not)
// or ErrOutcomeUnknown (the re-read failed). A nil error therefore means
// readers see this job's write.
func PublishOutcome(ctx context.Context, s Store, c Commit) (Outcome, error) {
	jobID := c.JobID
	if jobID == "" {
		return Outcome{}, errors.New("publish: empty job id")
	}
	who := named(c.Operation, jobID)
	for attempt := 0; attempt < maxPublishAttempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(jobID, attempt)); err != nil {
				return Outcome{}, fmt.Errorf("%s: %w", who, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", who, err)
		}
		cur, ver, err := s.Load(ctx)
		if err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", who, err)
		}
		if c.Check != nil {
			if err := c.Check(cur); err != nil {
				return Outcome{}, fmt.Errorf("%s: %w", who, err)
			}
		}
		next := Merge(cur, c)
		// A pointer the store would refuse to encode is a caller bug; catch
		// it here so it is not mistaken for a write of unknown outcome.
		_, digest, err := EncodeDigest(next)
		if err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", who, err)
		}
		next.Digest = digest
		err = s.Swap(ctx, ver, next)
		if err == nil {
			return confirm(ctx, s, jobID, next, nil)
		}
		if errors.Is(err, ErrConflict) {
			continue
		}
		if errors.Is(err, ErrBrokenChain) || errors.Is(err, ErrNotWritten) {
			return Outcome{}, fmt.Errorf("%s: %w", who, err)
		}
		landed, rerr := resolve(ctx, s, jobID, next, ver, err)
		if rerr != nil {
			return Outcome{}, rerr
		}
		return confirm(ctx, s, jobID, landed, err)
	}
	return Outcome{}, fmt.Errorf("%s: gave up after %d attempts: %w", who, maxPublishAttempts, ErrConflict)
}

// backoff doubles with the attempt, to 1 s, and is spread over the whole
// interval by a jitter drawn from the job id and the attempt: writers that
// lost one race do not all come back at once (on object storage every
// retry is several requests), yet the same job retries on the same
// schedule every run, so test runs and incident timelines repeat. The
// ceiling is well above one compare-and-swap's round trip: with a 64 ms
// ceiling, 64 writers on S3 spent most of their requests losing, and the
// stress suite took twice as long and twice the CPU (131 s against 269 s,
// one run each on a quiet 2-core machine).
func backoff(jobID string, attempt int) time.Duration {
	ceiling := min(time.Millisecond<<min(attempt, 10), time.Second)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", jobID, attempt)
	return time.Millisecond + time.Duration(h.Sum64()%uint64(ceiling))
}

// sleep waits out one backoff, or until ctx ends. It is a variable so that
// the tests of the retry loop can record its waits instead of sleeping
// through them (256 attempts wait about two minutes).
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// JobPublished reports whether the current pointer or any retained history
// generation names jobID, either as updated_by_job_id or as the job_id of a
// date entry. A named job's staging is published bytes and must never be
// written again.
func JobPublished(ctx context.Context, s Store, jobID string) (bool, error) {
	if jobID == "" {
		return false, errors.New("look for a job id in the pointer: empty job id")
	}
	cur, _, err := s.Load(ctx)
	if err != nil {
		return false, fmt.Errorf("read the pointer's generations: %w", err)
	}
	if Names(cur, jobID) {
		return true, nil
	}
	gens, err := s.Generations(ctx)
	if err != nil {
		return false, fmt.Errorf("read the pointer's generations: %w", err)
	}
	// A new id is looked for in every copy, so every publish reads the
	// whole history: a few at a time (420 copies of a year of dates took
	// 2.3 s one by one on a local disk, and are a request each on an
	// object store), the newest first, stopping once one names it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	named := make([]bool, len(gens))
	errs := make([]error, len(gens))
	bounded.Each(len(gens), generationReaders, func(i int) {
		if sctx.Err() != nil {
			return
		}
		p, err := s.LoadGeneration(sctx, gens[len(gens)-1-i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Pruned since it was listed: no longer retained.
		case err != nil:
			errs[i] = err
		case Names(p, jobID):
			named[i] = true
			cancel()
		}
	})
	if slices.Contains(named, true) {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("read the pointer's generations: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return false, fmt.Errorf("read the pointer's generations: %w", err)
		}
	}
	return false, nil
}

// generationReaders is how many history copies JobPublished reads at once.
const generationReaders = 8

// Names reports whether p names jobID, as its writer or as the job of a
// date entry.
func Names(p Pointer, jobID string) bool {
	if p.UpdatedByJobID == jobID {
		return true
	}
	for _, e := range p.Dates {
		if e.JobID == jobID {
			return true
		}
	}
	return false
}

// named is how an error names the write of jobID: "publish ID", or
// "rollback ID" for a rollback (whose job id no publish ever had: exit 6's
// remedy is to read the history, and it named a publish there was none of).
func named(operation, jobID string) string {
	if operation == "" {
		operation = OpPublish
	}
	return operation + " " + jobID
}
