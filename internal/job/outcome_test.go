package job_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/failpoint"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// TestUnknownPointerOutcome runs whole publishes against pointer stores
// whose write fails after (or instead of) writing. The job must re-read
// before it answers, report what really happened with the right exit code,
// and delete no staging, neither its own nor an earlier job's.
func TestUnknownPointerOutcome(t *testing.T) {
	const mon, tue = "2026-03-02", "2026-03-03"
	// As the S3 store words a refused credential, and as it marks it.
	refused := exitcode.UsageError(storage.Refused(errors.New("put pointer.json: access denied (SignatureDoesNotMatch): refused by the store")))
	for _, tc := range []struct {
		name      string
		wrap      func(pointer.Store) pointer.Store
		landed    bool   // the job's generation is in the store afterwards
		code      int    // exit code the job reports
		says      string // what the report must say
		sentinel  error  // what the error wraps
		reRunCode int    // the same job id run again, once the store is back
	}{
		{"LostReplyLanded", func(s pointer.Store) pointer.Store { return pointertest.LostReply{Store: s} },
			true, exitcode.OK, "re-reading the pointer and its history shows the write landed", nil, exitcode.AlreadyPublished},
		{"FailedWithoutWriting", func(s pointer.Store) pointer.Store { return pointertest.FailingSwap{Store: s} },
			false, exitcode.Error, "did not land (learned by re-reading)", pointer.ErrNotWritten, exitcode.Usage},
		{"BlackoutNotLanded", func(s pointer.Store) pointer.Store { return &pointertest.Blackout{Store: s} },
			false, exitcode.Error, "outcome unknown", pointer.ErrOutcomeUnknown, exitcode.Usage},
		{"BlackoutLanded", func(s pointer.Store) pointer.Store { return &pointertest.Blackout{Store: s, Lands: true} },
			true, exitcode.Error, "outcome unknown", pointer.ErrOutcomeUnknown, exitcode.AlreadyPublished},
		// The store refuses the credentials (rotated during the run): a
		// usage error where it is met first, exit 2 "fix the command;
		// nothing was attempted", which after staging, and with a
		// generation maybe committed, it is not (review CL).
		{"RefusedWithoutWriting", func(s pointer.Store) pointer.Store { return pointertest.FailingSwap{Store: s, Err: refused} },
			false, exitcode.Error, "did not land (learned by re-reading)", storage.ErrRefused, exitcode.Usage},
		{"RefusedLanded", func(s pointer.Store) pointer.Store { return &pointertest.Blackout{Store: s, Err: refused, Lands: true} },
			true, exitcode.Error, "outcome unknown", pointer.ErrOutcomeUnknown, exitcode.AlreadyPublished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, "")
			wh := t.TempDir()
			seed := publishWith(t, localStore(wh), fx.Job(t, wh, "seed", mon, tue))
			if seed.err != nil {
				t.Fatal(seed.err)
			}
			seedStaging := publishtest.TreeHash(t, warehouse.Abs(wh, warehouse.StagingDir("seed")))
			before := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))

			got := publishWith(t, tc.wrap(localStore(wh)), fx.Job(t, wh, "faulty", mon))

			if code := exitcode.Code(got.err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, got.err, tc.code)
			}
			if tc.sentinel != nil && !errors.Is(got.err, tc.sentinel) {
				t.Errorf("error %v does not wrap %v", got.err, tc.sentinel)
			}
			report := got.log
			if got.err != nil {
				report = got.err.Error()
				if !strings.Contains(report, "staging "+warehouse.StagingDir("faulty")+" is kept") || !strings.Contains(report, "new job id") {
					t.Errorf("error does not say staging is kept and a new job id is the rerun: %s", report)
				}
			}
			if !strings.Contains(report, tc.says) {
				t.Errorf("report does not say %q:\n%s", tc.says, report)
			}
			if got.result.Published != (got.err == nil) {
				t.Errorf("Result.Published %v with error %v", got.result.Published, got.err)
			}
			if tc.code == exitcode.OK && got.jobResult()["pointer_write"] != "landed_despite_error" {
				t.Errorf("job_result monitor %v does not report the store's error", got.jobResult())
			}

			// The truth, read without the faulty wrapper.
			p := publishtest.LoadPointer(t, wh)
			if tc.landed {
				if p.Generation != 2 || p.Dates[dates.MustParse(mon)].JobID != "faulty" || p.Dates[dates.MustParse(tue)].JobID != "seed" {
					t.Errorf("pointer generation %d, %s by %s, %s by %s; want 2, faulty, seed", p.Generation,
						mon, p.Dates[dates.MustParse(mon)].JobID, tue, p.Dates[dates.MustParse(tue)].JobID)
				}
				if tc.code == exitcode.OK && got.result.Pointer.Generation != p.Generation {
					t.Errorf("reported generation %d, stored %d", got.result.Pointer.Generation, p.Generation)
				}
			} else if !bytes.Equal(before, publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))) {
				t.Errorf("pointer.json changed although the write did not land")
			}
			for ds, n := range publishtest.FactSum(t, wh) {
				if want := fx.Expected.ByDate[ds].Events; n != want {
					t.Errorf("%s: visible %d events, want %d", ds, n, want)
				}
			}

			// No staging deleted: every file the job staged (and listed for
			// the pointer) is there with its bytes, the attempt record and
			// the gate report too; the earlier job's staging is untouched.
			for _, rel := range []string{warehouse.AttemptPath("faulty"), warehouse.GatePath("faulty")} {
				if publishtest.FileBytes(t, warehouse.Abs(wh, rel)) == nil {
					t.Errorf("%s is gone", rel)
				}
			}
			e := got.result.Entries[dates.MustParse(mon)]
			if len(e.FactFiles) == 0 || len(e.CourseDayFiles) == 0 {
				t.Fatalf("job staged no files for %s: %+v", mon, e)
			}
			for _, f := range append(append([]pointer.File{}, e.FactFiles...), e.CourseDayFiles...) {
				fi, err := os.Stat(warehouse.Abs(wh, f.Path))
				if err != nil || fi.Size() != f.Bytes {
					t.Errorf("staged %s: %v (size %v, listed %d)", f.Path, err, fi, f.Bytes)
				}
			}
			if publishtest.TreeHash(t, warehouse.Abs(wh, warehouse.StagingDir("seed"))) != seedStaging {
				t.Errorf("the earlier job's staging changed")
			}

			// Once the store is reachable, the same job id tells the
			// orchestrator the truth too: refused as published when it
			// landed, refused for its kept staging prefix when it did not.
			again := publishWith(t, localStore(wh), fx.Job(t, wh, "faulty", mon))
			if code := exitcode.Code(again.err); code != tc.reRunCode {
				t.Errorf("same job id again: exit %d (%v), want %d", code, again.err, tc.reRunCode)
			}
		})
	}
}

// TestHistoryTakenPointerNotVisible: the generation is taken in the history
// but pointer.json cannot be replaced, so readers still see the old one.
// That is exit 1 naming both generations and what completes the publish,
// never exit 0; the next publish, once pointer.json can be written, rolls
// the taken generation forward. Once through a fault wrapper, once through
// a real directory turned read-only between the two writes.
func TestHistoryTakenPointerNotVisible(t *testing.T) {
	const mon, tue = "2026-03-02", "2026-03-03"
	for _, tc := range []struct {
		name string
		// fault arms the failure for the faulty publish and returns the
		// store to publish through and the undo.
		fault func(t *testing.T, wh string) (pointer.Store, func())
	}{
		{"FaultWrapper", func(t *testing.T, wh string) (pointer.Store, func()) {
			put := func(gen int64, data []byte) error {
				return os.WriteFile(filepath.Join(wh, "pointer-history", strconv.FormatInt(gen, 10)+".json"), data, 0o644)
			}
			return &pointertest.HistoryOnly{Store: localStore(wh), PutHistory: put}, func() {}
		}},
		{"ReadOnlyDirectory", func(t *testing.T, wh string) (pointer.Store, func()) {
			// After the history copy is written and before pointer.json is
			// replaced, the warehouse directory stops taking new entries.
			var undo func()
			remove := failpoint.SetHook(failpoint.MidPointer, func() { undo = readOnly(t, wh) })
			return localStore(wh), func() {
				remove()
				if undo != nil {
					undo()
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, "")
			wh := t.TempDir()
			if seed := publishWith(t, localStore(wh), fx.Job(t, wh, "seed", mon, tue)); seed.err != nil {
				t.Fatal(seed.err)
			}
			before := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))
			store, undo := tc.fault(t, wh)
			got := publishWith(t, store, fx.Job(t, wh, "faulty", mon))
			undo()

			if code := exitcode.Code(got.err); code != exitcode.Error || !errors.Is(got.err, pointer.ErrNotVisible) {
				t.Fatalf("exit %d (%v), want %d wrapping ErrNotVisible", code, got.err, exitcode.Error)
			}
			for _, says := range []string{"generation 2 is taken in pointer-history/2.json", "pointer.json still shows generation 1", "next publish"} {
				if !strings.Contains(got.err.Error(), says) {
					t.Errorf("error does not say %q: %v", says, got.err)
				}
			}
			if got.result.Published {
				t.Errorf("Result.Published with readers on the old generation")
			}
			if after := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json")); !bytes.Equal(before, after) {
				t.Errorf("pointer.json changed")
			}
			if h, err := localStore(wh).LoadGeneration(t.Context(), 2); err != nil || h.UpdatedByJobID != "faulty" {
				t.Fatalf("history generation 2: %+v, %v; want the faulty job's", h.UpdatedByJobID, err)
			}

			// The next publish completes it: generation 2 rolled forward,
			// then the new job's own generation 3 on top.
			next := publishWith(t, localStore(wh), fx.Job(t, wh, "next", tue))
			if next.err != nil {
				t.Fatal(next.err)
			}
			p := publishtest.LoadPointer(t, wh)
			if p.Generation != 3 || p.Dates[dates.MustParse(mon)].JobID != "faulty" || p.Dates[dates.MustParse(tue)].JobID != "next" {
				t.Errorf("after the next publish: generation %d, %s by %s, %s by %s; want 3, faulty, next",
					p.Generation, mon, p.Dates[dates.MustParse(mon)].JobID, tue, p.Dates[dates.MustParse(tue)].JobID)
			}
			for ds, n := range publishtest.FactSum(t, wh) {
				if want := fx.Expected.ByDate[ds].Events; n != want {
					t.Errorf("%s: visible %d events, want %d", ds, n, want)
				}
			}
		})
	}
}

// readOnly stops dir from taking new entries, for root too (chattr +i; a
// mode of 0555 binds only other users), and returns the undo. It fails the
// test rather than skip when it cannot.
func readOnly(t *testing.T, dir string) func() {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		return func() { os.Chmod(dir, 0o755) }
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i %s: %v: %s", dir, err, out)
	}
	undo := func() {
		if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v: %s", dir, err, out)
		}
	}
	t.Cleanup(undo) // a temp dir left immutable could not be removed
	return undo
}
