// Package airflow_test runs engagement_daily.py with Airflow's own
// `airflow dags test` (the pinned Airflow of scripts/airflow.sh, its metadata
// database in SQLite under a temporary AIRFLOW_HOME) against the real binary
// and the committed fixture, and reads the outcome back from Airflow's
// metadata database and from the warehouse, never from the DAG's own prints.
package airflow_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/testenv"
)

const (
	dagID = "engagement_daily"
	// The logical date whose run publishes the fixture's two event dates
	// (2026-03-02 and 2026-03-03, with engagement_restate_days 2, the
	// fixture's horizon); the fixture config's run date for freshness is the
	// same day.
	logicalDate = "2026-03-04"
	// The job id template {{ ts_nodash }}-try{{ ti.try_number }}-{{ ti.id }}
	// of that run, up to the try number.
	jobIDPrefix = "20260304T000000-try"
)

// airflow is one AIRFLOW_HOME with a migrated SQLite metadata database.
type airflow struct {
	bin     string // the venv's airflow
	home    string
	env     []string
	logical string // the run's logical date; logicalDate when empty
}

// newAirflow makes an AIRFLOW_HOME under dir whose DAG folder is this
// directory and whose Variables point the DAG at bin, the fixture config
// and warehouse. A copy of template's migrated database saves a migration.
func newAirflow(t *testing.T, bin, dir, engagement, warehouse, template string) *airflow {
	t.Helper()
	home := filepath.Join(dir, "airflow-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		// None of the caller's engagement or Airflow settings may leak in.
		if !strings.HasPrefix(kv, "ENGAGEMENT_") && !strings.HasPrefix(kv, "AIRFLOW") {
			env = append(env, kv)
		}
	}
	root := publishtest.Root()
	env = append(env,
		"AIRFLOW_HOME="+home,
		"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=sqlite:///"+filepath.Join(home, "airflow.db"),
		"AIRFLOW__CORE__DAGS_FOLDER="+filepath.Join(root, "examples", "airflow"),
		"AIRFLOW__CORE__LOAD_EXAMPLES=False",
		"AIRFLOW_VAR_ENGAGEMENT_BIN="+engagement,
		"AIRFLOW_VAR_ENGAGEMENT_CONFIG="+filepath.Join(root, "config", "fixture.conf"),
		"AIRFLOW_VAR_ENGAGEMENT_WAREHOUSE="+warehouse,
		"AIRFLOW_VAR_ENGAGEMENT_RESTATE_DAYS=2",
	)
	a := &airflow{bin: bin, home: home, env: env}
	if template == "" {
		if out, err := a.command(context.Background(), "db", "migrate").CombinedOutput(); err != nil {
			t.Fatalf("airflow db migrate: %v\n%s", err, tail(out))
		}
		return a
	}
	db, err := os.ReadFile(filepath.Join(template, "airflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "airflow.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *airflow) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, a.bin, args...)
	cmd.Env = a.env
	cmd.Dir = a.home
	return cmd
}

// taskTry is one try of a task, from Airflow's metadata database: the
// current try in task_instance, earlier ones in task_instance_history;
// Reschedules counts a sensor's pokes that found nothing (task_reschedule).
type taskTry struct {
	Task  string `json:"task_id"`
	State string `json:"state"`
	Try   int    `json:"try_number"`

	Reschedules int `json:"reschedules"`
}

// tries reads every try of every task of the DAG's runs, earlier tries
// first, with the venv's own Python (sqlite3 is in its standard library).
func (a *airflow) tries(t *testing.T) (current, earlier []taskTry) {
	t.Helper()
	const query = `import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def rows(table, reschedules):
    return [dict(task_id=r[0], state=r[1], try_number=r[2], reschedules=r[3]) for r in db.execute(
        "SELECT task_id, state, try_number, " + reschedules + " FROM " + table + " t WHERE dag_id = ? ORDER BY task_id, try_number",
        (sys.argv[2],))]
print(json.dumps([rows("task_instance", "(SELECT count(*) FROM task_reschedule r WHERE r.ti_id = t.id)"),
                  rows("task_instance_history", "0")]))`
	py := filepath.Join(filepath.Dir(a.bin), "python")
	out, err := exec.Command(py, "-c", query, filepath.Join(a.home, "airflow.db"), dagID).Output()
	if err != nil {
		t.Fatalf("read Airflow's metadata database: %v", err)
	}
	var got [2][]taskTry
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("read Airflow's metadata database: %v: %s", err, out)
	}
	return got[0], got[1]
}

// dagsTest runs `airflow dags test` for the logical date, calls onLine with
// every line it prints, and returns its exit error and output.
func (a *airflow) dagsTest(t *testing.T, extraEnv, extraArgs []string, onLine func(string)) (error, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	logical := a.logical
	if logical == "" {
		logical = logicalDate
	}
	cmd := a.command(ctx, append([]string{"dags", "test", dagID, logical}, extraArgs...)...)
	cmd.Env = append(append([]string{}, a.env...), extraEnv...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	return err, out.Bytes()
}

func tail(out []byte) string {
	const n = 6000
	if len(out) > n {
		return "...\n" + string(out[len(out)-n:])
	}
	return string(out)
}

func find(tries []taskTry, task string) []taskTry {
	var out []taskTry
	for _, tt := range tries {
		if tt.Task == task {
			out = append(out, tt)
		}
	}
	return out
}

// TestDAG: one run whose first try exits 1 and whose retry publishes under
// the next try's job id, and one over the over-cap fixture that the gate
// rejects (exit 3): the task fails on its first try, without a retry.
func TestDAG(t *testing.T) {
	bin := testenv.Tool(t, "ENGAGEMENT_AIRFLOW", "ENGAGEMENT_SKIP_AIRFLOW", "scripts/airflow.sh")
	engagement := publishtest.Binary(t)
	fx := publishtest.LoadFixture(t, "")
	template := newAirflow(t, bin, t.TempDir(), engagement, "", "")

	t.Run("RetriesExit1ThenPublishes", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		if err := os.MkdirAll(wh, 0o755); err != nil {
			t.Fatal(err)
		}
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		// The test holds the pointer lock, so try 1 stages, passes its gate
		// and then gives up on the lock: exit 1, nothing published. The lock
		// is let go when Airflow marks the try up for retry; try 2 starts
		// after the retry delay and publishes.
		_, store := publishtest.Warehouse(wh)
		_, unlock, err := store.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		released := false
		release := func() { once.Do(func() { unlock(); released = true }) }
		defer release()
		err, out := a.dagsTest(t, []string{"ENGAGEMENT_LOCK_TIMEOUT=1s", "ENGAGEMENT_DAG_RETRY_DELAY_SECONDS=3"}, nil, func(line string) {
			if strings.Contains(line, "new_state=up_for_retry") {
				release()
			}
		})
		if err != nil {
			t.Fatalf("airflow dags test: %v\n%s", err, tail(out))
		}
		if !released {
			t.Fatalf("no try was marked up for retry\n%s", tail(out))
		}
		if !strings.Contains(string(out), "gave up waiting for the pointer lock") {
			t.Errorf("try 1 did not fail on the held lock\n%s", tail(out))
		}

		current, earlier := a.tries(t)
		if got := find(current, "publish"); len(got) != 1 || got[0].State != "success" || got[0].Try != 2 {
			t.Errorf("publish in task_instance: %+v, want success on try 2", got)
		}
		if got := find(earlier, "publish"); len(got) != 1 || got[0].Try != 1 || got[0].State != "failed" {
			t.Errorf("publish in task_instance_history: %+v, want try 1 failed", got)
		}
		if got := find(current, "published"); len(got) != 1 || got[0].State != "success" {
			t.Errorf("the sensor published: %+v, want success", got)
		}

		// Readers see try 2's job, with the fixture's figures; try 1's
		// staging is there, named by nothing.
		snap := publishtest.Snapshot(t, wh)
		for _, d := range fx.Expected.Dates {
			want := fx.Expected.ByDate[d]
			got, err := snap.Date(d.String())
			if err != nil {
				t.Fatal(err)
			}
			if !ofTry(got.JobID, jobIDPrefix, "2") || got.EventCount != want.Events || got.UnknownLessonCount != want.Unknown {
				t.Errorf("%s: job %s, %d events, %d unknown; want job %s2-<task instance>, %d, %d",
					d, got.JobID, got.EventCount, got.UnknownLessonCount, jobIDPrefix, want.Events, want.Unknown)
			}
		}
		for try, want := range map[string]bool{"1": true, "2": true, "3": false} {
			if got := tryPaths(t, filepath.Join(wh, "staging"), try, ""); (len(got) == 1) != want {
				t.Errorf("staging of try %s: %v, want one: %v", try, got, want)
			}
		}
	})

	t.Run("OverCapFailsWithoutRetry", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		// A generation is already published: the rejected run must leave it
		// byte for byte.
		if out, err := publishFixture(engagement, fx, wh, "seed-001", "2026-03-02", "2026-03-03"); err != nil {
			t.Fatalf("seed publish: %v\n%s", err, tail(out))
		}
		before, err := os.ReadFile(filepath.Join(wh, "pointer.json"))
		if err != nil {
			t.Fatal(err)
		}
		over := publishtest.LoadFixture(t, "over-cap")
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		// The inputs come from engagement's own ENGAGEMENT_<FLAG> variables,
		// which the task's process passes on; a retry delay of 1 s would let
		// a retry happen within the run if the task allowed one.
		err, out := a.dagsTest(t, []string{
			"ENGAGEMENT_RAW=" + filepath.Join(over.Dir, "raw"),
			"ENGAGEMENT_LESSONS=" + filepath.Join(over.Dir, "lessons"),
			"ENGAGEMENT_ENROLLMENTS=" + filepath.Join(over.Dir, "enrollments"),
			"ENGAGEMENT_DAG_RETRY_DELAY_SECONDS=1",
		}, nil, nil)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("airflow dags test: %v, want a failed run\n%s", err, tail(out))
		}

		current, earlier := a.tries(t)
		if got := find(current, "publish"); len(got) != 1 || got[0].State != "failed" || got[0].Try != 1 {
			t.Errorf("publish in task_instance: %+v, want failed on try 1", got)
		}
		if got := find(earlier, "publish"); len(got) != 0 {
			t.Errorf("publish in task_instance_history: %+v, want no earlier try", got)
		}
		if got := find(current, "published"); len(got) != 1 || got[0].State != "upstream_failed" {
			t.Errorf("the sensor published: %+v, want upstream_failed", got)
		}

		after, err := os.ReadFile(filepath.Join(wh, "pointer.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("pointer.json changed")
		}
		// The gate's own record says why: the cap, on try 1's job id.
		recs := tryPaths(t, filepath.Join(wh, "rejections"), "1", ".json")
		if len(recs) != 1 {
			t.Fatalf("rejection records of try 1: %v, want one\n%s", recs, tail(out))
		}
		rec, err := os.ReadFile(recs[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(rec), "unknown_lesson_cap") {
			t.Errorf("rejection record does not name the cap:\n%s", rec)
		}
		if got := tryPaths(t, filepath.Join(wh, "staging"), "2", ""); len(got) != 0 {
			t.Errorf("a second try ran: %v", got)
		}
	})
	// An operator rolls a date back while the day's publish is between its
	// gate and its pointer move: the publish is refused (exit 6) and the
	// task fails on its first try, without a retry, which would publish
	// over the rollback and bring back what it took away.
	t.Run("RollbackDuringPublishFailsWithoutRetry", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		for _, id := range []string{"seed-001", "seed-002"} {
			if out, err := publishFixture(engagement, fx, wh, id, "2026-03-02", "2026-03-03"); err != nil {
				t.Fatalf("seed publish %s: %v\n%s", id, err, tail(out))
			}
		}
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		var once sync.Once
		var rolled sync.WaitGroup
		var rbOut []byte
		var rbErr error
		err, out := a.dagsTest(t, []string{
			// Long enough for the rollback to land on any machine.
			"ENGAGEMENT_FAILPOINT_DELAY=before-pointer:15s",
			"ENGAGEMENT_DAG_RETRY_DELAY_SECONDS=1",
		}, nil, func(line string) {
			if strings.Contains(line, `"msg":"phase"`) && strings.Contains(line, `"phase":"gate"`) {
				once.Do(func() {
					rolled.Go(func() {
						rbOut, rbErr = exec.Command(engagement, "rollback", "--warehouse", wh, "--date", "2026-03-02",
							"--to-generation", "1", "--job-id", "rb-during-publish").CombinedOutput()
					})
				})
			}
		})
		rolled.Wait()
		if rbOut == nil && rbErr == nil {
			t.Fatalf("the publish's gate never ended; no rollback was run\n%s", tail(out))
		}
		if rbErr != nil {
			t.Fatalf("rollback: %v\n%s", rbErr, rbOut)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("airflow dags test: %v, want a failed run\n%s", err, tail(out))
		}
		if !strings.Contains(string(out), "engagement publish exited 6") {
			t.Errorf("the task did not fail on exit 6\n%s", tail(out))
		}
		current, earlier := a.tries(t)
		if got := find(current, "publish"); len(got) != 1 || got[0].State != "failed" || got[0].Try != 1 {
			t.Errorf("publish in task_instance: %+v, want failed on try 1", got)
		}
		if got := find(earlier, "publish"); len(got) != 0 {
			t.Errorf("publish in task_instance_history: %+v, want no earlier try", got)
		}
		// Readers see the rollback: Monday is generation 1's again, Tuesday
		// generation 2's; no try of the DAG is named.
		snap := publishtest.Snapshot(t, wh)
		for d, want := range map[string]string{"2026-03-02": "seed-001", "2026-03-03": "seed-002"} {
			got, err := snap.Date(d)
			if err != nil {
				t.Fatal(err)
			}
			if got.JobID != want {
				t.Errorf("%s names %s, want %s", d, got.JobID, want)
			}
		}
		if got := tryPaths(t, filepath.Join(wh, "staging"), "2", ""); len(got) != 0 {
			t.Errorf("a second try ran: %v", got)
		}
	})
	// At 06:00 the run day's first events have landed, and its partition
	// is still being written: the horizon counts back from yesterday, so a
	// run restates restatementHorizonDays dates (2 for the fixture), each
	// for the last time once its lateness partition has ended. The
	// fixture is moved to today's dates: the binary reads the real clock.
	t.Run("RunDayPartitionLanded", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		if err := os.MkdirAll(wh, 0o755); err != nil {
			t.Fatal(err)
		}
		today := dates.FromTime(time.Now().UTC())
		shift := int(today - dates.MustParse(logicalDate))
		mon, tue := dates.MustParse("2026-03-02").AddDays(shift), dates.MustParse("2026-03-03").AddDays(shift)
		raw := filepath.Join(dir, "raw")
		db := publishtest.DB(t)
		move := func(from string, to dates.Date, days int, where string) {
			t.Helper()
			part := filepath.Join(raw, "ingest_date="+to.String())
			if err := os.MkdirAll(part, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT * REPLACE (event_id || '-%d' AS event_id, event_time + INTERVAL %d DAY AS event_time)
				FROM read_parquet('%s') %s) TO '%s' (FORMAT parquet)`,
				days, days, filepath.Join(fx.Dir, "raw", "ingest_date="+from, "part-0.parquet"), where, filepath.Join(part, "part-0.parquet"))); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range []string{"2026-03-02", "2026-03-03"} {
			move(d, dates.MustParse(d).AddDays(shift), shift, "")
		}
		// The run day's first events: 2026-03-03's a day later (its
		// partition's late event of 2026-03-02 left out).
		move("2026-03-03", today, shift+1, "WHERE event_time >= TIMESTAMPTZ '2026-03-03 00:00:00+00'")
		if today != dates.FromTime(time.Now().UTC()) {
			t.Fatal("the UTC date changed while the test set up its days: run it again")
		}
		// One date more than the horizon reaches one past it.
		args := publishtest.WithFlag(fx.Args(wh, "horizon-3", mon.AddDays(-1).String(), mon.String(), tue.String()), "--raw", raw)
		args = append(args, "--as-of", today.String())
		if out, err := exec.Command(engagement, args...).CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "today's is still being written") {
			t.Fatalf("three dates with the run day landed: %v, want exit 2 for the horizon counted from yesterday\n%s", err, tail(out))
		}
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		a.logical = today.String()
		err, out := a.dagsTest(t, []string{"ENGAGEMENT_RAW=" + raw}, nil, nil)
		if err != nil {
			t.Fatalf("airflow dags test: %v\n%s", err, tail(out))
		}
		current, _ := a.tries(t)
		if got := find(current, "publish"); len(got) != 1 || got[0].State != "success" || got[0].Try != 1 {
			t.Errorf("publish in task_instance: %+v, want success on try 1\n%s", got, tail(out))
		}
		snap := publishtest.Snapshot(t, wh)
		prefix := strings.ReplaceAll(today.String(), "-", "") + "T000000-try"
		var first string
		for fixtureDay, d := range map[string]dates.Date{"2026-03-02": mon, "2026-03-03": tue} {
			got, err := snap.Date(d.String())
			want := fx.Expected.ByDate[dates.MustParse(fixtureDay)]
			if err != nil || !ofTry(got.JobID, prefix, "1") || got.EventCount != want.Events || got.UnknownLessonCount != want.Unknown {
				t.Errorf("%s: %+v, %v; want job %s1-<task instance> with %d events, %d unknown (the fixture's %s)", d, got, err, prefix, want.Events, want.Unknown, fixtureDay)
			}
			first = got.JobID
		}
		// The run made again for the same logical date (the README's
		// `airflow dags test` twice, a run deleted and triggered again):
		// its try 1 is a new task instance, whose job id is new too. With
		// the try number alone it was the id already published: exit 4.
		if err, out := a.dagsTest(t, []string{"ENGAGEMENT_RAW=" + raw}, nil, nil); err != nil {
			t.Fatalf("airflow dags test again for %s: %v\n%s", today, err, tail(out))
		}
		again, err := publishtest.Snapshot(t, wh).Date(mon.String())
		if err != nil || !ofTry(again.JobID, prefix, "1") || again.JobID == first {
			t.Errorf("the run made again: %+v, %v; want a new try-1 job id, not %s", again, err, first)
		}
	})

	// The sensor's status exits 1 (pointer.json unreadable for a moment):
	// the try is retried, as publish's exit 1 is, not failed at once; the
	// test restores the pointer when Airflow marks the try up for retry.
	t.Run("SensorRetriesExit1", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		if out, err := publishFixture(engagement, fx, wh, "seed-001", "2026-03-02", "2026-03-03"); err != nil {
			t.Fatalf("seed publish: %v\n%s", err, tail(out))
		}
		ptr := filepath.Join(wh, "pointer.json")
		good, err := os.ReadFile(ptr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ptr, []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		var once sync.Once
		restored := false
		err, out := a.dagsTest(t, []string{"ENGAGEMENT_DAG_RETRY_DELAY_SECONDS=2"}, []string{"--mark-success-pattern", "^publish$"},
			func(line string) {
				if strings.Contains(line, "new_state=up_for_retry") {
					once.Do(func() {
						restored = os.WriteFile(ptr, good, 0o644) == nil
					})
				}
			})
		if !restored {
			t.Fatalf("the sensor was never marked up for retry: %v\n%s", err, tail(out))
		}
		if err != nil {
			t.Fatalf("airflow dags test: %v\n%s", err, tail(out))
		}
		current, earlier := a.tries(t)
		if got := find(current, "published"); len(got) != 1 || got[0].State != "success" || got[0].Try < 2 {
			t.Errorf("the sensor in task_instance: %+v, want success on a later try", got)
		}
		if got := find(earlier, "published"); len(got) < 1 || got[0].State != "failed" {
			t.Errorf("the sensor in task_instance_history: %+v, want a failed try (status exit 1)", got)
		}
	})

	t.Run("SensorWaitsForTheDate", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "warehouse")
		if out, err := publishFixture(engagement, fx, wh, "seed-001", "2026-03-02"); err != nil {
			t.Fatalf("seed publish: %v\n%s", err, tail(out))
		}
		a := newAirflow(t, bin, dir, engagement, wh, template.home)
		// publish is marked successful without running, so the sensor finds
		// 2026-03-03 unpublished (status exits 5) and is rescheduled; the
		// test publishes the date then, and the next poke sees it.
		var once sync.Once
		started := false
		lateDone := make(chan struct{})
		var lateOut []byte
		var lateErr error
		err, out := a.dagsTest(t, []string{"ENGAGEMENT_DAG_POKE_SECONDS=2"}, []string{"--mark-success-pattern", "^publish$"},
			func(line string) {
				if strings.Contains(line, "new_state=up_for_reschedule") {
					once.Do(func() {
						started = true
						go func() {
							defer close(lateDone)
							lateOut, lateErr = publishFixture(engagement, fx, wh, "late-001", "2026-03-03")
						}()
					})
				}
			})
		if !started {
			t.Fatalf("the sensor was never rescheduled: %v\n%s", err, tail(out))
		}
		<-lateDone
		if lateErr != nil {
			t.Fatalf("publish of 2026-03-03 during the run: %v\n%s", lateErr, tail(lateOut))
		}
		if err != nil {
			t.Fatalf("airflow dags test: %v\n%s", err, tail(out))
		}
		current, _ := a.tries(t)
		if got := find(current, "published"); len(got) != 1 || got[0].State != "success" || got[0].Reschedules < 1 {
			t.Errorf("the sensor published: %+v, want success after at least one reschedule", got)
		}
		if got, err := publishtest.Snapshot(t, wh).Date("2026-03-03"); err != nil || got.JobID != "late-001" {
			t.Errorf("2026-03-03: %+v, %v; want job late-001 (the DAG's publish must not have run)", got, err)
		}
	})
}

// publishFixture publishes the committed fixture's dates into wh with the
// binary, as an earlier run would have.
func publishFixture(engagement string, fx publishtest.Fixture, wh, jobID string, dates ...string) ([]byte, error) {
	return exec.Command(engagement, fx.Args(wh, jobID, dates...)...).CombinedOutput()
}

// exitCode is a finished command's exit code (0 for a nil error).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// ofTry reports whether a job id is of try n of the run whose job ids
// begin with prefix: prefix, n, "-" and the task instance's id.
func ofTry(jobID, prefix, n string) bool {
	rest, ok := strings.CutPrefix(jobID, prefix+n+"-")
	return ok && rest != ""
}

// tryPaths are the entries of dir (staging prefixes, with suffix "";
// rejection records, with ".json") of try n of the run at logicalDate.
func tryPaths(t *testing.T, dir, n, suffix string) []string {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(dir, "job_id="+jobIDPrefix+n+"-*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return got
}
