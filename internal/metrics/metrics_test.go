package metrics_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/metrics"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// TestRegistryTextfile writes a hand-made run and reads it back with the
// library's parser: each figure lands under its name and labels, and the
// last success follows the exit code.
func TestRegistryTextfile(t *testing.T) {
	start := time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)
	prev := time.Date(2026, 3, 3, 6, 0, 0, 0, time.UTC)
	d := dates.MustParse("2026-03-02")
	res := job.Result{
		Entries: map[dates.Date]pointer.DateEntry{d: {EventCount: 973, UnknownLessonRate: 0.01,
			FactFiles: []pointer.File{{Bytes: 100}, {Bytes: 23}}}},
		Report: gate.Report{Checks: []gate.Check{{Name: "a", Date: "2026-03-02", Passed: true}, {Name: "b", Passed: false}}},
	}
	for _, tc := range []struct {
		name        string
		code        int
		published   bool
		superseded  []dates.Date
		wantSuccess time.Time
	}{
		{"published", exitcode.OK, true, nil, start.Add(90 * time.Second)},
		{"rejected keeps the previous success", exitcode.GateRejected, false, nil, prev},
		// Entries built, the pointer write refused (a lock): nothing of
		// them is what readers see.
		{"pointer not written", exitcode.Error, false, nil, prev},
		{"published, the date superseded", exitcode.OK, true, []dates.Date{d}, start.Add(90 * time.Second)},
	} {
		res := res
		res.Published, res.Superseded = tc.published, tc.superseded
		seen := tc.published && tc.superseded == nil
		run := metrics.Run{Result: res, Code: tc.code, Started: start, Ended: start.Add(90 * time.Second),
			UnknownCap: 0.02, HaveCap: true, PreviousSuccess: prev,
			Phases: []metrics.Phase{{Name: "stage", Duration: 30 * time.Second}}}
		path := filepath.Join(t.TempDir(), "m.prom")
		fams := writeAndParse(t, path, run)
		for _, want := range []struct {
			name   string
			labels map[string]string
			v      float64
		}{
			{metrics.LastAttempt, nil, float64(start.Unix())},
			{metrics.LastSuccess, nil, float64(tc.wantSuccess.Unix())},
			{metrics.LastExitCode, nil, float64(tc.code)},
			{metrics.RunDuration, nil, 90},
			{metrics.UnknownCap, nil, 0.02},
			{metrics.GateCheck, map[string]string{"check": "a", "date": "2026-03-02"}, 1},
			{metrics.GateCheck, map[string]string{"check": "b", "date": ""}, 0},
			{metrics.PhaseDuration, map[string]string{"phase": "stage"}, 30},
		} {
			got, ok := metrics.Value(fams, want.name, want.labels)
			if !ok || got != want.v {
				t.Errorf("%s: %s%v = %v (found %v), want %v", tc.name, want.name, want.labels, got, ok, want.v)
			}
		}
		// The date's figures are those readers see, or absent.
		for _, want := range []struct {
			name string
			v    float64
		}{{metrics.EventCount, 973}, {metrics.UnknownRate, 0.01}, {metrics.FactBytes, 123}, {metrics.FactFiles, 2}} {
			got, ok := metrics.Value(fams, want.name, map[string]string{"date": "2026-03-02"})
			if ok != seen || (seen && got != want.v) {
				t.Errorf("%s: %s{date=2026-03-02} = %v (found %v), want found %v with %v", tc.name, want.name, got, ok, seen, want.v)
			}
		}
		if got := metrics.PreviousSuccess(path); !got.Equal(tc.wantSuccess) {
			t.Errorf("%s: PreviousSuccess %v, want %v", tc.name, got, tc.wantSuccess)
		}
	}
}

// TestUnsettledDates: the count of dates a missed run left unsettled is
// there whenever the run looked (0 included, so an alert on it resolves),
// and absent when the run failed before it could.
func TestUnsettledDates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unsettled []dates.Date
		checked   bool
		want      float64
		found     bool
	}{
		{"two dates", []dates.Date{dates.MustParse("2026-02-27"), dates.MustParse("2026-02-28")}, true, 2, true},
		{"none", nil, true, 0, true},
		{"not looked", nil, false, 0, false},
	} {
		run := metrics.Run{Result: job.Result{Unsettled: tc.unsettled, UnsettledChecked: tc.checked}, Code: exitcode.Error}
		fams := writeAndParse(t, filepath.Join(t.TempDir(), "m.prom"), run)
		if got, ok := metrics.Value(fams, metrics.Unsettled, nil); ok != tc.found || got != tc.want {
			t.Errorf("%s: %s = %v (found %v), want %v (found %v)", tc.name, metrics.Unsettled, got, ok, tc.want, tc.found)
		}
	}
}

// TestPreviousSuccessUnreadable: no file, or one that does not parse, is no
// previous success (and no panic).
func TestPreviousSuccessUnreadable(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.prom")
	if err := os.WriteFile(bad, []byte("not { metrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "none.prom"), bad} {
		if got := metrics.PreviousSuccess(p); !got.IsZero() {
			t.Errorf("%s: %v, want zero", p, got)
		}
	}
}

// TestPhases times phases with the given clock and passes them on.
func TestPhases(t *testing.T) {
	now := time.Unix(0, 0)
	p := &metrics.Phases{Now: func() time.Time { return now }}
	for _, step := range []struct {
		name string
		d    time.Duration
	}{{"stage", 2 * time.Second}, {"gate", time.Second}, {"stage", 3 * time.Second}} {
		end := p.Phase(step.name)
		now = now.Add(step.d)
		end()
	}
	got := p.Done()
	want := []metrics.Phase{{Name: "gate", Duration: time.Second}, {Name: "stage", Duration: 5 * time.Second}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Done = %v, want %v", got, want)
	}
}

// TestPushSuccessGroupRefused: a Pushgateway that takes the run's group
// and refuses the last-success group (a proxy's rule, a full disk) gives
// an error that says which was not pushed and masks the URL's password.
func TestPushSuccessGroupRefused(t *testing.T) {
	var runGroup int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/outcome/success") {
			http.Error(w, "refused", http.StatusInternalServerError)
			return
		}
		runGroup++
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://ops:Sup3rSecret@", 1)
	at := time.Date(2026, 3, 3, 6, 0, 0, 0, time.UTC)
	err := metrics.Push(t.Context(), srv.Client(), u, metrics.Run{Code: exitcode.OK, Started: at, Ended: at.Add(time.Minute)})
	if !errors.Is(err, metrics.ErrSuccessNotPushed) {
		t.Fatalf("err %v, want ErrSuccessNotPushed", err)
	}
	if strings.Contains(err.Error(), "Sup3rSecret") {
		t.Errorf("err %q shows the password", err)
	}
	if runGroup != 1 {
		t.Errorf("the run's group was pushed %d times, want 1", runGroup)
	}
}

// writeAndParse writes run's textfile at path and reads it back with the
// library's parser.
func writeAndParse(t *testing.T, path string, run metrics.Run) map[string]*dto.MetricFamily {
	t.Helper()
	if err := metrics.WriteFile(path, metrics.Registry(run)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := metrics.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
