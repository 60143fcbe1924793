package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/signals"
)

// TestDecideAfterASignal: a generation committed but not shown, or whose
// showing could not be confirmed, keeps exit 1 after a signal: 143 would
// tell the scheduler the pointer was left as it was, and the generation
// later became visible. Any other failure after a signal stays the
// signal's.
func TestDecideAfterASignal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
		says string
	}{
		{"not visible", fmt.Errorf("move pointer: %w", pointer.ErrNotVisible), exitcode.Error, "came after the outcome was decided: exit 1"},
		{"outcome unknown", fmt.Errorf("move pointer: %w", pointer.ErrOutcomeUnknown), exitcode.Error, "came after the outcome was decided: exit 1"},
		// A rollback that moved the pointer, then found its files gone.
		{"rollback landed", fmt.Errorf("%w as generation 4, but a gc deleted or changed files it names meanwhile", history.ErrLanded), exitcode.Error, "came after the outcome was decided: exit 1"},
		{"another failure", errors.New("stage: context canceled"), 143, "interrupted by SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := signals.Notify(context.Background(), io.Discard)
			defer stop()
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			<-ctx.Done()
			decide(ctx, tc.err)
			var stderr bytes.Buffer
			if got := signals.ExitCode(ctx, exitcode.Code(tc.err), &stderr); got != tc.want || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("exit %d, %q; want %d saying %q", got, stderr.String(), tc.want, tc.says)
			}
		})
	}
}
