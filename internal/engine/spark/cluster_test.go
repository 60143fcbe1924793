package spark_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage"
)

// The failures a cluster adds to a publish on S3: each gives one line
// naming its cause, exit 1, and no pointer. The warehouse and the inputs
// are in the bucket alone.

// onStage runs hook (in its own goroutine) as the engine starts staging.
type onStage struct {
	engine.Engine
	hook func()
}

func (o onStage) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, dir string) (engine.Staged, error) {
	go o.hook()
	return o.Engine.Stage(ctx, spec, wh, dir)
}

// onInspect runs hook, then the engine's Inspect.
type onInspect struct {
	engine.Engine
	hook func()
}

func (o onInspect) Inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	o.hook()
	return o.Engine.Inspect(ctx, spec)
}

// failedPublish publishes the fixture from S3 with h, the engine wrapped by
// wrap, and checks the refusal: exit 1, one line holding want, no pointer.
// It returns the refusal.
func failedPublish(t *testing.T, h publishtest.Harness, wrap func(engine.Engine) engine.Engine, want string) error {
	t.Helper()
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	_, err := h.PublishWith(t, fx.Job(t, wh, "cluster-failure", mon, tue), wrap)
	if err == nil {
		t.Fatal("published; want a failure")
	}
	t.Logf("refused: %v", err)
	if code := exitcode.Code(err); code != exitcode.Error {
		t.Errorf("exit %d (%v), want 1", code, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("error %q: want one line naming %q", msg, want)
	}
	if p := publishtest.Get(t, wh, "pointer.json"); p != nil {
		t.Errorf("pointer.json written: %s", p)
	}
	return err
}

// TestS3AFailures: a cluster without the S3A connector, and one whose S3A
// credentials are refused. Both are made in the job's own session, over
// the real server: fs.s3a.impl naming a class that is not there is what a
// cluster without hadoop-aws resolves (core-default.xml names
// S3AFileSystem, which is then missing), and the cache is off so the
// session's filesystem is built from its own settings.
func TestS3AFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"NoConnector", map[string]string{"fs.s3a.impl": "org.apache.hadoop.fs.s3a.absent.S3AFileSystem"}, spark.CauseNoS3A},
		// The right key with a wrong secret: the test server (versitygw)
		// answers an unknown key with 404, where S3 answers 403.
		{"BadCredentials", map[string]string{"fs.s3a.access.key": os.Getenv("AWS_ACCESS_KEY_ID"), "fs.s3a.secret.key": "not-the-secret"}, spark.CauseS3ACreds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s3Harness(t)
			h.Open = func(t *testing.T) engine.Engine {
				settings := fixtureSettings(t)
				settings["fs.s3a.impl.disable.cache"] = "true"
				for k, v := range tc.settings {
					settings[k] = v
				}
				e, err := spark.Open(context.Background(), sparktest.Remote(t), settings)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			err := failedPublish(t, h, nil, tc.want)
			// Spark's line names the object s3a://, as the cluster reads
			// it; the user gave s3://.
			if msg := err.Error(); tc.want == spark.CauseS3ACreds && (!strings.Contains(msg, "s3://") || strings.Contains(msg, "s3a://")) {
				t.Errorf("error %q: want the object named s3://", msg)
			}
		})
	}
}

// TestSessionGone: the server ends the job's session while it stages (what
// it does to a session that timed out).
func TestSessionGone(t *testing.T) {
	h := s3Harness(t)
	failedPublish(t, h, func(e engine.Engine) engine.Engine {
		return onStage{Engine: e, hook: func() {
			if err := spark.ReleaseOnServer(context.Background(), e.(*spark.Engine)); err != nil {
				t.Error(err)
			}
		}}
	}, spark.CauseSessionGone)
}

// TestWorkerLostDuringStaging kills the cluster's worker (and with it its
// executors) while the job stages: a standalone cluster would wait for an
// executor forever, so the engine gives up after its executor wait. The
// worker is started again afterwards for the other tests.
// scripts/test.sh runs it alone, after the other packages, which share the
// cluster.
func TestWorkerLostDuringStaging(t *testing.T) {
	h, kill := workerLoss(t)
	failedPublish(t, h, func(e engine.Engine) engine.Engine {
		return onStage{Engine: e, hook: kill}
	}, spark.CauseExecutorLost)
}

// TestWorkerLostDuringInspect: the same before the first statement. The
// schema reads, each a job on an executor and not a statement, waited for
// ever; they are watched too. Run alone as TestWorkerLostDuringStaging is.
func TestWorkerLostDuringInspect(t *testing.T) {
	h, kill := workerLoss(t)
	err := failedPublish(t, h, func(e engine.Engine) engine.Engine {
		return onInspect{Engine: e, hook: kill}
	}, spark.CauseExecutorLost)
	if err != nil && !strings.Contains(err.Error(), "read the schemas of") {
		t.Errorf("refused at %v, want at the schema reads", err)
	}
}

// workerLoss is the S3 harness whose engines wait 10 s for an executor,
// and the hook that kills the cluster's worker and executors; the worker
// is started again when the test ends.
func workerLoss(t *testing.T) (publishtest.Harness, func()) {
	h := s3Harness(t)
	script := filepath.Join(publishtest.Root(), "scripts", "spark.sh")
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "worker").CombinedOutput(); err != nil {
			t.Errorf("restart the worker: %v: %s", err, out)
		}
		awaitExecutor(t)
	})
	open := h.Open
	h.Open = func(t *testing.T) engine.Engine {
		e := open(t).(*spark.Engine)
		e.SetExecutorWait(10 * time.Second)
		return e
	}
	return h, func() {
		out, err := exec.Command("bash", script, "pids").Output()
		if err != nil {
			t.Errorf("worker pids: %v", err)
			return
		}
		for _, f := range strings.Fields(string(out)) {
			pid, _ := strconv.Atoi(f)
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// awaitExecutor waits until the server's application has a live executor
// again.
func awaitExecutor(t *testing.T) {
	t.Helper()
	e := open(t)
	defer e.Close()
	base, err := e.UI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var execs []struct {
			ID       string `json:"id"`
			IsActive bool   `json:"isActive"`
		}
		if resp, err := http.Get(base + "/executors"); err == nil {
			json.NewDecoder(resp.Body).Decode(&execs)
			resp.Body.Close()
		}
		for _, x := range execs {
			if x.ID != "driver" && x.IsActive {
				return
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatal("no executor came back within 3 minutes of restarting the worker")
}
