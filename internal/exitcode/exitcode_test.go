package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("x"), Error},
		{"usage", UsageError(errors.New("x")), Usage},
		{"gate", GateError(errors.New("x")), GateRejected},
		{"published", PublishedError(errors.New("x")), AlreadyPublished},
		{"not published", NotPublishedError(errors.New("x")), NotPublished},
		// A signal cancels the run; whatever step reported it, that is no
		// usage error (nor a gate verdict).
		{"cancelled usage", UsageError(fmt.Errorf("duckdb.threads: %w", context.Canceled)), Error},
		{"cancelled gate", GateError(fmt.Errorf("gate: %w", context.Canceled)), Error},
		{"deadline", UsageError(context.DeadlineExceeded), Error},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("%s: Code = %d, want %d", tc.name, got, tc.want)
		}
	}
}
