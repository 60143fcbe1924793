package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/metrics"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// pushgatewayURL is the Pushgateway scripts/test.sh starts
// (scripts/pushgateway.sh); without it the metrics tests fail, never skip.
func pushgatewayURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("ENGAGEMENT_PUSHGATEWAY_URL")
	if u == "" {
		t.Fatal("ENGAGEMENT_PUSHGATEWAY_URL is unset: start a Pushgateway with eval \"$(bash scripts/pushgateway.sh start)\"")
	}
	return u
}

func parseText(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	// The library's own parser (expfmt), through metrics.Parse.
	fams, err := metrics.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse metrics: %v\n%s", err, b)
	}
	return fams
}

func readTextfile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseText(t, b)
}

// pushed is what the Pushgateway serves for job="engagement".
func pushed(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(strings.TrimRight(url, "/") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return parseText(t, buf.Bytes())
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := metrics.Value(fams, name, labels)
	if !ok {
		t.Fatalf("no %s%v", name, labels)
	}
	return v
}

var engagementJob = map[string]string{"job": metrics.Job}

// TestMetricsPublished publishes the fixture with both sinks: the textfile
// parses with Prometheus's own parser and holds the generator's event counts
// per date, a gate check per check of the run's report, each phase, the
// timestamps of the run and exit code 0; the Pushgateway holds the same run.
func TestMetricsPublished(t *testing.T) {
	pgw := pushgatewayURL(t)
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	file := filepath.Join(t.TempDir(), "engagement.prom")
	ds := []string{"2026-03-02", "2026-03-03"}
	var stdout, stderr bytes.Buffer
	before := time.Now()
	code := cli.Main(context.Background(), append(fx.Args(wh, "metrics-ok", ds...), "--metrics-file", file, "--pushgateway", pgw), &stdout, &stderr)
	after := time.Now()
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "the run's outcome stands") {
		t.Errorf("a metrics warning on a healthy run:\n%s", stderr.String())
	}
	fams := readTextfile(t, file)
	for _, d := range ds {
		want := fx.Expected.ByDate[dates.MustParse(d)]
		if got := mustValue(t, fams, metrics.EventCount, map[string]string{"date": d}); got != float64(want.Events) {
			t.Errorf("%s: event count %v, want %d", d, got, want.Events)
		}
		if got := mustValue(t, fams, metrics.UnknownRate, map[string]string{"date": d}); got != gate.Rate(want.Unknown, want.Events) {
			t.Errorf("%s: unknown rate %v, want %v", d, got, gate.Rate(want.Unknown, want.Events))
		}
		if got := mustValue(t, fams, metrics.FactFiles, map[string]string{"date": d}); got < 1 {
			t.Errorf("%s: %v fact files", d, got)
		}
		if got := mustValue(t, fams, metrics.FactBytes, map[string]string{"date": d}); got <= 0 {
			t.Errorf("%s: %v fact bytes", d, got)
		}
		if got := mustValue(t, fams, metrics.GateCheck, map[string]string{"check": gate.CheckUnknownLessonCap, "date": d}); got != 1 {
			t.Errorf("%s: cap check %v, want 1", d, got)
		}
	}
	if _, ok := metrics.Value(fams, metrics.EventCount, map[string]string{"date": "2026-03-01"}); ok {
		t.Error("an event count for 2026-03-01, which was not published")
	}
	// One sample per check of the report the gate wrote, each passed.
	b, err := os.ReadFile(filepath.Join(wh, filepath.FromSlash(warehouse.GatePath("metrics-ok"))))
	if err != nil {
		t.Fatal(err)
	}
	var rep gate.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if n := len(fams[metrics.GateCheck].GetMetric()); n != len(rep.Checks) || n == 0 {
		t.Errorf("%d gate check samples, want %d", n, len(rep.Checks))
	}
	for _, c := range rep.Checks {
		if got := mustValue(t, fams, metrics.GateCheck, map[string]string{"check": c.Name, "date": c.Date}); got != 1 {
			t.Errorf("check %s %s: %v, want 1", c.Name, c.Date, got)
		}
	}
	if got := mustValue(t, fams, metrics.LastExitCode, nil); got != 0 {
		t.Errorf("exit code metric %v, want 0", got)
	}
	for _, name := range []string{metrics.LastAttempt, metrics.LastSuccess} {
		got := mustValue(t, fams, name, nil)
		if got < float64(before.Unix()) || got > float64(after.Unix()+1) {
			t.Errorf("%s %v outside the run [%d, %d]", name, got, before.Unix(), after.Unix())
		}
	}
	if got := mustValue(t, fams, metrics.UnknownCap, nil); got != fx.Job(t, wh, "x", ds...).UnknownCap {
		t.Errorf("cap %v", got)
	}
	for _, ph := range []string{"prepare", "inspect", "stage", "gate", "pointer"} {
		if got := mustValue(t, fams, metrics.PhaseDuration, map[string]string{"phase": ph}); got <= 0 || got > after.Sub(before).Seconds() {
			t.Errorf("phase %s took %vs, run %v", ph, got, after.Sub(before))
		}
	}
	if got := mustValue(t, fams, metrics.PeakRSS, nil); got < 1<<20 {
		t.Errorf("peak RSS %v bytes", got)
	}
	if _, err := os.Stat(filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
		t.Errorf("the metrics directory holds %d entries, want only the textfile (no temp file left)", len(ents))
	}

	// The Pushgateway got the same run: its attempt time is this textfile's.
	got := pushed(t, pgw)
	if a, b := mustValue(t, got, metrics.LastAttempt, engagementJob), mustValue(t, fams, metrics.LastAttempt, nil); a != b {
		t.Errorf("pushed attempt %v, textfile %v: not this run's push", a, b)
	}
	if v := mustValue(t, got, metrics.LastExitCode, engagementJob); v != 0 {
		t.Errorf("pushed exit code %v, want 0", v)
	}
	for _, d := range ds {
		want := fx.Expected.ByDate[dates.MustParse(d)].Events
		if v := mustValue(t, got, metrics.EventCount, map[string]string{"job": metrics.Job, "date": d}); v != float64(want) {
			t.Errorf("pushed %s event count %v, want %d", d, v, want)
		}
	}
	success := map[string]string{"job": metrics.Job}
	for k, v := range metrics.SuccessGroup {
		success[k] = v
	}
	if a, b := mustValue(t, got, metrics.LastSuccess, success), mustValue(t, fams, metrics.LastSuccess, nil); a != b {
		t.Errorf("pushed last success %v, textfile %v", a, b)
	}
}

// TestMetricsFailedRuns: a rejected run (the over-cap fixture) and an
// errored run (a raw path that does not exist) each push and write their
// own exit code; the rejected one its failed cap checks. A failed run keeps
// the textfile's last success from the run before.
func TestMetricsFailedRuns(t *testing.T) {
	pgw := pushgatewayURL(t)
	ds := []string{"2026-03-02", "2026-03-03"}
	file := filepath.Join(t.TempDir(), "engagement.prom")
	// An earlier success, as the textfile would hold it.
	const earlier = 1767225600 // 2026-01-01T00:00:00Z
	if err := os.WriteFile(file, []byte(fmt.Sprintf("# TYPE %s gauge\n%s %d\n", metrics.LastSuccess, metrics.LastSuccess, earlier)), 0o644); err != nil {
		t.Fatal(err)
	}

	over := publishtest.LoadFixture(t, "over-cap")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append(over.Args(filepath.Join(t.TempDir(), "wh"), "metrics-rejected", ds...),
		"--metrics-file", file, "--pushgateway", pgw), &stdout, &stderr)
	if code != exitcode.GateRejected {
		t.Fatalf("over-cap: exit %d, want %d\n%s", code, exitcode.GateRejected, stderr.String())
	}
	for name, fams := range map[string]map[string]*dto.MetricFamily{"textfile": readTextfile(t, file), "pushgateway": pushed(t, pgw)} {
		if v := mustValue(t, fams, metrics.LastExitCode, nil); v != exitcode.GateRejected {
			t.Errorf("rejected, %s: exit code %v, want %d", name, v, exitcode.GateRejected)
		}
		for _, d := range ds {
			if v := mustValue(t, fams, metrics.GateCheck, map[string]string{"check": gate.CheckUnknownLessonCap, "date": d}); v != 0 {
				t.Errorf("rejected, %s: %s cap check %v, want 0", name, d, v)
			}
		}
	}
	if v := mustValue(t, readTextfile(t, file), metrics.LastSuccess, nil); v != earlier {
		t.Errorf("rejected: last success %v, want the earlier %d", v, earlier)
	}

	fx := publishtest.LoadFixture(t, "")
	args := fx.Args(filepath.Join(t.TempDir(), "wh"), "metrics-errored", ds...)
	for i := range args {
		if args[i] == "--raw" {
			args[i+1] = filepath.Join(t.TempDir(), "no-such-raw")
		}
	}
	stderr.Reset()
	before := time.Now()
	code = cli.Main(context.Background(), append(args, "--metrics-file", file, "--pushgateway", pgw), &stdout, &stderr)
	if code != exitcode.Error {
		t.Fatalf("missing raw: exit %d, want %d\n%s", code, exitcode.Error, stderr.String())
	}
	tf := readTextfile(t, file)
	for name, fams := range map[string]map[string]*dto.MetricFamily{"textfile": tf, "pushgateway": pushed(t, pgw)} {
		if v := mustValue(t, fams, metrics.LastExitCode, nil); v != exitcode.Error {
			t.Errorf("errored, %s: exit code %v, want %d", name, v, exitcode.Error)
		}
		if v := mustValue(t, fams, metrics.LastAttempt, nil); v < float64(before.Unix()) {
			t.Errorf("errored, %s: attempt %v before the run %d", name, v, before.Unix())
		}
	}
	if v := mustValue(t, tf, metrics.LastSuccess, nil); v != earlier {
		t.Errorf("errored: last success %v, want the earlier %d", v, earlier)
	}
	// An engine that did not open: the config resolved, so the cap is there.
	stderr.Reset()
	code = cli.Main(context.Background(), append(fx.Args(filepath.Join(t.TempDir(), "wh"), "metrics-no-engine", ds...),
		"--engine", "spark", "--spark-remote", "sc://127.0.0.1:1", "--metrics-file", file), &stdout, &stderr)
	if code != exitcode.Error {
		t.Fatalf("no Spark server: exit %d, want %d\n%s", code, exitcode.Error, stderr.String())
	}
	if v, want := mustValue(t, readTextfile(t, file), metrics.UnknownCap, nil), fx.Job(t, t.TempDir(), "cap", ds...).UnknownCap; v != want {
		t.Errorf("no Spark server: cap %v, want the config's %v", v, want)
	}
	if _, ok := metrics.Value(tf, metrics.EventCount, nil); ok {
		t.Error("errored: the textfile has event counts, as if it had published")
	}
	// The push replaced the group: the rejected run's checks are gone.
	if _, ok := metrics.Value(pushed(t, pgw), metrics.GateCheck, engagementJob); ok {
		t.Error("errored: the Pushgateway still serves the rejected run's gate checks beside this run's exit code")
	}

	// Refused before the places the textfile must stay out of are known: a
	// config that does not resolve, a command line the parser refuses. The
	// textfile an earlier run wrote is still replaced and the push sent
	// (both kept the last run's exit code: no failure alert fired).
	good := fx.Args(filepath.Join(t.TempDir(), "wh"), "metrics-refused", ds...)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"config missing", publishtest.WithFlag(good, "--config", filepath.Join(t.TempDir(), "nope.conf"))},
		{"flag given twice", append(slices.Clone(good), "--dates", ds[0])},
	} {
		for _, env := range [][]string{nil, {"ENGAGEMENT_METRICS_FILE=" + file, "ENGAGEMENT_PUSHGATEWAY=" + pgw}} {
			args := tc.args
			if env == nil {
				args = append(slices.Clone(args), "--metrics-file", file, "--pushgateway", pgw)
			}
			// Moved off 2 first, so that each case's own 2 is seen.
			stderr.Reset()
			if code := cli.Main(context.Background(), append(slices.Clone(over.Args(filepath.Join(t.TempDir(), "wh"), "metrics-reset", ds...)),
				"--metrics-file", file, "--pushgateway", pgw), &stdout, &stderr); code != exitcode.GateRejected {
				t.Fatalf("reset: exit %d\n%s", code, stderr.String())
			}
			stderr.Reset()
			code := cli.MainEnv(context.Background(), cli.Env{Stdout: &stdout, Stderr: &stderr, Lookup: lookupIn(env)}, args)
			if code != exitcode.Usage {
				t.Fatalf("%s (env %v): exit %d, want %d\n%s", tc.name, env != nil, code, exitcode.Usage, stderr.String())
			}
			for name, fams := range map[string]map[string]*dto.MetricFamily{"textfile": readTextfile(t, file), "pushgateway": pushed(t, pgw)} {
				if v := mustValue(t, fams, metrics.LastExitCode, nil); v != exitcode.Usage {
					t.Errorf("%s (env %v), %s: exit code %v, want %d", tc.name, env != nil, name, v, exitcode.Usage)
				}
			}
			if v := mustValue(t, readTextfile(t, file), metrics.LastSuccess, nil); v != earlier {
				t.Errorf("%s: last success %v, want the earlier %d", tc.name, v, earlier)
			}
		}
	}

	// A Pushgateway URL the push refuses drops the push, not the textfile.
	stderr.Reset()
	if code := cli.Main(context.Background(), append(over.Args(filepath.Join(t.TempDir(), "wh"), "metrics-reset-2", ds...),
		"--metrics-file", file), &stdout, &stderr); code != exitcode.GateRejected {
		t.Fatalf("reset: exit %d\n%s", code, stderr.String())
	}
	if code := cli.Main(context.Background(), append(slices.Clone(good), "--dates", ds[0], "--metrics-file", file, "--pushgateway", "http://127.0.0.1:1/x?y=1"),
		&stdout, &stderr); code != exitcode.Usage {
		t.Fatalf("bad URL and a flag twice: exit %d\n%s", code, stderr.String())
	}
	if v := mustValue(t, readTextfile(t, file), metrics.LastExitCode, nil); v != exitcode.Usage {
		t.Errorf("bad URL and a flag twice: textfile exit code %v, want %d", v, exitcode.Usage)
	}

	// A file no run wrote is not replaced when the places are not known:
	// it may be pointer.json or an input under another name.
	stranger := filepath.Join(t.TempDir(), "pointer.json")
	if err := os.WriteFile(stranger, []byte(`{"generation":7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := cli.Main(context.Background(), append(publishtest.WithFlag(good, "--config", filepath.Join(t.TempDir(), "nope.conf")),
		"--metrics-file", stranger), &stdout, &stderr); code != exitcode.Usage {
		t.Fatalf("stranger: exit %d\n%s", code, stderr.String())
	}
	if b, err := os.ReadFile(stranger); err != nil || string(b) != `{"generation":7}` {
		t.Errorf("a file no run wrote was replaced: %q %v", b, err)
	}
	// The same refused at parsing: not written either, and said so.
	fresh := filepath.Join(t.TempDir(), "new.prom")
	stderr.Reset()
	if code := cli.Main(context.Background(), append(slices.Clone(good), "--dates", ds[0], "--metrics-file", fresh), &stdout, &stderr); code != exitcode.Usage {
		t.Fatalf("flag twice, a new textfile: exit %d\n%s", code, stderr.String())
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) || !strings.Contains(stderr.String(), "a file sink is not written") {
		t.Errorf("flag twice, a new textfile: stat %v; want it unwritten and a warning saying so:\n%s", err, stderr.String())
	}
}

// lookupIn is an environment lookup over KEY=VALUE pairs alone.
func lookupIn(env []string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for _, kv := range env {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v, true
			}
		}
		return "", false
	}
}

// TestMetricsSinksDown: a Pushgateway on a closed port and a metrics file
// whose directory cannot be created are warnings; the exit code is the
// run's, for a publish and for a rejection.
func TestMetricsSinksDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	// A regular file where the directory should be: unwritable even as root.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(notDir, "engagement.prom")
	ds := []string{"2026-03-02"}
	for _, tc := range []struct {
		variant string
		want    int
	}{{"", exitcode.OK}, {"over-cap", exitcode.GateRejected}} {
		fx := publishtest.LoadFixture(t, tc.variant)
		var stdout, stderr bytes.Buffer
		code := cli.Main(context.Background(), append(fx.Args(filepath.Join(t.TempDir(), "wh"), "metrics-down", ds...),
			"--metrics-file", file, "--pushgateway", closed), &stdout, &stderr)
		if code != tc.want {
			t.Errorf("%q: exit %d, want %d\n%s", tc.variant, code, tc.want, stderr.String())
		}
		for _, want := range []string{"metrics were not pushed; the run's outcome stands", "the metrics file was not written; the run's outcome stands", `"metrics_failures":2`} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.variant, want, stderr.String())
			}
		}
		if tc.want == exitcode.OK && !strings.HasPrefix(stdout.String(), "published job_id=metrics-down") {
			t.Errorf("stdout lacks the summary:\n%s", stdout.String())
		}
	}
}

// TestMetricsPushRedirected: a Pushgateway behind a front that answers
// 302 (an SSO proxy): the PUT was followed as a GET of the page, whose 200
// counted the push as done. It is a failed push, warned of.
func TestMetricsPushRedirected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved") {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	fx := publishtest.LoadFixture(t, "")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), append(fx.Args(filepath.Join(t.TempDir(), "wh"), "push-302", "2026-03-02"),
		"--pushgateway", srv.URL+"/moved"), &stdout, &stderr)
	if code != exitcode.OK || !strings.Contains(stderr.String(), "metrics were not pushed; the run's outcome stands") {
		t.Errorf("exit %d, want 0 with the failed push warned of\n%s", code, stderr.String())
	}
}

// TestTextfileBeforeThePush: the textfile holds the run's exit code when
// the push begins, on a Pushgateway that then does not answer: a second
// signal during the push exits at once, and the file kept the last run's
// exit 0 (a gate rejection read as a success).
func TestTextfileBeforeThePush(t *testing.T) {
	h := publishtest.Harness{}
	fx := h.LoadFixture(t, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "engagement.prom")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pushed := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			pushed <- c // held open, never answered
		}
	}()
	args := append(fx.Args(filepath.Join(dir, "wh"), "before-push-1", "2026-03-02"),
		"--unknown-cap", "0.0001", "--metrics-file", file, "--pushgateway", "http://"+ln.Addr().String())
	cmd := exec.Command(publishtest.Binary(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	select {
	case c := <-pushed:
		defer c.Close()
	case <-time.After(2 * time.Minute):
		t.Fatal("the run never began its push")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no textfile when the push began: %v", err)
	}
	if m := parseText(t, b)[metrics.LastExitCode]; m == nil || m.GetMetric()[0].GetGauge().GetValue() != exitcode.GateRejected {
		t.Errorf("the textfile when the push began:\n%s\nwant %s 3", b, metrics.LastExitCode)
	}
}
