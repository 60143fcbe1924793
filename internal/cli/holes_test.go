package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/testenv"
)

// A warehouse path is a path, never a pattern: read and status of W/wh?
// beside a sibling W/whB see W/wh? alone.
func TestReadWarehousePathIsNotAPattern(t *testing.T) {
	w := biNewWS(t)
	exp := biReadExpected(t, w.src)
	for _, wh := range []string{"wh?", "whB"} {
		args := w.publishArgs("into-"+strings.Trim(wh, "?"), biGoodDates, "--warehouse", filepath.Join(w.dir, wh))
		if r := biRun(t, args...); r.code != 0 {
			t.Fatalf("publish into %s: exit %d\n%s", wh, r.code, r.stderr)
		}
	}
	r := biRun(t, "read", engine.CourseDayTable, "--warehouse", filepath.Join(w.dir, "wh?"), "--format", "csv")
	if r.code != 0 {
		t.Fatalf("read: exit %d\n%s", r.code, r.stderr)
	}
	recs, col := csvRows(t, r.stdout)
	sums := map[string]int64{}
	for _, rec := range recs[1:] {
		n, err := strconv.ParseInt(rec[col["event_count"]], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sums[rec[col["event_date"]]] += n
		if job := rec[col["job_id"]]; job != "into-wh" {
			t.Errorf("row of job %s read through W/wh?", job)
		}
	}
	for _, d := range []string{"2026-03-02", "2026-03-03"} {
		if want := exp.ByDate[dates.MustParse(d)].Events; sums[d] != want {
			t.Errorf("%s: read sums %d events through W/wh?, want %d (W/whB holds the same again)", d, sums[d], want)
		}
	}
	st := biRun(t, "status", "--warehouse", filepath.Join(w.dir, "wh?"), "--format", "json")
	if st.code != 0 || !strings.Contains(st.stdout, `"updated_by_job_id": "into-wh"`) || strings.Contains(st.stdout, "into-whB") {
		t.Errorf("status of W/wh?: exit %d\n%s", st.code, st.stdout)
	}
}

// A held pointer lock is waited for with a log line naming the holder, and
// given up after --lock-timeout (exit 1, naming the holder), by publish and
// gc alike; the pointer is untouched.
func TestHeldLockGivesUp(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	before := w.pointerBytes()
	_, store := publishtest.Warehouse(w.warehouse)
	_, unlock, err := store.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	holder := "held by pid " + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"publish", w.publishArgs("waits-1", biGoodDates, "--lock-timeout", "1500ms")},
		{"gc", []string{"gc", "--warehouse", w.warehouse, "--min-age", "1h", "--lock-timeout", "1500ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := biRun(t, tc.args...)
			if r.code != exitcode.Error {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			line := r.errLine(t)
			for _, says := range []string{"gave up waiting for the pointer lock after 1.5s", holder, "--lock-timeout"} {
				if !strings.Contains(line, says) {
					t.Errorf("error %q does not say %q", line, says)
				}
			}
			if !strings.Contains(r.stderr, `"msg":"waiting for the pointer lock"`) || !strings.Contains(r.stderr, holder) {
				t.Errorf("no log line says what is waited for:\n%s", r.stderr)
			}
			if after := w.pointerBytes(); string(after) != string(before) {
				t.Errorf("pointer.json changed")
			}
		})
	}
}

// A closed stdout after the pointer moved costs only the summary: the real
// process exits 0 (not 141 from SIGPIPE) and logs that it could not print.
func TestClosedStdoutAfterPublish(t *testing.T) {
	w := biNewWS(t)
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rd.Close() // the reader went away: every write to stdout fails
	cmd := exec.Command(publishtest.Binary(t), w.publishArgs("closed-stdout", biGoodDates)...)
	cmd.Stdout = wr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	wr.Close()
	if err != nil {
		t.Fatalf("publish with a closed stdout: %v (want exit 0)\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "published, but the summary could not be printed to stdout") {
		t.Errorf("stderr does not log the lost summary:\n%s", stderr.String())
	}
	p, err := pointer.Decode(w.pointerBytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"2026-03-02", "2026-03-03"} {
		if e := p.Dates[dates.MustParse(d)]; e.JobID != "closed-stdout" {
			t.Errorf("%s names %q, want closed-stdout", d, e.JobID)
		}
	}
}

// A reader that goes away (status | head) ends a read-only command as it
// ends any Unix filter: exit 0 and no error line, not "broken pipe", exit 1.
func TestClosedStdoutReaders(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	for _, args := range [][]string{
		{"status", "--warehouse", w.warehouse},
		{"read", "fact_lesson_engagement", "--warehouse", w.warehouse, "--date", "2026-03-02", "--format", "csv"},
		{"history", "--warehouse", w.warehouse},
	} {
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		rd.Close()
		cmd := exec.Command(publishtest.Binary(t), args...)
		cmd.Stdout = wr
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err = cmd.Run()
		wr.Close()
		if err != nil || strings.Contains(stderr.String(), "broken pipe") {
			t.Errorf("%s with a closed stdout: %v (want exit 0)\n%s", args[0], err, stderr.String())
		}
	}
}

// Cancellation (a signal) is never a usage error: whatever step it lands in,
// the exit code is 1 and nothing is published.
func TestCancelledRunIsNotUsage(t *testing.T) {
	w := biNewWS(t)
	for _, args := range [][]string{
		w.publishArgs("cancelled-1", biGoodDates),
		{"explain", "--config", w.conf, "--dates", biGoodDates, "--raw", w.raw, "--lessons", w.lessons, "--enrollments", w.enrollments},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb strings.Builder
		if code := cli.Main(ctx, args, &out, &errb); code != exitcode.Error {
			t.Errorf("%s with a cancelled context: exit %d, want 1\n%s", args[0], code, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(w.warehouse, "pointer.json")); err == nil {
		t.Errorf("a cancelled publish wrote a pointer")
	}
}

// A directory in pointer.json's place is damage, said at once: publish
// does not take it for "no pointer" and retry a generation 1 the history
// holds, and the readers' commands do not call the warehouse empty.
func TestPointerIsADirectory(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	p := filepath.Join(w.warehouse, "pointer.json")
	if err := os.Rename(p, p+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	historyBefore := biHashTree(t, filepath.Join(w.warehouse, "pointer-history"))
	for _, args := range [][]string{
		w.publishArgs("after-damage", biGoodDates, "--lock-timeout", "2s"),
		{"status", "--warehouse", w.warehouse},
		{"read", "course_day", "--warehouse", w.warehouse},
		{"history", "--warehouse", w.warehouse},
		{"gc", "--warehouse", w.warehouse, "--dry-run"},
	} {
		t.Run(args[0], func(t *testing.T) {
			start := time.Now()
			r := biRun(t, args...)
			if r.code != exitcode.Error {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			// Bounded, not timed: the bug retried for two minutes.
			if took := time.Since(start); took > time.Minute {
				t.Errorf("took %s: retried instead of refusing", took)
			}
			if line := r.errLine(t); !strings.Contains(line, p+" is a directory") {
				t.Errorf("error %q does not say %s is a directory", line, p)
			}
		})
	}
	biDiffTrees(t, "pointer-history", historyBefore, biHashTree(t, filepath.Join(w.warehouse, "pointer-history")))
}

// --config given empty (the DAG's engagement_config Variable left blank)
// is refused, not read as no file: the run would publish on the defaults,
// without the production memory limit, hot courses or freshness bound.
func TestEmptyConfigRefused(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	before := w.pointerBytes()
	for _, args := range [][]string{
		w.publishArgs("empty-conf", biGoodDates, "--config", ""),
		{"explain", "--config", "", "--dates", biGoodDates, "--raw", w.raw, "--lessons", w.lessons, "--enrollments", w.enrollments},
	} {
		r := biRun(t, args...)
		if r.code != exitcode.Usage || !strings.Contains(r.errLine(t), "--config is empty") {
			t.Errorf("%s --config \"\": exit %d, want 2 saying --config is empty\n%s", args[0], r.code, r.stderr)
		}
	}
	if !bytes.Equal(w.pointerBytes(), before) {
		t.Error("pointer.json changed")
	}
}

// An optional --date given empty (an unset variable in a sensor's script)
// is refused rather than read as every date; read of a date the pointer
// does not hold exits 5 as status does, never an empty table.
func TestDateFlags(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"status", "--warehouse", w.warehouse, "--date", ""}, exitcode.Usage, "--date is empty"},
		{[]string{"read", "course_day", "--warehouse", w.warehouse, "--date="}, exitcode.Usage, "--date is empty"},
		{[]string{"history", "--warehouse", w.warehouse, "--date", ""}, exitcode.Usage, "history: --date is empty"},
		{[]string{"read", "course_day", "--warehouse", w.warehouse, "--date", "2026-03-05"}, exitcode.NotPublished, "read: 2026-03-05 is not published"},
		{[]string{"read", "fact_lesson_engagement", "--warehouse", w.warehouse, "--date", "2026-03-05", "--format", "csv"}, exitcode.NotPublished, "2026-03-05 is not published"},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.says, func(t *testing.T) {
			r := biRun(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			if line := r.errLine(t); !strings.Contains(line, tc.says) {
				t.Errorf("error %q does not say %q", line, tc.says)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
	// The variable set but empty is the flag given empty (a sensor whose
	// template rendered nothing): refused, naming the variable, never
	// every date with exit 0. Unset, it is every date.
	for _, args := range [][]string{{"status", "--warehouse", w.warehouse}, {"read", "course_day", "--warehouse", w.warehouse}, {"history", "--warehouse", w.warehouse}} {
		r := runEnv(t, map[string]string{"ENGAGEMENT_DATE": ""}, args...)
		if r.code != exitcode.Usage || !strings.Contains(r.errLine(t), "ENGAGEMENT_DATE is empty") || r.stdout != "" {
			t.Errorf("%s with ENGAGEMENT_DATE empty: exit %d, stdout %q\n%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	if r := runEnv(t, map[string]string{}, "status", "--warehouse", w.warehouse); r.code != 0 {
		t.Errorf("status with ENGAGEMENT_DATE unset: exit %d\n%s", r.code, r.stderr)
	}
}

// Integer flags and their variables are decimal: pflag read a leading 0 as
// octal, so --to-generation 010 rolled back to generation 8, exit 0, and
// 0x10 as hex.
func TestIntegerFlagsAreDecimal(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	if r := biRun(t, w.publishArgs("good-2", biGoodDates)...); r.code != 0 { // generation 2
		t.Fatalf("second publish: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		vars map[string]string
		args []string
		code int
		says string // on the error line, or on stdout for exit 0
	}{
		{nil, []string{"rollback", "--warehouse", w.warehouse, "--date", "2026-03-02", "--to-generation", "010", "--job-id", "rb-1"},
			exitcode.Usage, "--to-generation 10: the warehouse is at generation 2"},
		{nil, []string{"rollback", "--warehouse", w.warehouse, "--date", "2026-03-02", "--to-generation", "0x1", "--job-id", "rb-2"},
			exitcode.Usage, `--to-generation "0x1": not a whole number in decimal digits`},
		{map[string]string{"ENGAGEMENT_RETAIN_GENERATIONS": "010"}, []string{"gc", "--warehouse", w.warehouse, "--dry-run"},
			0, "kept pointer-history/1.json: within the 10 newest generations"},
		{nil, []string{"report", "--warehouse", w.warehouse, "--out", t.TempDir(), "--runs", "1_0"},
			exitcode.Usage, `--runs "1_0": not a whole number in decimal digits`},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.says, func(t *testing.T) {
			r := runEnv(t, tc.vars, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			got := r.stdout
			if tc.code != 0 {
				got = r.errLine(t)
			}
			if !strings.Contains(got, tc.says) {
				t.Errorf("%q does not say %q", got, tc.says)
			}
		})
	}
	out := filepath.Join(t.TempDir(), "day")
	if r := biRun(t, "gen", "--out", out, "--events", "0300"); r.code != 0 {
		t.Fatalf("gen --events 0300: exit %d\n%s", r.code, r.stderr)
	}
	if exp, err := gen.ReadExpected(filepath.Join(out, "expected.json")); err != nil || exp.Events != 300 {
		t.Errorf("gen --events 0300 made %d events (%v), want 300", exp.Events, err)
	}
	// The seed too: --seed 010 made seed 8's files and recorded 8.
	seeded := filepath.Join(t.TempDir(), "seeded")
	if r := biRun(t, "gen", "--out", seeded, "--events", "200", "--seed", "010"); r.code != 0 || !strings.Contains(r.stdout, "(seed 10,") {
		t.Errorf("gen --seed 010: exit %d, stdout %q: want seed 10", r.code, r.stdout)
	}
	if r := biRun(t, "gen", "--out", filepath.Join(t.TempDir(), "hex"), "--seed", "0x8"); r.code != exitcode.Usage || !strings.Contains(r.errLine(t), "not a whole number in decimal digits") {
		t.Errorf("gen --seed 0x8: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

// A pointer.json put back by hand (an old history copy written over it)
// is refused by every write: publish and rollback now say so before any
// work, so a scheduler's retry costs no staging, and a refused rollback
// leaves no record taking its job id. history says the same, not "an
// interrupted write" that the next publish would mend.
func TestHandCopiedPointerRefusedBeforeWork(t *testing.T) {
	for _, copyMode := range []string{"cp", "cp -p"} {
		t.Run(copyMode, func(t *testing.T) { testHandCopiedPointer(t, copyMode == "cp -p") })
	}
}

// testHandCopiedPointer copies generation 2 over pointer.json; with
// keepTime as cp -p (or rsync -a, or a backup's restore) does, which keeps
// the history copy's modification time: that copy was rolled forward over
// in silence, undoing the operator's revert.
func testHandCopiedPointer(t *testing.T, keepTime bool) {
	w := biNewWS(t)
	w.goodPublish()
	for _, job := range []string{"good-2", "good-3"} {
		if r := biRun(t, w.publishArgs(job, biGoodDates)...); r.code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", job, r.code, r.stderr)
		}
	}
	ptr := filepath.Join(w.warehouse, "pointer.json")
	src := filepath.Join(w.warehouse, "pointer-history", "2.json")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ptr, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().Add(time.Minute)
	if keepTime {
		fi, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		stamp = fi.ModTime()
	}
	if err := os.Chtimes(ptr, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	const says = "it was put back by hand"
	if r := biRun(t, "history", "--warehouse", w.warehouse); r.code != 0 || !strings.Contains(r.stdout, "warning: the next publish or rollback will refuse to move pointer.json") ||
		!strings.Contains(r.stdout, says) || strings.Contains(r.stdout, "is committed past pointer.json") {
		t.Errorf("history: exit %d, want the refusal warned of\n%s%s", r.code, r.stdout, r.stderr)
	}
	before := w.hashTree(w.warehouse)
	for _, tc := range []struct {
		args []string
		made string // what the command must not have made
	}{
		{w.publishArgs("good-4", biGoodDates), filepath.Join(w.warehouse, "staging", "job_id=good-4")},
		{[]string{"rollback", "--warehouse", w.warehouse, "--date", "2026-03-02", "--to-generation", "1", "--job-id", "back-1"},
			filepath.Join(w.warehouse, "rollbacks", "job_id=back-1.json")},
	} {
		r := biRun(t, tc.args...)
		if r.code != exitcode.Error || !strings.Contains(r.errLine(t), says) {
			t.Errorf("%s: exit %d, want 1 saying %q\n%s", tc.args[0], r.code, says, r.stderr)
		}
		if _, err := os.Stat(tc.made); err == nil {
			t.Errorf("%s made %s before it was refused", tc.args[0], tc.made)
		}
	}
	if after := w.hashTree(w.warehouse); !maps.Equal(before, after) {
		t.Errorf("the refused writes changed the warehouse")
	}
}

// A first publish that stopped after committing generation 1 and before
// pointer.json (here: pointer.json removed after it) heals with the next
// publish: it is no usage mistake (exit 2, which a scheduler does not
// retry and a sensor fails on). status and read of one date say it is not
// published yet (exit 5, a sensor waits); the other commands exit 1.
func TestFirstPublishNotYetVisible(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	if err := os.Remove(filepath.Join(w.warehouse, "pointer.json")); err != nil {
		t.Fatal(err)
	}
	const says = "its history holds only generation 1"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"status", "--warehouse", w.warehouse, "--date", "2026-03-02"}, exitcode.NotPublished},
		{[]string{"read", "course_day", "--warehouse", w.warehouse, "--date", "2026-03-02"}, exitcode.NotPublished},
		{[]string{"status", "--warehouse", w.warehouse}, exitcode.Error},
		{[]string{"history", "--warehouse", w.warehouse}, exitcode.Error},
		{[]string{"gc", "--warehouse", w.warehouse, "--dry-run"}, exitcode.Error},
	} {
		r := biRun(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.errLine(t), says) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", tc.args[:1], r.code, tc.code, says, r.stderr)
		}
	}
	// The next publish rolls generation 1 forward and goes on from it.
	if r := biRun(t, w.publishArgs("good-2", "2026-03-02")...); r.code != 0 {
		t.Fatalf("next publish: exit %d\n%s", r.code, r.stderr)
	}
	if r := biRun(t, "status", "--warehouse", w.warehouse, "--date", "2026-03-03"); r.code != 0 {
		t.Errorf("status of generation 1's other date after the next publish: exit %d\n%s", r.code, r.stderr)
	}
}

// TestStatusDateChecksFiles: status --date D, what a sensor waits on, says
// readers can read D only when D's files are there as the pointer recorded
// them. A published file deleted (a lifecycle rule on staging/) or cut
// short read as published with exit 0 while every reader of the date
// failed; it is exit 1 naming the file. Another date is still exit 0.
func TestStatusDateChecksFiles(t *testing.T) {
	db := publishtest.DB(t)
	for _, tc := range []struct {
		name   string
		break_ func(p string) error
		says   string
	}{
		{"missing", os.Remove, "is missing"},
		{"cut short", func(p string) error { return os.Truncate(p, 10) }, "holds 10 bytes, the pointer recorded"},
		// Another table's file in its place: DuckDB's read failed on a
		// missing column, naming no file.
		{"replaced by a fact file", func(p string) error {
			facts, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(p))), "fact_lesson_engagement", "event_date=2026-03-02", "*.parquet"))
			if err != nil || len(facts) == 0 {
				return fmt.Errorf("no fact file beside %s: %v", p, err)
			}
			b, err := os.ReadFile(facts[0])
			if err != nil {
				return err
			}
			return os.WriteFile(p, b, 0o644)
		}, "bytes, the pointer recorded"},
		// A row fewer, padded to the published size (a rewrite that
		// happened to keep it): read showed the other rows, exit 0.
		{"replaced by one of its size", func(p string) error { return sameSizeFewerRows(db, p) }, "rows, the pointer recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := biNewWS(t)
			w.goodPublish()
			files, err := filepath.Glob(filepath.Join(w.warehouse, "staging", "job_id="+biGoodJob, "course_day", "event_date=2026-03-02", "*.parquet"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no course_day file of 2026-03-02: %v", err)
			}
			if err := tc.break_(files[0]); err != nil {
				t.Fatal(err)
			}
			r := biRun(t, "status", "--warehouse", w.warehouse, "--date", "2026-03-02")
			if r.code != exitcode.Error || !strings.Contains(r.errLine(t), tc.says) || !strings.Contains(r.errLine(t), filepath.Base(files[0])) {
				t.Errorf("status --date 2026-03-02: exit %d, %q; want 1 saying the file %s", r.code, r.errLine(t), tc.says)
			}
			if r := biRun(t, "status", "--warehouse", w.warehouse, "--date", "2026-03-03"); r.code != 0 {
				t.Errorf("status --date 2026-03-03: exit %d, want 0\n%s", r.code, r.stderr)
			}
			// A reader of the date gets the same words, not the engine's.
			r = biRun(t, "read", "course_day", "--warehouse", w.warehouse, "--date", "2026-03-02")
			if r.code != exitcode.Error || !strings.Contains(r.errLine(t), tc.says) || !strings.Contains(r.errLine(t), filepath.Base(files[0])) {
				t.Errorf("read course_day --date 2026-03-02: exit %d, %q; want 1 saying the file %s", r.code, r.errLine(t), tc.says)
			}
			if r := biRun(t, "read", "course_day", "--warehouse", w.warehouse, "--date", "2026-03-03"); r.code != 0 {
				t.Errorf("read course_day --date 2026-03-03: exit %d, want 0\n%s", r.code, r.stderr)
			}
		})
	}
}

// sameSizeFewerRows replaces the Parquet file p by a valid one of the same
// size holding fewer rows (one fewer, or none when that is too large):
// key-value metadata pads it to the size.
func sameSizeFewerRows(db *sql.DB, p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	tmp := p + ".other"
	for _, limit := range []string{"(SELECT count(*) - 1 FROM read_parquet('" + p + "'))", "0"} {
		pad := 1
		for range 8 {
			q := fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s') LIMIT %s) TO '%s' (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, KV_METADATA {pad: '%s'})",
				p, limit, tmp, strings.Repeat("x", pad))
			if _, err := db.Exec(q); err != nil {
				return err
			}
			got, err := os.Stat(tmp)
			if err != nil {
				return err
			}
			if got.Size() == fi.Size() {
				return os.Rename(tmp, p)
			}
			if pad += int(fi.Size() - got.Size()); pad < 1 {
				break
			}
		}
	}
	return fmt.Errorf("%s: no rewrite with fewer rows gives its %d bytes", p, fi.Size())
}

// TestHangupUnderNohup: a run started with SIGHUP ignored (nohup, or a
// shell's `trap "" HUP`) keeps it ignored: handling it undid the ignore,
// and the hangup the run was started to survive cancelled it (exit 129).
// Here the run waits on the held pointer lock when the hangup comes, and
// publishes once the lock is let go.
func TestHangupUnderNohup(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	_, store := publishtest.Warehouse(w.warehouse)
	_, unlock, err := store.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	args := w.publishArgs("nohup-1", biGoodDates, "--lock-timeout", "30s")
	cmd := exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$0" "$@"`, publishtest.Binary(t)}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read up to the line that says it waits, then keep the rest.
	var log strings.Builder
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "waiting for the pointer lock") {
			break
		}
	}
	rest := make(chan string)
	go func() {
		b, _ := io.ReadAll(stderr)
		rest <- string(b)
	}()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	unlock()
	log.WriteString(<-rest)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d (%v), want 0: the ignored hangup must not cancel it\n%s", code, err, log.String())
	}
}

// TestReportOutRefusals: report's --out is a directory of its own. Made in
// raw or in the manifest's directory, the page broke the next publish's
// listing (exit 0 for the report, exit 1 for every publish after it); a
// directory holding a user's files is not written into; an earlier
// report's directory is written again.
func TestReportOutRefusals(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	user := filepath.Join(t.TempDir(), "mine")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(t.TempDir(), "gone", "dir"), dangling); err != nil {
		t.Fatal(err)
	}
	// An empty partition raw holds (a day not landed yet), and a link into
	// raw: the page went into the first with exit 0, and pl/../rep made
	// raw/rep, each failing the next publish.
	empty := filepath.Join(w.raw, "ingest_date=2026-03-04")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	intoRaw := filepath.Join(t.TempDir(), "pl")
	if err := os.Symlink(filepath.Join(w.raw, "ingest_date=2026-03-02"), intoRaw); err != nil {
		t.Fatal(err)
	}
	toEmpty := filepath.Join(t.TempDir(), "el")
	if err := os.Symlink(empty, toEmpty); err != nil {
		t.Fatal(err)
	}
	// Data named as Hive names it, and files hidden from every listing
	// (review CQ): the first was taken for a user's directory, the second
	// for data.
	hive, hidden := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(hive, "000000_0"), filepath.Join(hidden, "_x.parquet"), filepath.Join(hidden, ".y.parquet")} {
		if err := os.WriteFile(f, []byte("PAR1 and the rest"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, out, says string
	}{
		{"a symbolic link to nothing", dangling, "a symbolic link to "},
		{"a symbolic link to nothing, with a slash", dangling + "/", "a symbolic link to "},
		{"below a symbolic link to nothing", filepath.Join(dangling, "sub"), dangling + " is a symbolic link to "},
		{"in raw", filepath.Join(w.raw, "report"), "which holds data (ingest_date="},
		{"deeper in raw", filepath.Join(w.raw, "r", "eport"), "which holds data (ingest_date="},
		{"in the manifest's directory", filepath.Join(w.lessons, "report"), ".parquet): an input's next listing would fail on it"},
		{"a user's directory", user, "holds notes.txt, which no report wrote"},
		{"beside Hive-named data", filepath.Join(hive, "report"), "which holds data (000000_0)"},
		{"an empty partition in raw", empty, "is a raw partition"},
		{"below an empty partition", filepath.Join(empty, "rep"), "is a raw partition"},
		{"through a link into raw and ..", intoRaw + "/../newrep", "which holds data (ingest_date="},
		// The kernel refuses a ".." after a part that does not exist;
		// joined on as text, it wrote through the link.
		{"missing/.. then a link to an empty partition", filepath.Join(filepath.Dir(toEmpty), "missing") + "/../el", "'..' after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := biRun(t, "report", "--warehouse", w.warehouse, "--out", tc.out)
			if r.code != exitcode.Usage || !strings.Contains(r.errLine(t), tc.says) {
				t.Fatalf("exit %d, want 2 saying %q\n%s", r.code, tc.says, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(tc.out, "index.html")); err == nil {
				t.Error("the page was written")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(w.raw, "newrep")); err == nil {
		t.Error("raw/newrep was made")
	}
	if r := biRun(t, w.publishArgs("after-reports", biGoodDates)...); r.code != 0 {
		t.Errorf("a publish after the refused reports: exit %d\n%s", r.code, r.stderr)
	}
	if r := biRun(t, "report", "--warehouse", w.warehouse, "--out", filepath.Join(hidden, "report")); r.code != 0 {
		t.Errorf("report beside hidden files only: exit %d\n%s", r.code, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "report")
	for i := range 2 {
		if r := biRun(t, "report", "--warehouse", w.warehouse, "--out", out); r.code != 0 {
			t.Fatalf("report %d into its own directory: exit %d\n%s", i+1, r.code, r.stderr)
		}
		if i == 0 {
			// An export beside the report's directory, once it exists, is no
			// reason to refuse it again.
			if err := os.WriteFile(filepath.Join(filepath.Dir(out), "export.parquet"), []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRerunWhileGCExpires: a published job id rerun while a gc expires
// its generation, between the expiry record naming it and the deletion of
// its staging: exit 4, published, as before and after that window; the
// staging prefix read as an earlier attempt's (exit 2), and an operator
// took it for a failed run (review CU).
func TestRerunWhileGCExpires(t *testing.T) {
	w := biNewWS(t)
	for _, job := range []string{"gcw-1", "gcw-2"} {
		if r := biRun(t, w.publishArgs(job, "2026-03-02")...); r.code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", job, r.code, r.stderr)
		}
	}
	// gc's first two steps, as it takes them: the record, then the copy.
	b, _ := publishtest.Warehouse(w.warehouse)
	if err := history.RecordExpiry(t.Context(), b, history.Expiry{Generations: []int64{1}, JobIDs: []string{"gcw-1"}, At: time.Now().UTC(), Reason: "retain-generations 1"}, 2); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(w.warehouse, "pointer-history", "1.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.warehouse, "staging", "job_id=gcw-1")); err != nil {
		t.Fatalf("gcw-1's staging: %v", err)
	}
	for _, args := range [][]string{w.publishArgs("gcw-1", "2026-03-02"), {"rollback", "--warehouse", w.warehouse, "--date", "2026-03-02", "--to-generation", "2", "--job-id", "gcw-1"}} {
		r := biRun(t, args...)
		if r.code != exitcode.AlreadyPublished || !strings.Contains(r.errLine(t), "job id gcw-1 wrote a generation gc has since expired") {
			t.Errorf("%s as gcw-1: exit %d, %q; want 4, published", args[0], r.code, r.errLine(t))
		}
	}
}

// A warehouse whose first publish is running or was rejected holds
// attempts but no pointer.json: a sensor asking for a date waits (exit 5)
// instead of dying on "no warehouse" (exit 2), as it waits on a first
// generation committed but not yet visible. A path with nothing of
// engagement's in it stays exit 2.
func TestSensorOnANewWarehouse(t *testing.T) {
	w := biNewWS(t)
	if r := biRun(t, w.publishArgs("first-rejected", biGoodDates, "--unknown-cap", "0.001")...); r.code != exitcode.GateRejected {
		t.Fatalf("rejected first publish: exit %d\n%s", r.code, r.stderr)
	}
	running := filepath.Join(t.TempDir(), "running")
	if err := os.MkdirAll(filepath.Join(running, "staging", "job_id=first-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(running, "staging", "job_id=first-1", "_attempt.json"), []byte(`{"job_id":"first-1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	lake := t.TempDir() // another tool's staging layer: no attempt of ours
	if err := os.MkdirAll(filepath.Join(lake, "staging", "orders"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"rejected, a date", []string{"status", "--warehouse", w.warehouse, "--date", "2026-03-02"}, exitcode.NotPublished, "2026-03-02 is not published yet"},
		{"running, a date", []string{"status", "--warehouse", running, "--date", "2026-03-02"}, exitcode.NotPublished, "2026-03-02 is not published yet"},
		{"running, read a date", []string{"read", "course_day", "--warehouse", running, "--date", "2026-03-02"}, exitcode.NotPublished, "is not published yet"},
		{"running, no date", []string{"status", "--warehouse", running}, exitcode.Usage, "nothing is published at"},
		{"nothing of ours", []string{"status", "--warehouse", empty, "--date", "2026-03-02"}, exitcode.Usage, "no warehouse at"},
		{"a data lake's staging/", []string{"status", "--warehouse", lake, "--date", "2026-03-02"}, exitcode.Usage, "no warehouse at"},
		{"running, a misspelt table", []string{"read", "course_dya", "--warehouse", running, "--date", "2026-03-02"}, exitcode.Usage, `unknown table "course_dya"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := biRun(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.errLine(t), tc.says) {
				t.Errorf("exit %d, want %d saying %q\n%s", r.code, tc.code, tc.says, r.stderr)
			}
		})
	}
}

// TestTablesShowPinsEscaped: status and history print a pin as the gate
// shows a key: a bidi override in one (a manifest id read as
// "dim-2026-03-04") reversed the row on the operator's terminal. Publish
// now refuses such a pin (exit 2); a warehouse an older build wrote may
// hold one, and is shown escaped.
func TestTablesShowPinsEscaped(t *testing.T) {
	w := biNewWS(t)
	const pin = "\u202e40-30-6202-mid"
	if r := biRun(t, w.publishArgs("pin-0", biGoodDates, "--manifest-id", pin)...); r.code != exitcode.Usage || !strings.Contains(r.errLine(t), "U+202E") {
		t.Errorf("publish with a bidi override in the pin: exit %d, want 2 naming U+202E\n%s", r.code, r.stderr)
	}
	w.goodPublish()
	_, store := publishtest.Warehouse(w.warehouse)
	cur, _, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	entries := map[dates.Date]pointer.DateEntry{}
	for d, e := range cur.Dates {
		e.JobID, e.ManifestID = "pin-1", pin
		entries[d] = e
	}
	if _, err := pointer.Publish(t.Context(), store, pointer.Commit{JobID: "pin-1", Entries: entries, WrittenAt: time.Now().UTC(), WriterVersion: "older"}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"status", "--warehouse", w.warehouse}, {"history", "--warehouse", w.warehouse}} {
		r := biRun(t, cmd...)
		if r.code != 0 || strings.ContainsRune(r.stdout, '\u202e') || !strings.Contains(r.stdout, `\u202e40-30-6202-mid`) {
			t.Errorf("%s: exit %d, want the pin escaped:\n%s", cmd[0], r.code, r.stdout)
		}
	}
}

// TestSinksUnderADeepWorkingDirectory: under a working directory past the
// system's path limit, where no path resolves from /, the sink files and
// the spill directory are still judged (review CW): the metrics file
// overwrote the --config file, and wrote into raw through a link, each
// exit 0 or 1; now each is refused, exit 2, writing nothing. (So is any
// relative sink there: where it lies cannot be told.)
func TestSinksUnderADeepWorkingDirectory(t *testing.T) {
	w := biNewWS(t)
	conf, err := os.ReadFile(w.conf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.ChdirDeep(t)
	if err := os.WriteFile("job.conf", conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.raw, "rawlnk"); err != nil {
		t.Fatal(err)
	}
	before := w.hashTree(w.raw)
	for _, tc := range []struct {
		name  string
		extra []string
		says  string
	}{
		{"metrics file is the config", []string{"--metrics-file", "job.conf"}, "--metrics-file job.conf is the --config file"},
		// Refused before the two are compared: no path resolves from /.
		{"one file for both sinks", []string{"--metrics-file", "same.out", "--lineage-file", "same.out"}, "--metrics-file same.out: cannot tell whether it lies in"},
		{"metrics file through a link into raw", []string{"--metrics-file", "rawlnk/m.prom"}, "--metrics-file rawlnk/m.prom: cannot tell whether it lies in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(w.publishArgs("deep-"+strings.ReplaceAll(tc.name, " ", "-"), biGoodDates, "--config", "job.conf"), tc.extra...)
			r := biRun(t, args...)
			if r.code != exitcode.Usage || !strings.Contains(r.errLine(t), tc.says) {
				t.Errorf("exit %d, %q; want 2 saying %q", r.code, r.errLine(t), tc.says)
			}
			if got, _ := os.ReadFile("job.conf"); string(got) != string(conf) {
				t.Error("the config file was written")
			}
		})
	}
	if after := w.hashTree(w.raw); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("raw changed: %v", after)
	}
}
