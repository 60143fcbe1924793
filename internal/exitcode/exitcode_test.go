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
		{"raced", fmt.Errorf("move pointer: %w: date 2026-03-02 rolled back", ErrRaced), Raced},
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

func TestSignalled(t *testing.T) {
	// The shell's convention, which schedulers already read as "killed by".
	for _, tc := range []struct{ signo, want, named int }{{2, 130, Interrupted}, {15, 143, Terminated}} {
		if got := Signalled(tc.signo); got != tc.want || tc.named != tc.want {
			t.Errorf("Signalled(%d) = %d (constant %d), want %d", tc.signo, got, tc.named, tc.want)
		}
	}
}
