package job

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/monitor"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/pointer/pointertest"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestMonitorsSuperseded: a job whose date a concurrent job's later
// generation replaced before it confirmed (exit 0, superseded_dates) is
// judged on what readers see: dates_in_pointer names the date as missing
// and superseded, and job_result gives the other job for it. The monitors
// called the date this job's.
func TestMonitorsSuperseded(t *testing.T) {
	mon, tue := dates.MustParse("2026-03-02"), dates.MustParse("2026-03-03")
	store := objstore.New(local.New(t.TempDir(), local.Options{}))
	entry := func(job string) pointer.DateEntry {
		return pointer.DateEntry{JobID: job, ManifestID: "m", EnrollmentSnapshotID: "e", FactFiles: []pointer.File{}, CourseDayFiles: []pointer.File{}}
	}
	own, err := pointer.Publish(t.Context(), store, pointertest.Commit("v1", map[dates.Date]pointer.DateEntry{mon: entry("v1"), tue: entry("v1")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Publish(t.Context(), store, pointertest.Commit("v2", map[dates.Date]pointer.DateEntry{tue: entry("v2")})); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m := newMonitors(slog.New(slog.NewJSONHandler(&buf, nil)), store, config.Job{JobID: "v1", Dates: []dates.Date{mon, tue}})
	m.finish(t.Context(), Result{Published: true, Pointer: own, Superseded: []dates.Date{tue}}, nil)

	seen := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if name, _ := rec["signal"].(string); name != "" {
			rec["figures"].(map[string]any)["status"] = rec["status"]
			seen[name] = rec["figures"].(map[string]any)
		}
	}
	strs := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	d := seen[monitor.DatesInPointer]
	if d == nil || !slices.Equal(strs(d["published_by_this_job"]), []string{"2026-03-02"}) || !slices.Equal(strs(d["missing"]), []string{"2026-03-03"}) ||
		!slices.Equal(strs(d["superseded"]), []string{"2026-03-03"}) || d["status"] != string(monitor.Warn) {
		t.Errorf("dates_in_pointer %v, want 2026-03-02 this job's, 2026-03-03 missing and superseded, warn", d)
	}
	r := seen[monitor.JobResult]
	if ids, _ := r["pointer_job_ids"].(map[string]any); ids["2026-03-03"] != "v2" || ids["2026-03-02"] != "v1" || r["result"] != "published" ||
		r["generation"] != float64(1) || r["current_generation"] != float64(2) {
		t.Errorf("job_result %v, want published at generation 1, current generation 2, with pointer job ids v1 and v2", r)
	}
}
