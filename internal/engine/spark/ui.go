package spark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/redact"
)

// The Spark application's REST API (/api/v1 on the driver's UI port) is
// where a cluster keeps what Spark Connect does not tell its client: each
// task's duration and spill, and which executors are alive. The engine
// reads the enrollment join stage's tasks from it for the skew and spill
// monitors, and watches the executors while a statement runs, so that a
// worker lost for good fails the run instead of leaving it waiting.

// ui is a client of one application's REST API.
type ui struct {
	base string // http://host:port, without /api/v1
	app  string // the application id
	http *http.Client
}

// uiURL decides where the driver's UI is: the URL the job names
// (engagement.sparkUI), else the server's own spark.driver.host and
// spark.ui.port. "" when the server runs without a UI.
func (e *Engine) uiURL(ctx context.Context) string {
	if e.uiBase != "" {
		return strings.TrimRight(e.uiBase, "/")
	}
	if v, err := e.session.Config().Get(ctx, "spark.ui.enabled"); err == nil && v == "false" {
		return ""
	}
	host, err := e.session.Config().Get(ctx, "spark.driver.host")
	if err != nil || host == "" {
		return ""
	}
	port, err := e.session.Config().Get(ctx, "spark.ui.port")
	if err != nil || port == "" {
		port = "4040"
	}
	return "http://" + host + ":" + port
}

// openUI finds the application behind the driver's UI, or says why not.
func (e *Engine) openUI(ctx context.Context) (*ui, string) {
	if e.restUI != nil || e.noUI != "" {
		return e.restUI, e.noUI
	}
	c, why := e.findUI(ctx)
	e.restUI, e.noUI = c, why
	return c, why
}

func (e *Engine) findUI(ctx context.Context) (*ui, string) {
	base := e.uiURL(ctx)
	if base == "" {
		return nil, "the Spark server runs without its UI (spark.ui.enabled=false) and engagement.sparkUI is not set"
	}
	c := &ui{base: base, http: &http.Client{Timeout: 10 * time.Second}}
	var apps []struct {
		ID string `json:"id"`
	}
	if err := c.get(ctx, "/applications", &apps); err != nil {
		return nil, err.Error()
	}
	if len(apps) == 0 {
		return nil, redact.URL(base) + " lists no application"
	}
	c.app = apps[0].ID
	return c, ""
}

func (c *ui) get(ctx context.Context, path string, out any) error {
	u := c.base + "/api/v1" + path
	if c.app != "" && path != "/applications" {
		u = c.base + "/api/v1/applications/" + url.PathEscape(c.app) + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	// The UI may sit behind basic auth (engagement.sparkUI with user and
	// password): these reasons reach the monitor records.
	base, shown := redact.URL(c.base), redact.URL(u)
	resp, err := c.http.Do(req)
	if err != nil {
		return redact.Error(fmt.Errorf("spark UI %s: %w", base, err), c.base)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("spark UI %s: GET %s: %s", base, shown, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("spark UI %s: GET %s: %w", base, shown, err)
	}
	return nil
}

type restJob struct {
	JobID       int    `json:"jobId"`
	Description string `json:"description"`
	StageIDs    []int  `json:"stageIds"`
	Status      string `json:"status"`
}

type restStage struct {
	StageID            int    `json:"stageId"`
	AttemptID          int    `json:"attemptId"`
	Status             string `json:"status"`
	NumTasks           int    `json:"numTasks"`
	NumCompleteTasks   int    `json:"numCompleteTasks"`
	ShuffleReadRecords int64  `json:"shuffleReadRecords"`
	RDDIDs             []int  `json:"rddIds"`
}

type restTask struct {
	Status      string           `json:"status"`
	Duration    int64            `json:"duration"`
	TaskMetrics *restTaskMetrics `json:"taskMetrics"`
}

type restTaskMetrics struct {
	ExecutorRunTime    int64 `json:"executorRunTime"`
	MemoryBytesSpilled int64 `json:"memoryBytesSpilled"`
	DiskBytesSpilled   int64 `json:"diskBytesSpilled"`
	ShuffleReadMetrics struct {
		RecordsRead int64 `json:"recordsRead"`
	} `json:"shuffleReadMetrics"`
}

// sessionID is this engine's Spark Connect session id, which the server
// writes into the description of every job the session runs.
// spark-connect-go keeps it unexported, so it is read by reflection (a
// read of a string field, nothing set).
func (e *Engine) sessionID() string {
	v := reflect.ValueOf(e.session)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("sessionId")
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

// lastJob is the newest job id the application has run, -1 for none.
func (c *ui) lastJob(ctx context.Context) (int, error) {
	var jobs []restJob
	if err := c.get(ctx, "/jobs", &jobs); err != nil {
		return 0, err
	}
	last := -1
	for _, j := range jobs {
		last = max(last, j.JobID)
	}
	return last, nil
}

// jobStarted notes the application's newest job and returns a watch that
// calls then once a newer job of this session runs, or after ten seconds:
// run the watch beside the statement sent after jobStarted returned. The
// watch is then itself when there is no UI to ask.
func (e *Engine) jobStarted(ctx context.Context, then func()) (watch func()) {
	c, _ := e.openUI(ctx)
	if c == nil {
		return then
	}
	after, err := c.lastJob(ctx)
	if err != nil {
		return then
	}
	session := e.sessionID()
	return func() {
		defer then()
		for range 50 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			jobs, err := c.sessionJobs(ctx, session, after)
			if err != nil || len(jobs) > 0 {
				return
			}
		}
	}
}

// sessionJobs lists the application's jobs newer than job after that ran
// session's statements: Spark Connect names the session in a job's
// description.
func (c *ui) sessionJobs(ctx context.Context, session string, after int) ([]restJob, error) {
	var jobs []restJob
	if err := c.get(ctx, "/jobs", &jobs); err != nil {
		return nil, err
	}
	marker := fmt.Sprintf("session_id: %q", session)
	var out []restJob
	for _, j := range jobs {
		if j.JobID > after && strings.Contains(j.Description, marker) {
			out = append(out, j)
		}
	}
	return out, nil
}

// taskProbe measures the enrollment join stage of BuildFacts.
type taskProbe struct {
	c       *ui
	session string
	after   int // jobs up to this id ran before BuildFacts
	tasks   *engine.StageTasks
	why     string
}

// startProbe notes where the application's jobs stand before BuildFacts.
func (e *Engine) startProbe(ctx context.Context) *taskProbe {
	p := &taskProbe{}
	c, why := e.openUI(ctx)
	if c == nil {
		p.why = why
		return p
	}
	p.session = e.sessionID()
	if p.session == "" {
		p.why = "the Spark Connect session id is unknown, so its jobs cannot be told from others"
		return p
	}
	last, err := c.lastJob(ctx)
	if err != nil {
		p.why = err.Error()
		return p
	}
	p.c, p.after = c, last
	return p
}

// finish finds, among the session's jobs since the probe started, the
// stage that reads the events' shuffle, where a hot key lands, and reads
// its tasks: of the stages reading a shuffle, the one reading the most
// records (it writes none: the grain goes to the cache). With a hot course
// salted it is the enrollment join stage itself (the events and the
// enrollments, partitioned alike, aggregated, joined and cached in one
// stage); without one, Spark shuffles the aggregated rows again for the
// join, and it is the events' aggregate.
func (p *taskProbe) finish(ctx context.Context) {
	if p.c == nil {
		return
	}
	var stage restStage
	// The UI's store is fed by a listener and can trail the statement's
	// end by a moment: wait until the stage shows all its tasks done.
	for try := 0; ; try++ {
		jobs, err := p.c.sessionJobs(ctx, p.session, p.after)
		if err != nil {
			p.why = err.Error()
			return
		}
		var ids []int
		for _, j := range jobs {
			ids = append(ids, j.StageIDs...)
		}
		stage = restStage{StageID: -1}
		for _, id := range ids {
			var attempts []restStage
			if err := p.c.get(ctx, fmt.Sprintf("/stages/%d", id), &attempts); err != nil {
				continue // a stage the UI no longer retains
			}
			for _, a := range attempts {
				if a.Status == "COMPLETE" && a.ShuffleReadRecords > 0 &&
					(stage.StageID < 0 || a.ShuffleReadRecords > stage.ShuffleReadRecords) {
					stage = a
				}
			}
		}
		if stage.StageID >= 0 && stage.NumCompleteTasks >= stage.NumTasks {
			break
		}
		if try == 20 {
			p.why = fmt.Sprintf("the application %s shows no completed enrollment join stage for this session", p.c.app)
			return
		}
		select {
		case <-ctx.Done():
			p.why = ctx.Err().Error()
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	var tasks []restTask
	if err := p.c.get(ctx, fmt.Sprintf("/stages/%d/%d/taskList?length=1000000", stage.StageID, stage.AttemptID), &tasks); err != nil {
		p.why = err.Error()
		return
	}
	p.tasks = stageTasks(stage, tasks)
	if p.tasks == nil {
		p.why = fmt.Sprintf("stage %d lists no successful task", stage.StageID)
	}
}

// stageTasks reduces a stage's successful tasks to the monitors' figures.
func stageTasks(stage restStage, tasks []restTask) *engine.StageTasks {
	out := &engine.StageTasks{StageID: stage.StageID, Attempt: stage.AttemptID}
	var durations, records []int64
	for _, t := range tasks {
		if t.Status != "SUCCESS" {
			continue
		}
		durations = append(durations, t.Duration)
		if m := t.TaskMetrics; m != nil {
			records = append(records, m.ShuffleReadMetrics.RecordsRead)
			out.MemoryBytesSpilled += m.MemoryBytesSpilled
			out.DiskBytesSpilled += m.DiskBytesSpilled
			if m.MemoryBytesSpilled > 0 || m.DiskBytesSpilled > 0 {
				out.TasksSpilled++
			}
			out.MaxTaskBytesSpilled = max(out.MaxTaskBytesSpilled, m.MemoryBytesSpilled+m.DiskBytesSpilled)
		}
	}
	if len(durations) == 0 {
		return nil
	}
	out.Tasks = len(durations)
	out.MaxMillis, out.MedianMilli = maxMedian(durations)
	if out.MedianMilli > 0 {
		out.SkewRatio = float64(out.MaxMillis) / out.MedianMilli
	}
	if len(records) == len(durations) {
		out.MaxRecords, out.MedianRecords = maxMedian(records)
	}
	return out
}

// maxMedian is the largest and the median of v, which it sorts.
func maxMedian(v []int64) (int64, float64) {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n-1], float64(v[n/2])
	}
	return v[n-1], float64(v[n/2-1]+v[n/2]) / 2
}

// restExecutor is one executor of the application (/allexecutors).
type restExecutor struct {
	ID           string `json:"id"`
	IsActive     bool   `json:"isActive"`
	RemoveReason string `json:"removeReason"`
	TotalCores   int    `json:"totalCores"`
}

// DefaultExecutorWait is how long a statement may wait with no live
// executor, after the application had some, before the engine gives up.
// An application that never had one waits grantWaits times as long: a
// cluster may be slow to grant the first.
const DefaultExecutorWait = 60 * time.Second

const grantWaits = 5

// SetExecutorWait changes DefaultExecutorWait for this engine.
func (e *Engine) SetExecutorWait(d time.Duration) { e.executorWait = d }

// errExecutorsLost is the cancel cause the watch sets.
type errExecutorsLost struct {
	reason string
	cause  string // CauseExecutorLost or CauseNoExecutor
}

func (e errExecutorsLost) Error() string { return e.reason }

// executorState reads /allexecutors: whether a task can run now, whether
// the application ever had an executor, and why the last one went. In
// local mode the driver runs the tasks itself and is the one entry with
// cores; on a cluster the driver has none.
func executorState(execs []restExecutor) (live, had bool, reason string) {
	for _, x := range execs {
		if x.ID == "driver" {
			live = live || (x.IsActive && x.TotalCores > 0)
			continue
		}
		had = true
		if x.IsActive {
			live = true
		} else if x.RemoveReason != "" {
			reason = fmt.Sprintf("executor %s: %s", x.ID, x.RemoveReason)
		}
	}
	return live, had, reason
}

// watch runs op while a goroutine watches the application's executors. On
// a standalone cluster a statement whose worker died, or that no worker
// has room for, waits for an executor forever; when the application has
// had no live executor for the executor wait (grantWaits times it if it
// never had one), op's context is cancelled and the error says why.
// Without a reachable UI there is nothing to watch, and op runs as it is.
func (e *Engine) watch(ctx context.Context, op func(context.Context) error) error {
	c, _ := e.openUI(ctx)
	if c == nil {
		return op(ctx)
	}
	wait := e.executorWait
	if wait <= 0 {
		wait = DefaultExecutorWait
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Counted in ticks, not read from the clock: the watch is only
		// about how long the statement waited.
		quiet := 0
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var execs []restExecutor
			if err := c.get(ctx, "/allexecutors", &execs); err != nil {
				continue
			}
			live, had, reason := executorState(execs)
			if live {
				quiet = 0
				continue
			}
			quiet++
			waited := time.Duration(quiet) * time.Second
			switch {
			case had && waited >= wait:
				cancel(errExecutorsLost{fmt.Sprintf("no executor for %s (last removed: %s)", wait, firstLine(reason)), CauseExecutorLost})
				return
			case !had && waited >= grantWaits*wait:
				cancel(errExecutorsLost{fmt.Sprintf("no executor granted in %s", grantWaits*wait), CauseNoExecutor})
				return
			}
		}
	}()
	err := op(ctx)
	var lost errExecutorsLost
	if err != nil && errors.As(context.Cause(ctx), &lost) {
		class := "EXECUTOR_LOST"
		if lost.cause == CauseNoExecutor {
			class = "NO_EXECUTOR"
		}
		return &Error{Remote: e.remote, Class: class, Msg: lost.reason, Cause: lost.cause, cause: err}
	}
	return err
}

// UI returns the base of the application's REST API
// (http://host:port/api/v1/applications/<id>), or why it cannot be reached.
func (e *Engine) UI(ctx context.Context) (string, error) {
	c, why := e.openUI(ctx)
	if c == nil {
		return "", errors.New(why)
	}
	return c.base + "/api/v1/applications/" + url.PathEscape(c.app), nil
}
