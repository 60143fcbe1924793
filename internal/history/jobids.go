package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// CheckRecords refuses a job id that a record outside the retained history
// names, so that an id stays taken after gc: a generation gc expired that
// the id wrote (exit 4, as a published id), a rejection record or a
// rollback record, or such a record or a staging prefix gc deleted (exit
// 2, as an earlier attempt's staging prefix). The retained history and staging prefixes are the
// caller's own checks.
func CheckRecords(ctx context.Context, b storage.Bucket, jobID string) error {
	exps, err := Expiries(ctx, b)
	if err != nil {
		return fmt.Errorf("check job id %s: %w", jobID, err)
	}
	// A writer first, across every record: a rollback wrote a generation
	// and left a record, and gc lists it twice when both go; it published,
	// so exit 4, as while its generation was retained.
	for _, e := range exps {
		if slices.Contains(e.JobIDs, jobID) {
			return exitcode.PublishedError(fmt.Errorf("job id %s wrote a generation gc has since expired (generations %s, expired at %s; %s): use a new job id",
				jobID, gensText(e.Generations), e.At.UTC().Format(time.RFC3339), b.Location().Join(warehouse.ExpiryRoot)))
		}
	}
	for _, rec := range []struct{ key, what string }{
		{warehouse.RejectionPath(jobID), "a rejected publish attempt"},
		{warehouse.RollbackPath(jobID), "a rollback"},
	} {
		_, err := b.Stat(ctx, rec.key)
		if err == nil {
			return exitcode.UsageError(fmt.Errorf("job id %s was taken by %s (%s): use a new job id", jobID, rec.what, b.Location().Join(rec.key)))
		}
		if !storage.IsNotExist(err) {
			return fmt.Errorf("check job id %s: %w", jobID, err)
		}
	}
	// After the records themselves, which name the attempt more exactly.
	for _, e := range exps {
		if slices.Contains(e.RecordJobIDs, jobID) {
			return exitcode.UsageError(fmt.Errorf("job id %s was taken by an earlier attempt or rollback whose record or staging gc deleted at %s (%s): use a new job id",
				jobID, e.At.UTC().Format(time.RFC3339), b.Location().Join(warehouse.ExpiryRoot)))
		}
	}
	return nil
}

func gensText(gs []int64) string {
	if len(gs) == 0 {
		return "?"
	}
	if len(gs) == 1 {
		return fmt.Sprint(gs[0])
	}
	return fmt.Sprintf("%d-%d", slices.Min(gs), slices.Max(gs))
}
