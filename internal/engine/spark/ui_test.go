package spark

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine"
)

// TestStageTasks: the skew and spill figures from a stage's task list, by
// hand: only successful tasks count, the median of an even count is the
// mean of the middle two, a task spilled to memory or disk counts once.
func TestStageTasks(t *testing.T) {
	task := func(status string, ms, mem, disk int64) restTask {
		r := restTask{Status: status, Duration: ms}
		r.TaskMetrics = &restTaskMetrics{ExecutorRunTime: ms, MemoryBytesSpilled: mem, DiskBytesSpilled: disk}
		// Records read follow the duration here, by ten.
		r.TaskMetrics.ShuffleReadMetrics.RecordsRead = ms * 10
		return r
	}
	for _, tc := range []struct {
		name  string
		tasks []restTask
		want  *engine.StageTasks
	}{
		{"odd", []restTask{task("SUCCESS", 100, 0, 0), task("SUCCESS", 900, 5, 0), task("SUCCESS", 300, 0, 7), task("FAILED", 5000, 9, 9)},
			&engine.StageTasks{StageID: 4, Attempt: 1, Tasks: 3, MaxMillis: 900, MedianMilli: 300, SkewRatio: 3,
				MaxRecords: 9000, MedianRecords: 3000, MemoryBytesSpilled: 5, DiskBytesSpilled: 7, TasksSpilled: 2, MaxTaskBytesSpilled: 7}},
		{"even", []restTask{task("SUCCESS", 100, 0, 0), task("SUCCESS", 200, 0, 0), task("SUCCESS", 400, 0, 0), task("SUCCESS", 1000, 0, 0)},
			&engine.StageTasks{StageID: 4, Attempt: 1, Tasks: 4, MaxMillis: 1000, MedianMilli: 300, SkewRatio: 1000.0 / 300,
				MaxRecords: 10000, MedianRecords: 3000}},
		{"none succeeded", []restTask{task("FAILED", 10, 0, 0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stageTasks(restStage{StageID: 4, AttemptID: 1}, tc.tasks)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want nil", *got)
			case tc.want != nil && (got == nil || *got != *tc.want):
				t.Errorf("got %+v, want %+v", got, *tc.want)
			}
		})
	}
}

// TestExecutorState reads /allexecutors as Spark 4.0 answers it (the
// entries below are the fields of real answers, local[2] and standalone):
// in local mode the driver, with cores, runs the tasks; on a cluster only
// executors do, and an application that never had one is told apart from
// one that lost them.
func TestExecutorState(t *testing.T) {
	driver := func(cores int) restExecutor { return restExecutor{ID: "driver", IsActive: true, TotalCores: cores} }
	for _, tc := range []struct {
		name      string
		execs     []restExecutor
		live, had bool
		reason    string
	}{
		{"local mode", []restExecutor{driver(2)}, true, false, ""},
		{"cluster, an executor", []restExecutor{{ID: "0", IsActive: true, TotalCores: 2}, driver(0)}, true, true, ""},
		{"cluster, none granted", []restExecutor{driver(0)}, false, false, ""},
		{"cluster, all lost", []restExecutor{{ID: "0", RemoveReason: "worker lost: 127.0.0.1:20351 got disassociated", TotalCores: 2}, driver(0)}, false, true,
			"executor 0: worker lost: 127.0.0.1:20351 got disassociated"},
		{"cluster, one lost, one live", []restExecutor{{ID: "0", RemoveReason: "worker lost"}, {ID: "1", IsActive: true, TotalCores: 2}, driver(0)}, true, true,
			"executor 0: worker lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, had, reason := executorState(tc.execs)
			if live != tc.live || had != tc.had || reason != tc.reason {
				t.Errorf("executorState = %v, %v, %q; want %v, %v, %q", live, had, reason, tc.live, tc.had, tc.reason)
			}
		})
	}
}

// TestUIErrorsMaskTheirPassword: a UI behind basic auth that refuses, or
// does not answer, is named without the password (its reasons reach the
// monitor records).
func TestUIErrorsMaskTheirPassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, base := range []string{strings.Replace(srv.URL, "http://", "http://ui:MARKER1@", 1), "http://ui:MARKER1@127.0.0.1:1"} {
		c := &ui{base: base, http: &http.Client{Timeout: 5 * time.Second}}
		var out any
		err := c.get(t.Context(), "/applications", &out)
		if err == nil || strings.Contains(err.Error(), "MARKER1") {
			t.Errorf("%s: %v, want an error without the password", base, err)
		}
	}
}
