package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
)

// TestOperatorCommands walks the operator's day through the CLI: two
// publishes of Monday, history of that date, a rollback to the first,
// status naming its job again with the expected.json figures, then gc's
// retention dry run naming every object it would delete, the real run,
// and history showing the expiry.
func TestOperatorCommands(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish() // generation 1: Monday and Tuesday
	exp := biReadExpected(t, w.src)
	mon := "2026-03-02"
	r := biRun(t, w.publishArgs("second", mon, "--allow-outside-horizon")...)
	if r.code != 0 {
		t.Fatalf("second publish: exit %d\n%s", r.code, r.stderr)
	}

	js := biRun(t, "history", "--warehouse", w.warehouse, "--date", mon, "--format", "json")
	var log struct {
		Current int64 `json:"current_generation"`
		Changes []struct {
			Generation int64  `json:"generation"`
			Operation  string `json:"operation"`
			JobID      string `json:"job_id"`
			EventCount int64  `json:"event_count"`
			Files      int    `json:"files"`
			Bytes      int64  `json:"bytes"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &log); err != nil || js.code != 0 {
		t.Fatalf("history json: exit %d, %v\n%s", js.code, err, js.stdout)
	}
	want := exp.ByDate[dates.MustParse(mon)].Events
	if log.Current != 2 || len(log.Changes) != 2 || log.Changes[0].JobID != "second" || log.Changes[1].JobID != "good-1" ||
		log.Changes[1].EventCount != want || log.Changes[1].Files < 2 || log.Changes[1].Bytes <= 0 || log.Changes[0].Operation != "publish" {
		t.Fatalf("history of %s = %+v; want generation 2 by second over generation 1 by good-1 with %d events", mon, log, want)
	}

	rb := biRun(t, "rollback", "--warehouse", w.warehouse, "--date", mon, "--to-generation", "1", "--job-id", "back-1")
	if rb.code != 0 || !strings.Contains(rb.stdout, "generation=3") {
		t.Fatalf("rollback: exit %d\n%s%s", rb.code, rb.stdout, rb.stderr)
	}
	st := biRun(t, "status", "--warehouse", w.warehouse, "--date", mon, "--format", "json")
	var status struct {
		Dates []struct {
			JobID      string `json:"job_id"`
			EventCount int64  `json:"event_count"`
		} `json:"dates"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || len(status.Dates) != 1 ||
		status.Dates[0].JobID != "good-1" || status.Dates[0].EventCount != want {
		t.Fatalf("status after the rollback = %s (%v); want good-1 with %d events", st.stdout, err, want)
	}
	table := biRun(t, "history", "--warehouse", w.warehouse, "--date", mon)
	if table.code != 0 || !strings.Contains(table.stdout, "rollback to 1") || !strings.Contains(table.stdout, "3 (current)") {
		t.Errorf("history table after the rollback:\n%s", table.stdout)
	}

	// Retention, dry run: generations 1 and 2 would expire (min-age forced
	// to zero), and second's staging goes object by object; good-1's
	// stays, named by the rollback's generation.
	before := w.pointerBytes()
	dry := biRun(t, "gc", "--warehouse", w.warehouse, "--retain-generations", "1", "--min-age", "0s", "--force-min-age", "--dry-run")
	if dry.code != 0 {
		t.Fatalf("gc dry run: exit %d\n%s", dry.code, dry.stderr)
	}
	for _, line := range []string{
		"would delete pointer-history/1.json (generation 1 expired: beyond --retain-generations 1)",
		"would delete pointer-history/2.json",
		"would delete staging/job_id=second (named by no retained generation",
		"  would delete staging/job_id=second/_attempt.json (in staging/job_id=second)",
		"kept pointer-history/3.json: the current generation",
		"kept staging/job_id=good-1: named by",
	} {
		if !strings.Contains(dry.stdout, line) {
			t.Errorf("gc dry run does not say %q:\n%s", line, dry.stdout)
		}
	}
	if string(w.pointerBytes()) != string(before) || !w.exists(w.join(w.warehouse, "pointer-history", "1.json")) {
		t.Errorf("a dry run changed the warehouse")
	}
	real := biRun(t, "gc", "--warehouse", w.warehouse, "--retain-generations", "1", "--min-age", "0s", "--force-min-age")
	if real.code != 0 || !strings.Contains(real.stdout, "expired 2 history generations") {
		t.Fatalf("gc: exit %d\n%s%s", real.code, real.stdout, real.stderr)
	}
	after := biRun(t, "history", "--warehouse", w.warehouse)
	// Generation 3 is now the current and the oldest, and says both: the
	// second is why it lists every date.
	if !strings.Contains(after.stdout, "expiry: generations 1-2 expired at") || strings.Contains(after.stdout, "\n1 ") ||
		!strings.Contains(after.stdout, "3 (current, oldest)") {
		t.Errorf("history after expiry:\n%s", after.stdout)
	}
	if r := biRun(t, "rollback", "--warehouse", w.warehouse, "--date", mon, "--to-generation", "2", "--job-id", "back-2"); r.code != 2 {
		t.Errorf("rollback to an expired generation: exit %d, want 2\n%s", r.code, r.stderr)
	}
}
