package pointer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestTakenSinceTellsReadErrors: only a generation another operation
// wrote under the job id is ErrJobIDTaken (exit 4, never retried); a
// history copy that cannot be read is an error to retry. Every error was
// reported as the job id already published, and the scheduler did not
// retry a run that had published nothing.
func TestTakenSinceTellsReadErrors(t *testing.T) {
	dir := t.TempDir()
	s := objstore.New(local.New(dir, local.Options{}))
	d := dates.MustParse("2026-03-02")
	var cur pointer.Pointer
	for _, job := range []string{"a", "b", "c"} {
		p, err := pointer.Publish(t.Context(), s, pointertest.Commit(job, map[dates.Date]pointer.DateEntry{d: pointertest.Entry(job, d)}))
		if err != nil {
			t.Fatal(err)
		}
		cur = p
	}
	if err := pointer.TakenSince(t.Context(), s, 0, cur, "b", pointer.OpRollback); !errors.Is(err, pointer.ErrJobIDTaken) || !strings.Contains(err.Error(), "job id b was taken by generation 2 (a publish)") {
		t.Errorf("b taken by a publish, checked by a rollback: %v, want ErrJobIDTaken naming generation 2", err)
	}
	if err := pointer.TakenSince(t.Context(), s, 0, cur, "b", pointer.OpPublish); err != nil {
		t.Errorf("b taken by its own kind of operation: %v, want nil", err)
	}
	// A history copy that cannot be read (bytes that do not decode stand
	// here for a store's error after its retries).
	if err := os.WriteFile(filepath.Join(dir, "pointer-history", "2.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := pointer.TakenSince(t.Context(), s, 0, cur, "x", pointer.OpPublish)
	if err == nil || errors.Is(err, pointer.ErrJobIDTaken) || !strings.Contains(err.Error(), "read generation 2") {
		t.Errorf("an unreadable copy: %v, want a read error that is not ErrJobIDTaken", err)
	}
}
