package crashtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// world is one warehouse, the inputs it is published from, and the ground
// truth for every date those inputs hold.
type world struct {
	t       *testing.T
	fx      publishtest.Fixture
	wh      string // a directory or an s3:// URL
	b       storage.Bucket
	config  string // the --config file
	rawHash string // every input file, names and bytes
	db      *sql.DB
	// truth maps an event date to the expected.json date whose figures it
	// must show (the identity for the committed fixture).
	truth func(dates.Date) dates.Date
	ids   int
}

// newWorld starts a world with a local warehouse.
func newWorld(t *testing.T, fx publishtest.Fixture, db *sql.DB) *world {
	return newWorldOn(t, publishtest.Local, fx, db)
}

// newWorldOn starts a world whose warehouse lives on backend; db must read
// there (publishtest.DBFor).
func newWorldOn(t *testing.T, backend publishtest.Backend, fx publishtest.Fixture, db *sql.DB) *world {
	wh := backend.Root(t)
	return &world{
		t: t, fx: fx, wh: wh, b: publishtest.Bucket(t, wh), db: db,
		config:  filepath.Join(publishtest.Root(), "config", "fixture.conf"),
		rawHash: publishtest.Hash(t, fx.In(), ""),
		truth:   func(d dates.Date) dates.Date { return d },
	}
}

// newID returns a job id never used in this world.
func (w *world) newID(kind string) string {
	w.ids++
	return fmt.Sprintf("%s-%03d", kind, w.ids)
}

func (w *world) args(jobID string, ds []string) []string {
	args := w.fx.Args(w.wh, jobID, ds...)
	i := slices.Index(args, "--config")
	args[i+1] = w.config
	return args
}

// run runs one real publish process. With killAfter > 0 the test SIGKILLs
// it at that moment unless it has exited. killed reports whether the
// process died by SIGKILL (from the test or from a failpoint).
func (w *world) run(env []string, jobID string, ds []string, killAfter time.Duration) (code int, killed bool, stderr string, ran time.Duration) {
	w.t.Helper()
	var act func(*exec.Cmd)
	if killAfter > 0 {
		act = func(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
	}
	code, sig, stderr, ran := w.runWith(env, jobID, ds, killAfter, act)
	return code, sig == syscall.SIGKILL, stderr, ran
}

// publishCmd is one real publish of ds, with env added to its environment.
func (w *world) publishCmd(env []string, jobID string, ds []string) *exec.Cmd {
	cmd := exec.Command(publishtest.Binary(w.t), w.args(jobID, ds)...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runWith runs one real publish process and, unless it has exited, does
// act to it after the delay (a kill, a signal, a change of its inputs).
// sig is the signal that ended the process, 0 when it exited.
func (w *world) runWith(env []string, jobID string, ds []string, after time.Duration, act func(*exec.Cmd)) (code int, sig syscall.Signal, stderr string, ran time.Duration) {
	w.t.Helper()
	cmd := w.publishCmd(env, jobID, ds)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start engagement: %v", err)
	}
	var timer *time.Timer
	acted := make(chan struct{})
	if act != nil {
		timer = time.AfterFunc(after, func() { act(cmd); close(acted) })
	}
	err := cmd.Wait()
	if timer != nil && !timer.Stop() {
		// The action fired: let it finish before anything it touches is
		// looked at.
		<-acted
	}
	ran = time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("run engagement: %v", err)
	}
	if ee != nil {
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			sig = ws.Signal()
		}
		return ee.ExitCode(), sig, errb.String(), ran
	}
	return 0, 0, errb.String(), ran
}

// snapshot is what readers could see before a run.
type snapshot struct {
	bytes      []byte // pointer.json; nil when there is none yet
	ptr        pointer.Pointer
	maxHistory int64
}

func (w *world) snapshot() snapshot {
	w.t.Helper()
	p, b, err := w.pointer()
	if err != nil {
		w.t.Fatalf("pointer before the run: %v", err)
	}
	hist, bad := w.history()
	if len(bad) > 0 {
		w.t.Fatalf("history before the run: %v", bad)
	}
	s := snapshot{bytes: b, ptr: p}
	for g := range hist {
		s.maxHistory = max(s.maxHistory, g)
	}
	return s
}

// pointer reads pointer.json as a reader does, without failing the test:
// a torn or unparsable pointer is a violation to count.
func (w *world) pointer() (pointer.Pointer, []byte, error) {
	b, _, err := w.b.Get(context.Background(), "pointer.json")
	if errors.Is(err, fs.ErrNotExist) {
		return pointer.Empty(), nil, nil
	}
	if err != nil {
		return pointer.Pointer{}, nil, err
	}
	p, err := pointer.Decode(b)
	return p, b, err
}

// history reads every pointer-history/<G>.json; each must parse and hold
// generation G. Dot-prefixed temp files are a crashed writer's garbage and
// are not history.
func (w *world) history() (map[int64]pointer.Pointer, []string) {
	entries, _, err := w.b.ListDir(context.Background(), "pointer-history")
	if errors.Is(err, fs.ErrNotExist) {
		return map[int64]pointer.Pointer{}, nil
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("list history: %v", err)}
	}
	out := map[int64]pointer.Pointer{}
	var bad []string
	for _, e := range entries {
		base := path.Base(e.Key)
		name, ok := strings.CutSuffix(base, ".json")
		if strings.HasPrefix(base, ".") || !ok {
			continue
		}
		g, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			bad = append(bad, fmt.Sprintf("history file %s is not named by a generation", base))
			continue
		}
		b, _, err := w.b.Get(context.Background(), e.Key)
		if err != nil {
			bad = append(bad, fmt.Sprintf("read history %s: %v", base, err))
			continue
		}
		p, err := pointer.Decode(b)
		if err != nil || p.Generation != g {
			bad = append(bad, fmt.Sprintf("history %s does not parse as generation %d: %v", base, g, err))
			continue
		}
		out[g] = p
	}
	return out, bad
}

// checkEntries checks every date the pointer names: its files all live in
// the staging prefix of the one job the entry names, exist with the listed
// bytes and rows, the entry's gate report is that job's and passed, and the
// entry's counts are the ground truth.
func (w *world) checkEntries(p pointer.Pointer) []string {
	var bad []string
	for d, e := range p.Dates {
		prefix := warehouse.StagingDir(e.JobID) + "/"
		files := append(append([]pointer.File{}, e.FactFiles...), e.CourseDayFiles...)
		if len(e.FactFiles) == 0 || len(e.CourseDayFiles) == 0 {
			bad = append(bad, fmt.Sprintf("%s: entry of %s lists %d fact and %d course_day files", d, e.JobID, len(e.FactFiles), len(e.CourseDayFiles)))
		}
		for _, f := range files {
			if !strings.HasPrefix(f.Path, prefix) {
				bad = append(bad, fmt.Sprintf("%s: entry of %s names %s, outside its staging prefix: two jobs mixed in one date", d, e.JobID, f.Path))
			}
			abs := publishtest.Join(w.t, w.wh, f.Path)
			fi, err := w.b.Stat(context.Background(), f.Path)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: listed file %s: %v", d, f.Path, err))
				continue
			}
			if fi.Size != f.Bytes {
				bad = append(bad, fmt.Sprintf("%s: %s has %d bytes, listed %d", d, f.Path, fi.Size, f.Bytes))
			}
			var rows int64
			if err := w.db.QueryRow(fmt.Sprintf("SELECT num_rows FROM parquet_file_metadata('%s')", abs)).Scan(&rows); err != nil {
				bad = append(bad, fmt.Sprintf("%s: read %s: %v", d, f.Path, err))
			} else if rows != f.Rows {
				bad = append(bad, fmt.Sprintf("%s: %s has %d rows, listed %d", d, f.Path, rows, f.Rows))
			}
		}
		if e.GateReport != warehouse.GatePath(e.JobID) {
			bad = append(bad, fmt.Sprintf("%s: gate report %s is not %s's", d, e.GateReport, e.JobID))
		}
		var r gate.Report
		if b, _, err := w.b.Get(context.Background(), e.GateReport); err != nil {
			bad = append(bad, fmt.Sprintf("%s: gate report of %s: %v", d, e.JobID, err))
		} else if err := json.Unmarshal(b, &r); err != nil || !r.Passed || r.JobID != e.JobID || !slices.Contains(r.Dates, d.String()) {
			bad = append(bad, fmt.Sprintf("%s: gate report of %s: passed %v, job %s, dates %v, err %v", d, e.JobID, r.Passed, r.JobID, r.Dates, err))
		}
		want := w.fx.Expected.ByDate[w.truth(d)]
		if e.EventCount != want.Events || e.UnknownLessonCount != want.Unknown {
			bad = append(bad, fmt.Sprintf("%s: entry of %s counts %d events, %d unknown; want %d, %d", d, e.JobID, e.EventCount, e.UnknownLessonCount, want.Events, want.Unknown))
		}
	}
	return bad
}

// checkVisible reads both tables exactly as readers do and compares them
// with the ground truth: one computation per date, every row from the job
// the entry names, no date missing or extra.
func (w *world) checkVisible(p pointer.Pointer) []string {
	var bad []string
	cd := publishtest.VisibleCourseDay(w.t, w.wh)
	facts := publishtest.FactSum(w.t, w.wh)
	for d, e := range p.Dates {
		want := w.fx.Expected.ByDateCourse[w.truth(d)]
		if len(cd[d]) != len(want) {
			bad = append(bad, fmt.Sprintf("%s: %d courses visible, want %d", d, len(cd[d]), len(want)))
		}
		for course, row := range cd[d] {
			x := want[course]
			exp := publishtest.CourseDay{Events: x.Events, Matched: x.Matched, Unknown: x.Unknown, Enrolled: x.Enrolled, Learners: x.Learners, JobID: e.JobID}
			if row != exp {
				bad = append(bad, fmt.Sprintf("%s %s: visible %+v, want %+v", d, course, row, exp))
			}
		}
		if want := w.fx.Expected.ByDate[w.truth(d)].Events; facts[d] != want {
			bad = append(bad, fmt.Sprintf("%s: visible fact sum %d, want %d", d, facts[d], want))
		}
	}
	for d := range facts {
		if _, ok := p.Dates[d]; !ok {
			bad = append(bad, fmt.Sprintf("%s: visible but not in the pointer", d))
		}
	}
	return bad
}

func (w *world) checkRaw() []string {
	if h := publishtest.Hash(w.t, w.fx.In(), ""); h != w.rawHash {
		return []string{"the input tree changed"}
	}
	return nil
}

// checkReaders is every check a reader's view must pass at rest.
func (w *world) checkReaders(p pointer.Pointer) []string {
	bad := w.checkEntries(p)
	if len(bad) == 0 { // visible reads of a missing file would fail the test outright
		bad = append(bad, w.checkVisible(p)...)
	}
	return append(bad, w.checkRaw()...)
}

// publish runs one uncrashed publish with a new job id and checks that it
// moved the pointer one generation past the newest history copy (so a
// generation orphaned by a crash was rolled forward, not overwritten), that
// it names this job for its dates, and that readers see the truth.
// It returns how long the process ran.
func (w *world) publish(kind string, ds []string) (time.Duration, []string) {
	w.t.Helper()
	before := w.snapshot()
	id := w.newID(kind)
	code, _, stderr, ran := w.run(nil, id, ds, 0)
	if code != 0 {
		return ran, []string{fmt.Sprintf("publish %s: exit %d: %s", id, code, lastLine(stderr))}
	}
	p, _, err := w.pointer()
	if err != nil {
		return ran, []string{fmt.Sprintf("after publish %s: pointer: %v", id, err)}
	}
	var bad []string
	if p.Generation != before.maxHistory+1 || p.UpdatedByJobID != id {
		bad = append(bad, fmt.Sprintf("publish %s: generation %d by %s, want %d by %s", id, p.Generation, p.UpdatedByJobID, before.maxHistory+1, id))
	}
	for _, ds := range ds {
		if got := p.Dates[dates.MustParse(ds)].JobID; got != id {
			bad = append(bad, fmt.Sprintf("publish %s: %s names %s", id, ds, got))
		}
	}
	return ran, append(bad, w.checkReaders(p)...)
}

// Where a kill landed, judged from what it left in the warehouse.
const (
	phaseStart   = "before-attempt-record" // not even _attempt.json
	phaseAttempt = "attempt-record"        // _attempt.json, no staged Parquet
	phaseStaging = "staging"               // staged Parquet, no _gate.json
	phaseGated   = "gated"                 // _gate.json, pointer untouched
	phaseHistory = "history-copy"          // history G+1 written, pointer.json still G
	phasePointer = "pointer-moved"         // pointer.json at G+1
)

var phases = []string{phaseStart, phaseAttempt, phaseStaging, phaseGated, phaseHistory, phasePointer}

// checkAfterKill checks the warehouse a killed publish of jobID left
// behind against the snapshot taken before it, and says where it died.
func (w *world) checkAfterKill(before snapshot, jobID string, ds []string) (string, []string) {
	w.settle()
	p, b, err := w.pointer()
	if err != nil {
		return "", []string{fmt.Sprintf("pointer.json does not parse after killing %s: %v", jobID, err)}
	}
	hist, bad := w.history()
	if before.maxHistory != before.ptr.Generation {
		bad = append(bad, fmt.Sprintf("before killing %s the pointer was at %d and the history at %d: the previous rerun did not roll forward", jobID, before.ptr.Generation, before.maxHistory))
	}
	switch p.Generation {
	case before.ptr.Generation:
		if !bytes.Equal(b, before.bytes) {
			bad = append(bad, fmt.Sprintf("pointer.json at the old generation %d but not the old bytes", p.Generation))
		}
	case before.ptr.Generation + 1:
		if p.UpdatedByJobID != jobID {
			bad = append(bad, fmt.Sprintf("pointer generation %d by %s, not by the killed %s", p.Generation, p.UpdatedByJobID, jobID))
		}
		for d, e := range p.Dates {
			if mine := slices.Contains(ds, d.String()); mine && e.JobID != jobID {
				bad = append(bad, fmt.Sprintf("new generation: %s names %s, want %s", d, e.JobID, jobID))
			} else if !mine && !reflect.DeepEqual(e, before.ptr.Dates[d]) {
				bad = append(bad, fmt.Sprintf("new generation: %s changed although %s did not publish it", d, jobID))
			}
		}
		if !reflect.DeepEqual(hist[p.Generation], p) {
			bad = append(bad, fmt.Sprintf("pointer generation %d differs from its history copy", p.Generation))
		}
	default:
		bad = append(bad, fmt.Sprintf("pointer generation %d after killing %s; want the old %d or the new %d", p.Generation, jobID, before.ptr.Generation, before.ptr.Generation+1))
	}
	for g, h := range hist {
		if g > before.maxHistory+1 || (g == before.maxHistory+1 && h.UpdatedByJobID != jobID) {
			bad = append(bad, fmt.Sprintf("history generation %d by %s appeared while only %s ran", g, h.UpdatedByJobID, jobID))
		}
	}
	bad = append(bad, w.checkReaders(p)...)

	exists := func(rel string) bool { _, err := w.b.Stat(context.Background(), rel); return err == nil }
	phase := phaseStart
	switch {
	case p.Generation == before.ptr.Generation+1:
		phase = phasePointer
	case hist[before.maxHistory+1].UpdatedByJobID == jobID:
		phase = phaseHistory
	case exists(warehouse.GatePath(jobID)):
		phase = phaseGated
	case w.stagedParquet(jobID):
		phase = phaseStaging
	case exists(warehouse.AttemptPath(jobID)):
		phase = phaseAttempt
	}
	return phase, bad
}

// settle waits, on S3, until pointer.json stops changing: a PUT the killed
// process had already sent may still be applied by the server after the
// process is gone (as in production), and the checks must judge the state
// once it has landed, not read the pointer before it and the tables after.
func (w *world) settle() {
	if !w.b.Location().IsS3() {
		return
	}
	_, last, _ := w.pointer()
	for range 10 {
		time.Sleep(300 * time.Millisecond)
		_, now, _ := w.pointer()
		if bytes.Equal(now, last) {
			return
		}
		last = now
	}
}

func (w *world) stagedParquet(jobID string) bool {
	objs, _ := w.b.List(context.Background(), warehouse.StagingDir(jobID)+"/")
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".parquet") {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
