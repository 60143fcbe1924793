package spark_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/testenv"
)

const (
	mon = "2026-03-02"
	tue = "2026-03-03"
)

// TestSettingsApplied checks that every spark.* key of the fixture config
// reaches the session, and that the engine's own settings win.
func TestSettingsApplied(t *testing.T) {
	e := open(t)
	defer e.Close()
	settings := fixtureSettings(t)
	if len(settings) < 5 {
		t.Fatalf("fixture.conf has %d spark.* keys; the test would prove little", len(settings))
	}
	ctx := context.Background()
	for k, want := range settings {
		got, err := e.Setting(ctx, k)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		// Spark normalizes sizes ("64MB" reads back as "64MB" or in bytes)
		// only for some keys; compare case-insensitively and accept bytes.
		if !strings.EqualFold(got, want) && !(want == "64MB" && got == "67108864b") && !(want == "10MB" && got == "10485760b") {
			t.Errorf("%s = %q on the session, want %q", k, got, want)
		}
	}
	for k, want := range map[string]string{"spark.sql.session.timeZone": "UTC", "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"} {
		if got, err := e.Setting(ctx, k); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", k, got, err, want)
		}
	}
}

// TestEngineDefaults: a setting the engine chooses is on the session
// unless the config names the key, and then the config's value is.
func TestEngineDefaults(t *testing.T) {
	ctx := context.Background()
	const key = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"unset", nil, "64"},
		{"given", map[string]string{key: "16"}, "16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := spark.Open(ctx, sparktest.Remote(t), tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if got, err := e.Setting(ctx, key); err != nil || got != tc.want {
				t.Errorf("%s = %q (%v), want %q", key, got, err, tc.want)
			}
		})
	}
}

// TestForcedSettingsWin: a config that sets what the engine owns (a zone,
// a zoneless timestamp type, skipping unreadable or missing files, a record
// limit per file) does not change it: each would change what is published.
func TestForcedSettingsWin(t *testing.T) {
	ctx := context.Background()
	e, err := spark.Open(ctx, sparktest.Remote(t), map[string]string{
		"spark.sql.session.timeZone":            "America/New_York",
		"spark.sql.parquet.outputTimestampType": "INT96",
		"spark.sql.timestampType":               "TIMESTAMP_NTZ",
		"spark.sql.files.ignoreCorruptFiles":    "true",
		"spark.sql.files.ignoreMissingFiles":    "true",
		"spark.sql.files.maxRecordsPerFile":     "10",
		"spark.sql.parquet.binaryAsString":      "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for k, want := range map[string]string{
		"spark.sql.session.timeZone": "UTC", "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
		"spark.sql.timestampType": "TIMESTAMP_LTZ", "spark.sql.files.ignoreCorruptFiles": "false",
		"spark.sql.files.ignoreMissingFiles": "false", "spark.sql.files.maxRecordsPerFile": "0",
		"parquet.page.verify-checksum.enabled": "true", "spark.sql.parquet.binaryAsString": "false",
	} {
		if got, err := e.Setting(ctx, k); err != nil || !strings.EqualFold(got, want) {
			t.Errorf("%s = %q (%v), want %q", k, got, err, want)
		}
	}
}

// TestUnknownSettings: a spark.sql.* key the server does not know (a
// misspelling) is reported; the fixture's keys, a static one the server
// already has (spark.speculation false) and a catalog's are not.
func TestUnknownSettings(t *testing.T) {
	settings := fixtureSettings(t)
	settings["spark.sql.shuffle.partitons"] = "8"
	settings["spark.sql.catalog.lake.type"] = "hadoop"
	e, err := spark.Open(context.Background(), sparktest.Remote(t), settings)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.UnknownSettings(); !slices.Equal(got, []string{"spark.sql.shuffle.partitons"}) {
		t.Errorf("unknown settings %q, want only the misspelt spark.sql.shuffle.partitons", got)
	}
}

func TestSettingErrors(t *testing.T) {
	ctx := context.Background()
	r := sparktest.Remote(t)
	tests := []struct {
		name     string
		settings map[string]string
		want     []string
		exit     int // a value the server refuses is the config's fault
	}{
		// The shared server runs with two executor cores.
		{"core setting with another value", map[string]string{"spark.executor.cores": "3"},
			[]string{"spark.executor.cores = 3", "server has 2", "--conf spark.executor.cores=3"}, exitcode.Error},
		{"bad value", map[string]string{"spark.sql.shuffle.partitions": "many"},
			[]string{"spark.sql.shuffle.partitions", "many", "["}, exitcode.Usage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := spark.Open(ctx, r, tc.settings)
			openRefused(t, e, err, tc.want, tc.exit)
		})
	}
}

// TestSpeculationRefused: speculation is the engine's to refuse, not the
// config's to set. A config asking for it is refused before the server is
// asked (exit 2); a server running with it is refused (exit 1) whether or
// not the config names the key (one without the line ran unchecked), and
// the advice is always to restart it with false (a config with true was
// told to start the server with true). The server's answer comes through
// a proxy: the shared server runs with speculation off.
func TestSpeculationRefused(t *testing.T) {
	ctx := context.Background()
	r := sparktest.Remote(t)
	on := spark.ConfigProxy(t, r, "spark.speculation", "true")
	for _, tc := range []struct {
		name     string
		remote   string
		settings map[string]string
		want     []string // empty: Open succeeds
		exit     int
	}{
		{"config without the key, server off", r, map[string]string{}, nil, exitcode.OK},
		{"config false, server off", r, map[string]string{"spark.speculation": "false"}, nil, exitcode.OK},
		{"config FALSE, server off", r, map[string]string{"spark.speculation": " FALSE"}, nil, exitcode.OK},
		{"config true", r, map[string]string{"spark.speculation": "true"},
			[]string{`spark.speculation = "true": not settable`, "speculation off"}, exitcode.Usage},
		{"config without the key, server on", on, map[string]string{},
			[]string{"spark.speculation = true", "restart the Spark Connect server with --conf spark.speculation=false"}, exitcode.Error},
		{"config false, server on", on, map[string]string{"spark.speculation": "false"},
			[]string{"spark.speculation = true", "--conf spark.speculation=false"}, exitcode.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := spark.Open(ctx, tc.remote, tc.settings)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				e.Close()
				return
			}
			openRefused(t, e, err, tc.want, tc.exit)
			if strings.Contains(err.Error(), "spark.speculation=true") {
				t.Errorf("error %q advises speculation on", err)
			}
		})
	}
}

// openRefused checks that Open failed on one line holding every want, with
// exit code exit.
func openRefused(t *testing.T, e *spark.Engine, err error, want []string, exit int) {
	t.Helper()
	if err == nil {
		e.Close()
		t.Fatal("Open succeeded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if got := exitcode.Code(err); got != exit {
		t.Errorf("exit %d, want %d", got, exit)
	}
}

// TestExplainMarksBothJoins is the capstone's plan assertion on Spark: the
// manifest join is a BroadcastHashJoin on lesson_id, the enrollment join a
// shuffle join (never a broadcast, even on the tiny fixture where the
// enrollments are far under the auto-broadcast threshold), hot courses are
// salted on both sides, and the salt is gone before the fact grain's
// aggregate.
func TestExplainMarksBothJoins(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	j := fx.Job(t, t.TempDir(), "explain", mon, tue)
	e := open(t)
	defer e.Close()
	plan, err := e.Plan(context.Background(), publishtest.Listed(t, j))
	if err != nil {
		t.Fatal(err)
	}
	var manifest, enroll []spark.PlanJoin
	for _, jn := range spark.Joins(plan) {
		switch jn.Role {
		case spark.ManifestJoin:
			manifest = append(manifest, jn)
		case spark.EnrollmentJoin:
			enroll = append(enroll, jn)
		}
	}
	if len(manifest) != 1 || manifest[0].Operator != "BroadcastHashJoin" {
		t.Errorf("manifest joins %+v, want one BroadcastHashJoin on lesson_id\n%s", manifest, plan)
	}
	if len(enroll) != 1 || (enroll[0].Operator != "SortMergeJoin" && enroll[0].Operator != "ShuffledHashJoin") {
		t.Errorf("enrollment joins %+v, want one SortMergeJoin or ShuffledHashJoin\n%s", enroll, plan)
	} else {
		for _, k := range []string{"learner_key", "course_id", "_salt"} {
			if !strings.Contains(enroll[0].LeftKeys, k) {
				t.Errorf("enrollment join keys %q lack %s", enroll[0].LeftKeys, k)
			}
		}
	}
	if !strings.Contains(plan, "AdaptiveSparkPlan") {
		t.Errorf("plan is not adaptive (spark.sql.adaptive.enabled is on in fixture.conf):\n%s", plan)
	}
	if strings.Count(plan, "BroadcastExchange (") != 1 {
		t.Errorf("more than one broadcast in the plan:\n%s", plan)
	}
	if !regexp.MustCompile(`pmod\(hash\(lesson_id#\d+, event_date#\d+`).MatchString(plan) || !strings.Contains(plan, "Generate") {
		t.Errorf("plan lacks the salt (pmod(hash(lesson_id, event_date)) on events, Generate on enrollments):\n%s", plan)
	}
	// Events and enrollments are shuffled once each, by (learner_key,
	// _salt), and nothing after: a third shuffle would mean the join
	// re-partitioned what the first aggregate had already placed, or the
	// grain was aggregated again (mergedFactQuery runs only for a
	// conflict, TestConflictRowsMergedOnlyWhenSuspect).
	if n := strings.Count(plan, "- Exchange ("); n != 2 {
		t.Errorf("%d shuffles, want 2 (events, enrollments):\n%s", n, plan)
	}
	// Every aggregate is the one to a fact row's events of one course: it
	// groups by the salt beside the course, lesson and date it is made of.
	keys := regexp.MustCompile(`(?m)^Keys \[\d+\]: \[(.*)\]$`)
	aggregates := 0
	for _, section := range strings.Split(plan, "\n\n") {
		if !regexp.MustCompile(`^\(\d+\) \w*Aggregate`).MatchString(section) {
			continue
		}
		aggregates++
		m := keys.FindStringSubmatch(section)
		if m == nil {
			t.Errorf("an aggregate without keys:\n%s", section)
			continue
		}
		for _, k := range []string{"learner_key", "lesson_id", "event_date", "course_id", "_salt"} {
			if !strings.Contains(m[1], k) {
				t.Errorf("an aggregate's keys lack %s:\n%s", k, section)
			}
		}
	}
	if aggregates == 0 {
		t.Errorf("no aggregate in the plan:\n%s", plan)
	}

	// The command prints the same plan with both joins marked.
	h := harness(t)
	code, out, stderr := h.Run(t, nil, "explain", "--config", filepath.Join(publishtest.Root(), "config", "fixture.conf"),
		"--raw", filepath.Join(fx.Dir, "raw"), "--lessons", filepath.Join(fx.Dir, "lessons"),
		"--enrollments", filepath.Join(fx.Dir, "enrollments"), "--dates", mon+","+tue, "--engine", "spark")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, mark := range []string{"<== MANIFEST JOIN (BroadcastHashJoin, broadcast)", "<== ENROLLMENT JOIN (" + enrollOperator(enroll) + ", shuffle)", "== Physical Plan =="} {
		// Each join is marked twice: in the operator tree and at its details.
		if want := 2 - strings.Count(mark, "Physical"); strings.Count(out, mark) < want {
			t.Errorf("explain output lacks %q:\n%s", mark, out)
		}
	}
}

func enrollOperator(js []spark.PlanJoin) string {
	if len(js) == 0 {
		return "?"
	}
	return js[0].Operator
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestSparkErrorsAreOneLine runs real failures through the command: each
// reaches the user as one line with Spark's error class (or UNAVAILABLE for
// a server that is down), exits 1, and leaves the pointer and the inputs
// byte-identical.
func TestSparkErrorsAreOneLine(t *testing.T) {
	h := harness(t)
	fx := publishtest.LoadFixture(t, "")
	wh := t.TempDir()
	h.MustPublish(t, fx.Job(t, wh, "before", mon, tue))
	pointerBefore := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))

	notParquet := filepath.Join(t.TempDir(), "lessons")
	if err := os.MkdirAll(notParquet, 0o755); err != nil {
		t.Fatal(err)
	}
	// The Parquet magic at both ends passes the engine's own check, so
	// Spark is the one to find that the footer is not Parquet.
	if err := os.WriteFile(filepath.Join(notParquet, "part-0.parquet"), []byte("PAR1lesson_id,title\nl1,x\nPAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	down := "sc://" + closedPort(t)
	inputsBefore := publishtest.TreeHash(t, fx.Dir)

	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"server down", []string{"--spark-remote", down}, []string{down, "[UNAVAILABLE]"}},
		{"lessons file is not Parquet inside its magic", []string{"--lessons", notParquet},
			[]string{filepath.Join(notParquet, "part-0.parquet"), "not a readable Parquet file", "[SparkException]"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := fx.Args(wh, "failing-"+string(rune('a'+i)), mon, tue)
			// The harness adds --spark-remote after these flags, and a
			// flag is given once: the down server takes the harness's
			// place; any other flag replaces the fixture's.
			hh := h
			if tc.extra[0] == "--spark-remote" {
				hh.Args = tc.extra
			} else {
				args = publishtest.WithFlag(args, tc.extra[0], tc.extra[1])
			}
			// Text logs: the error line as a person reads it.
			code, _, stderr := hh.Run(t, []string{"ENGAGEMENT_LOG_FORMAT=text"}, args...)
			if code != exitcode.Error {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Error, stderr)
			}
			line := lastLine(stderr)
			if !strings.HasPrefix(line, "engagement: ") {
				t.Fatalf("last stderr line %q is not the command's error line", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("error line %q lacks %q", line, w)
				}
			}
			if strings.Contains(line, "SELECT") || strings.Contains(line, "goroutine") {
				t.Errorf("error line carries SQL or a stack: %q", line)
			}
			if after := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json")); string(after) != string(pointerBefore) {
				t.Errorf("pointer.json changed")
			}
		})
	}
	if publishtest.TreeHash(t, fx.Dir) != inputsBefore {
		t.Errorf("inputs changed")
	}
}

// vanishing removes the lesson manifest after the inputs were inspected and
// before staging reads them, as a concurrent cleanup would.
type vanishing struct {
	engine.Engine
	lessons string
}

func (v vanishing) Stage(ctx context.Context, spec engine.Spec, root storage.Bucket, dir string) (engine.Staged, error) {
	if err := os.Rename(v.lessons, v.lessons+".gone"); err != nil {
		return engine.Staged{}, err
	}
	return v.Engine.Stage(ctx, spec, root, dir)
}

// TestMissingPathHasItsClass: a manifest that vanishes between inspection
// and staging fails the publish with Spark's PATH_NOT_FOUND in one line,
// exit 1, and the pointer untouched.
func TestMissingPathHasItsClass(t *testing.T) {
	h := harness(t)
	fx := publishtest.LoadFixture(t, "")
	wh := t.TempDir()
	h.MustPublish(t, fx.Job(t, wh, "before", mon, tue))
	before := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json"))
	lessons := filepath.Join(fx.Dir, "lessons")
	_, err := h.PublishWith(t, fx.Job(t, wh, "vanished", mon, tue), func(e engine.Engine) engine.Engine {
		return vanishing{Engine: e, lessons: lessons}
	})
	var se *spark.Error
	if !errors.As(err, &se) {
		t.Fatalf("publish error %v (%T), want a *spark.Error", err, err)
	}
	if se.Class != "PATH_NOT_FOUND" {
		t.Errorf("class %q, want PATH_NOT_FOUND (%v)", se.Class, err)
	}
	if exitcode.Code(err) != exitcode.Error {
		t.Errorf("exit %d, want %d", exitcode.Code(err), exitcode.Error)
	}
	if !strings.Contains(err.Error(), lessons) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q should name the path in one line", err)
	}
	if after := publishtest.FileBytes(t, filepath.Join(wh, "pointer.json")); string(after) != string(before) {
		t.Errorf("pointer.json changed")
	}
}

// TestAnalysisErrorHasItsClass: a staged file that is not the table it is
// listed as (course_day bytes listed as fact) fails the read-back with
// Spark's analysis error class, in one line.
func TestAnalysisErrorHasItsClass(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	wh := t.TempDir()
	h := harness(t)
	res := h.MustPublish(t, fx.Job(t, wh, "published", mon, tue))
	e := open(t)
	defer e.Close()
	st := engine.Staged{
		FactFiles: map[dates.Date][]pointer.File{dates.MustParse(mon): res.Entries[dates.MustParse(mon)].CourseDayFiles},
	}
	bucket, _ := publishtest.Warehouse(wh)
	_, err := e.ReadBack(context.Background(), bucket, publishtest.Listed(t, fx.Job(t, wh, "x", mon)), st)
	var se *spark.Error
	if !errors.As(err, &se) || !strings.HasPrefix(se.Class, "UNRESOLVED_COLUMN") {
		t.Fatalf("ReadBack error %v, want Spark's UNRESOLVED_COLUMN class", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "learner_key") {
		t.Errorf("error %q should name the column in one line", err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestRelativePaths: paths given relative to the job's working directory
// reach the Spark server absolute (the server has its own working
// directory), as the README's fixture command gives them.
func TestRelativePaths(t *testing.T) {
	h := harness(t)
	fx := publishtest.LoadFixture(t, "")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string {
		r, err := filepath.Rel(wd, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	wh := t.TempDir()
	args := fx.Args(rel(wh), "relative", mon, tue)
	for i, a := range args {
		if filepath.IsAbs(a) && strings.HasPrefix(a, fx.Dir) {
			args[i] = rel(a)
		}
	}
	code, _, stderr := h.Run(t, nil, args...)
	if code != 0 {
		t.Fatalf("publish with relative paths: exit %d: %s", code, stderr)
	}
	for ds, n := range publishtest.FactSum(t, wh) {
		if want := fx.Expected.ByDate[ds].Events; n != want {
			t.Errorf("%s: %d events, want %d", ds, n, want)
		}
	}
}

// TestSilentServerFails: a server that accepts the connection and never
// answers fails Open within RequestTimeout (shortened here) with a line
// saying so, exit 1. Every small request (the first question, each
// setting, each schema) runs under that bound: on an established
// connection a schema request once waited 16 minutes. (Before the bound,
// gRPC's 20 s handshake limit failed this silent listener as UNAVAILABLE;
// it does not bound a request on a connection already made.) The minute is
// a guard against a hang, not a timing.
func TestSilentServerFails(t *testing.T) {
	defer func(old time.Duration) { spark.RequestTimeout = old }(spark.RequestTimeout)
	spark.RequestTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	remote := "sc://" + testenv.Silent(t)
	e, err := spark.Open(ctx, remote, nil)
	if err == nil {
		e.Close()
		t.Fatal("Open succeeded against a server that never answers")
	}
	if ctx.Err() != nil {
		t.Fatalf("Open held the command past the guard: %v", err)
	}
	if want := "spark " + remote + ": connect: the Spark Connect server did not answer in 500ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
	if exitcode.Code(err) != exitcode.Error {
		t.Errorf("exit code %d, want %d (a retry may pass)", exitcode.Code(err), exitcode.Error)
	}
}

// TestHeldSchemaRequestFails: a server that answers the session's settings
// but never a schema request (a proxy in front of the test cluster holds
// every AnalyzePlan), with its executors live, so the executor watch has
// nothing to see: inspect fails within RequestTimeout (shortened here),
// saying the server did not answer and naming the file, instead of
// waiting; a schema request once waited 16 minutes so. The minute is a
// guard against a hang, not a timing.
func TestHeldSchemaRequestFails(t *testing.T) {
	remote := spark.HoldingProxy(t, sparktest.Remote(t), func(method string) bool { return strings.HasSuffix(method, "/AnalyzePlan") })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	e, err := spark.Open(ctx, remote, fixtureSettings(t))
	if err != nil {
		t.Fatalf("Open through the proxy: %v", err)
	}
	defer e.Close()
	defer func(old time.Duration) { spark.RequestTimeout = old }(spark.RequestTimeout)
	spark.RequestTimeout = 2 * time.Second
	fx := publishtest.LoadFixture(t, "")
	spec := publishtest.WithInputs(t, job.Spec(fx.Job(t, t.TempDir(), "held-1", mon, tue), dates.FromTime(publishtest.Now)))
	_, err = e.Inspect(ctx, spec)
	if ctx.Err() != nil {
		t.Fatalf("inspect held the command past the guard: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer in 2s") || !strings.Contains(err.Error(), "read the schema of raw file") {
		t.Errorf("inspect: %v, want the schema request named as not answered in 2s", err)
	}
	if exitcode.Code(err) != exitcode.Error {
		t.Errorf("exit code %d, want %d", exitcode.Code(err), exitcode.Error)
	}
}

// TestReadBackManySplitParts: a date split into 1,200 parts, one
// split_part=i directory each, as a tiny target file size makes them, is
// read back whole through their date's one glob (a brace list holding
// slashes). One relation a part took 190 s to read these back, and at
// about 1,450 files overflowed Spark's parser (FAILED_TO_PARSE_TOO_COMPLEX,
// exit 1 on every retry).
func TestReadBackManySplitParts(t *testing.T) {
	const parts = 1200
	wh := t.TempDir()
	rel := "staging/job_id=split/fact_lesson_engagement/split/event_date=" + mon
	if err := os.MkdirAll(filepath.Join(wh, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := publishtest.DB(t).Exec(fmt.Sprintf(`COPY (SELECT 'l' || i AS learner_key, 'lesson' AS lesson_id, 'course' AS course_id,
		(i %% 3 + 1)::BIGINT AS event_count, i AS split_part FROM range(%d) t(i))
		TO '%s' (FORMAT parquet, PARTITION_BY (split_part))`, parts, filepath.Join(wh, rel))); err != nil {
		t.Fatal(err)
	}
	found, err := filepath.Glob(filepath.Join(wh, rel, "split_part=*", "*.parquet"))
	if err != nil || len(found) != parts {
		t.Fatalf("%d part files (%v), want %d", len(found), err, parts)
	}
	var files []pointer.File
	for _, f := range found {
		r, _ := filepath.Rel(wh, f)
		files = append(files, pointer.File{Path: filepath.ToSlash(r), Rows: 1})
	}
	e := open(t)
	defer e.Close()
	bucket, _ := publishtest.Warehouse(wh)
	d := dates.MustParse(mon)
	figs, err := e.ReadBack(context.Background(), bucket, engine.Spec{Dates: []dates.Date{d}}, engine.Staged{FactFiles: map[dates.Date][]pointer.File{d: files}})
	if err != nil {
		t.Fatalf("ReadBack of %d split parts: %v", parts, err)
	}
	// 1,200 rows whose event_count runs 1, 2, 3, 1, ...: 400 of each.
	if f := figs[d]; f.FactRows != parts || f.FactEventSum != 400*(1+2+3) {
		t.Errorf("figures %+v, want %d rows summing to %d", f, parts, 400*6)
	}
}

// TestSettingErrorsMaskSecrets: a secret-named setting the server refuses
// to change on a session (a static one) is named without its value, nor
// the server's: the error reaches the log, the result document and the
// lineage events.
func TestSettingErrorsMaskSecrets(t *testing.T) {
	_, err := spark.Open(context.Background(), sparktest.Remote(t), map[string]string{"spark.authenticate.secret": "MARKER1"})
	if err == nil || strings.Contains(err.Error(), "MARKER1") || !strings.Contains(err.Error(), "spark.authenticate.secret") {
		t.Fatalf("Open: %v, want an error naming the key, not its value", err)
	}
}
