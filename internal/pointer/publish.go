package pointer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
)

// maxPublishAttempts bounds the conflict retries of Publish. Every conflict
// means another writer moved the pointer, so with N concurrent publishers a
// job waits for at most N-1 others per round; 64 covers far more concurrent
// jobs than a warehouse ever sees while still ending a livelock.
const maxPublishAttempts = 64

// Merge returns a copy of cur whose entries for the given dates are replaced
// by entries (all other dates untouched), Generation cur.Generation+1,
// UpdatedByJobID jobID, FormatVersion 1. It does not mutate cur or entries;
// the result shares no slices or maps with either.
func Merge(cur Pointer, jobID string, entries map[dates.Date]DateEntry) Pointer {
	next := Pointer{
		FormatVersion:  FormatVersion,
		Generation:     cur.Generation + 1,
		UpdatedByJobID: jobID,
		Dates:          make(map[dates.Date]DateEntry, len(cur.Dates)+len(entries)),
	}
	for d, e := range cur.Dates {
		next.Dates[d] = normalizeEntry(e)
	}
	for d, e := range entries {
		next.Dates[d] = normalizeEntry(e)
	}
	return next
}

// Outcome is what Publish did, for a caller that reports more than success.
type Outcome struct {
	// Pointer is the pointer this job wrote.
	Pointer Pointer
	// LandedDespite is the error a Swap reported for the write that a
	// re-read then showed had landed; nil when the Swap reported success.
	// A caller reports it, because the store misbehaved even though the
	// publish happened.
	LandedDespite error
}

// Publish moves the pointer for this job's dates: Load, Merge, Swap, and
// returns the pointer this job wrote. See PublishOutcome.
func Publish(ctx context.Context, s Store, jobID string, entries map[dates.Date]DateEntry) (Pointer, error) {
	out, err := PublishOutcome(ctx, s, jobID, entries)
	return out.Pointer, err
}

// PublishOutcome moves the pointer for this job's dates: Load, Merge, Swap.
//
// On ErrConflict it re-reads, re-merges only this job's dates and retries
// (at most 64 attempts, short deterministic backoff, ctx respected); giving
// up returns an error wrapping ErrConflict, and nothing of this job was
// written.
//
// On any other Swap error it re-reads to learn whether its write landed
// (landed = the history generation it tried to write exists and names jobID
// as updated_by_job_id). Then it returns the landed pointer with a nil error
// and the Swap's error in LandedDespite, or an error wrapping ErrNotWritten
// and the original when the write certainly did not land, or an error
// wrapping both ErrOutcomeUnknown and the original when the re-read cannot
// tell.
func PublishOutcome(ctx context.Context, s Store, jobID string, entries map[dates.Date]DateEntry) (Outcome, error) {
	if jobID == "" {
		return Outcome{}, errors.New("publish: empty job id")
	}
	for attempt := 0; attempt < maxPublishAttempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return Outcome{}, fmt.Errorf("publish %s: %w", jobID, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return Outcome{}, fmt.Errorf("publish %s: %w", jobID, err)
		}
		cur, ver, err := s.Load(ctx)
		if err != nil {
			return Outcome{}, fmt.Errorf("publish %s: %w", jobID, err)
		}
		next := Merge(cur, jobID, entries)
		// A pointer the store would refuse to encode is a caller bug; catch
		// it here so it is not mistaken for a write of unknown outcome.
		if err := validate(next); err != nil {
			return Outcome{}, fmt.Errorf("publish %s: %w", jobID, err)
		}
		err = s.Swap(ctx, ver, next)
		if err == nil {
			return Outcome{Pointer: next}, nil
		}
		if errors.Is(err, ErrConflict) {
			continue
		}
		landed, rerr := resolve(ctx, s, jobID, next, ver, err)
		if rerr != nil {
			return Outcome{}, rerr
		}
		return Outcome{Pointer: landed, LandedDespite: err}, nil
	}
	return Outcome{}, fmt.Errorf("publish %s: gave up after %d attempts: %w", jobID, maxPublishAttempts, ErrConflict)
}

// resolve decides, after a Swap failed with an error other than a conflict,
// whether next landed. The history copy decides it: generations are taken
// exclusively through it, so a copy of next.Generation naming jobID can only
// be this job's write.
func resolve(ctx context.Context, s Store, jobID string, next Pointer, expect Version, swapErr error) (Pointer, error) {
	unknown := func(reason error) error {
		return fmt.Errorf("publish %s generation %d: %w: swap: %w; re-read: %w",
			jobID, next.Generation, ErrOutcomeUnknown, swapErr, reason)
	}
	notLanded := func() error {
		return fmt.Errorf("publish %s generation %d: %w (learned by re-reading): %w", jobID, next.Generation, ErrNotWritten, swapErr)
	}
	// The failed Swap may have been cancelled with ctx, but learning the
	// outcome is worth a re-read even then.
	ctx = context.WithoutCancel(ctx)
	cur, curVer, err := s.Load(ctx)
	if err != nil {
		return Pointer{}, unknown(err)
	}
	h, err := s.LoadGeneration(ctx, next.Generation)
	switch {
	case err == nil && h.UpdatedByJobID == jobID:
		if cur.Generation < next.Generation && curVer == expect {
			// The history copy landed but the pointer object was not
			// replaced. Swapping again from the same version makes the
			// store roll that copy forward (and report a conflict), so
			// readers see this job now rather than at the next publish.
			// Failing here changes nothing: the copy is the commit.
			_ = s.Swap(ctx, expect, next)
		}
		return h, nil
	case err == nil:
		// Another job holds that generation, so this write cannot have.
		return Pointer{}, notLanded()
	case errors.Is(err, fs.ErrNotExist):
		switch {
		case cur.Generation == next.Generation && cur.UpdatedByJobID == jobID:
			return cur, nil
		case cur.Generation >= next.Generation:
			// Moved past next.Generation yet its copy is gone: it was not
			// retained, so the history cannot say who wrote it.
			return Pointer{}, unknown(fmt.Errorf("history generation %d not retained: %w", next.Generation, err))
		default:
			return Pointer{}, notLanded()
		}
	default:
		return Pointer{}, unknown(err)
	}
}

// backoff is deterministic so test runs and incident timelines repeat; the
// ramp keeps a lost race cheap while spreading out a pile-up.
func backoff(attempt int) time.Duration {
	return min(time.Duration(attempt)*2*time.Millisecond, 20*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
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
		return false, errors.New("job published: empty job id")
	}
	cur, _, err := s.Load(ctx)
	if err != nil {
		return false, fmt.Errorf("job %s published: %w", jobID, err)
	}
	if names(cur, jobID) {
		return true, nil
	}
	gens, err := s.Generations(ctx)
	if err != nil {
		return false, fmt.Errorf("job %s published: %w", jobID, err)
	}
	// Newest first: a rerun check usually concerns a recent job.
	for i := len(gens) - 1; i >= 0; i-- {
		p, err := s.LoadGeneration(ctx, gens[i])
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned since it was listed: no longer retained
		}
		if err != nil {
			return false, fmt.Errorf("job %s published: %w", jobID, err)
		}
		if names(p, jobID) {
			return true, nil
		}
	}
	return false, nil
}

func names(p Pointer, jobID string) bool {
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
