package pointer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"
)

// How a publish learns, after a failed or a reported write, what readers
// see: the history copy decides whether the write landed (resolve), and
// pointer.json, re-read, whether it is visible (confirm). Both go on after
// ctx is cancelled, within a bound of their own.

// resolve decides, after a Swap failed with an error other than a conflict,
// whether next landed. The history copy decides it: generations are taken
// exclusively through it, so a copy of next.Generation naming jobID can only
// be this job's write.
func resolve(ctx context.Context, s Store, jobID string, next Pointer, expect Version, swapErr error) (Pointer, error) {
	unknown := func(reason error) error {
		return fmt.Errorf("%s generation %d: %w: swap: %w; re-read: %w",
			named(next.Operation, jobID), next.Generation, ErrOutcomeUnknown, swapErr, gaveUp(ctx, reason))
	}
	notLanded := func() error {
		return fmt.Errorf("%s generation %d: %w (learned by re-reading): %w", named(next.Operation, jobID), next.Generation, ErrNotWritten, swapErr)
	}
	// The failed Swap may have been cancelled with ctx, but learning the
	// outcome is worth a re-read even then.
	ctx, cancel := outcomeContext(ctx)
	defer cancel()
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

// confirm re-reads pointer.json after wrote landed; see PublishOutcome.
func confirm(ctx context.Context, s Store, jobID string, wrote Pointer, despite error) (Outcome, error) {
	who := named(wrote.Operation, jobID)
	ctx, cancel := outcomeContext(ctx)
	defer cancel()
	cur, _, err := s.Load(ctx)
	if err != nil {
		err = gaveUp(ctx, err)
		return Outcome{}, fmt.Errorf("%s generation %d: %w: the write was reported done but pointer.json could not be re-read to confirm it: %w",
			who, wrote.Generation, ErrOutcomeUnknown, err)
	}
	out := Outcome{Pointer: wrote, LandedDespite: despite, Current: cur.Generation}
	switch {
	case cur.Generation < wrote.Generation:
		why := ""
		if despite != nil {
			// What the replace met is what the person on call must fix.
			why = fmt.Sprintf(" (replacing it failed: %v)", despite)
		}
		return Outcome{}, fmt.Errorf("%s: %w: generation %d is taken in pointer-history/%d.json, but pointer.json still shows generation %d%s, so readers do not see this job; "+
			"the next publish to this warehouse rolls generation %d forward once pointer.json can be replaced (or copy pointer-history/%d.json over pointer.json)",
			who, ErrNotVisible, wrote.Generation, wrote.Generation, cur.Generation, why, wrote.Generation, wrote.Generation)
	case cur.Generation == wrote.Generation:
		if cur.UpdatedByJobID != jobID || cur.Digest != wrote.Digest {
			return Outcome{}, fmt.Errorf("%s: %w: pointer.json at generation %d was written by %s, not by this job", who, ErrNotVisible, cur.Generation, cur.UpdatedByJobID)
		}
		return out, nil
	}
	// A later generation: it shows this job's write only if its parent chain
	// leads back to it, generation by generation, through the history.
	child := cur
	for g := cur.Generation - 1; g >= wrote.Generation; g-- {
		h, err := s.LoadGeneration(ctx, g)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A copy that could not be read says nothing either way.
			return Outcome{}, fmt.Errorf("%s generation %d: %w: pointer.json is at generation %d, and pointer-history/%d.json, on its chain back to this job's write, could not be read: %w",
				who, wrote.Generation, ErrOutcomeUnknown, cur.Generation, g, gaveUp(ctx, err))
		}
		if err != nil || child.Parent == nil || child.Parent.SHA256 != h.Digest {
			return Outcome{}, fmt.Errorf("%s: %w: pointer.json is at generation %d and its chain back to this job's generation %d cannot be followed at generation %d (%v)",
				who, ErrNotVisible, cur.Generation, wrote.Generation, g+1, err)
		}
		child = h
	}
	if child.Digest != wrote.Digest {
		return Outcome{}, fmt.Errorf("%s: %w: generation %d in the chain of pointer.json is not this job's write", who, ErrNotVisible, wrote.Generation)
	}
	for d := range wrote.Dates {
		if e, ok := cur.Dates[d]; ok && e.JobID != jobID && wrote.Dates[d].JobID == jobID {
			out.Superseded = append(out.Superseded, d)
		}
	}
	slices.Sort(out.Superseded)
	return out, nil
}

// outcomeReadBound bounds the re-reads that learn a write's outcome
// (resolve, and confirm after it). They go on when ctx is cancelled, since
// the answer decides what the job reports, but not for ever: each read
// retries a frozen endpoint for minutes (504 s for the three, measured),
// and "outcome unknown, run status" after two is the more useful answer.
var outcomeReadBound = 2 * time.Minute

func outcomeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), outcomeReadBound)
}

// gaveUp says a re-read ran out of its bound (ctx, from outcomeContext)
// in words, not as a bare "context deadline exceeded".
func gaveUp(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within %v: %w", outcomeReadBound, err)
	}
	return err
}
