// Package spark runs the job on Apache Spark through Spark Connect
// (github.com/apache/spark-connect-go). The Go side lists the local inputs
// and the staged files, as the DuckDB engine does; Spark reads, joins,
// aggregates, writes the partitioned staging and computes the gate's
// figures from the staging read back.
package spark

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"github.com/apache/spark-connect-go/spark/sql"
	"github.com/apache/spark-connect-go/spark/sql/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/redact"
)

// Engine is the Spark implementation of engine.Engine. It holds one Spark
// Connect session: temporary views and runtime settings are per session.
type Engine struct {
	remote  string
	session sql.SparkSession
	// static are the settings the server refused to change and already
	// had; unknown the config's spark.sql.* keys it does not know.
	static  map[string]bool
	unknown []string
	uiBase  string // engagement.sparkUI; "" derives it from the server's settings
	restUI  *ui    // the application's REST API, once found
	noUI    string // why the REST API cannot be reached, once tried
	// executorWait bounds a statement's wait with no live executor
	// (DefaultExecutorWait when 0).
	executorWait time.Duration
	// server is the time spent waiting on the Spark Connect server: the
	// rest of a publish's wall time is spent on the engine's own work
	// (listing, the pointer, the gate's arithmetic). Two requests at once
	// (the overlapped writes) count once: busy is how many are in flight,
	// since when one was.
	serverMu  sync.Mutex
	server    time.Duration
	busy      int
	busySince time.Time
	// clock is the command's clock (SetClock): the engine reads none itself,
	// and without one it counts no server time.
	clock func() time.Time
	// schemasRead counts the files whose schema Spark was asked for
	// (checkColumns), which a test holds to the distinct schema keys.
	schemasRead atomic.Int64
	// progress hears of each statement as it starts (SetProgress); steps
	// counts the statements run.
	progress progress.Reporter
	stepMu   sync.Mutex // both tables' writes run at once (OverlapsWrites)
	steps    int
	// keyHash is the 64-bit hash the uniqueness checks group by before
	// any exact comparison (xxhash64 when nil; a test weakens it to make
	// collisions, which the exact pass must then see through).
	keyHash func(cols string) string
	// aggregatesUpTo is the most dates Inspect counts with aggregates of
	// their own (perDateAggregates when 0; -1: always grouped), a test's.
	aggregatesUpTo int
	// rawViewSQL is the statement that registered rawView in this
	// session, "" before one did.
	rawViewSQL string
	// merges counts the fact grains built again merged (BuildFacts).
	merges int
}

// hashOf is the uniqueness checks' hash of cols (a comma-separated list).
func (e *Engine) hashOf(cols string) string {
	if e.keyHash != nil {
		return e.keyHash(cols)
	}
	return "xxhash64(" + cols + ")"
}

// SetProgress makes the engine report each statement it sends as a step
// (what runs now), so a publish's log profiles the Spark side statement by
// statement, as it does the DuckDB engine's.
func (e *Engine) SetProgress(r progress.Reporter) { e.progress = r }

// step reports that what starts now.
func (e *Engine) step(what string) {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	if e.progress != nil {
		e.progress.Step(e.steps, 0, 0, what)
	}
	e.steps++
}

// SetClock gives the engine the command's clock, with which it counts
// ServerTime.
func (e *Engine) SetClock(clock func() time.Time) { e.clock = clock }

// ServerTime is the time the engine has spent waiting on the Spark Connect
// server since SetClock: every statement, schema request and setting.
func (e *Engine) ServerTime() time.Duration {
	e.serverMu.Lock()
	defer e.serverMu.Unlock()
	return e.server
}

// onServer runs one request to the server, counting its time in
// ServerTime.
func (e *Engine) onServer(op func() error) error {
	if e.clock == nil {
		return op()
	}
	e.serverMu.Lock()
	if e.busy == 0 {
		e.busySince = e.clock()
	}
	e.busy++
	e.serverMu.Unlock()
	err := op()
	e.serverMu.Lock()
	if e.busy--; e.busy == 0 {
		e.server += e.clock().Sub(e.busySince)
	}
	e.serverMu.Unlock()
	return err
}

// SetUI names the driver's UI (http://host:port), whose REST API gives the
// enrollment stage's task metrics (engagement.sparkUI). Unset, the engine
// asks the server for spark.driver.host and spark.ui.port.
func (e *Engine) SetUI(base string) { e.uiBase = base }

var _ engine.Engine = (*Engine)(nil)

// maxMessage raises spark-connect-go's 4 MiB gRPC receive limit: a
// formatted plan or a footer-heavy schema answer can pass it.
const maxMessage = 128 << 20

// SettingError is a spark.* key of the config the server would not set to
// the config's value; the caller may say where the key was set.
type SettingError struct {
	Key string
	Err error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Open connects to the Spark Connect server at remote (sc://HOST:PORT) and
// applies settings (the spark.* keys of the config, as given). A key Spark
// will not change at runtime (a core or static setting such as
// spark.executor.memory) must already have the wanted value on the server,
// or Open fails naming it: silently running with another value is worse.
// spark.speculation is the engine's, not the config's: a value other than
// false is refused (exit 2), and so is a server running with it on,
// whether or not the config names it.
func Open(ctx context.Context, remote string, settings map[string]string) (*Engine, error) {
	if v, ok := settings[speculation]; ok && !speculationOff(v) {
		return nil, exitcode.UsageError(fmt.Errorf("%s%s", speculation, speculationConflict(v)))
	}
	cb, err := newChannel(remote)
	if err != nil {
		// The URL itself is wrong: no retry can mend it.
		return nil, exitcode.UsageError(fmt.Errorf("spark remote %q: %w", redact.URL(remote), redact.Error(err, remote)))
	}
	// Every message names the server by e.remote, which never holds the
	// token: errors reach the result document, Airflow's XCom and
	// OpenLineage's errorMessage.
	shown := redact.URL(remote)
	s, err := sql.NewSessionBuilder().Remote(remote).WithChannelBuilder(cb).Build(ctx)
	if err != nil {
		return nil, wrap(shown, "connect", redact.Error(err, remote))
	}
	e := &Engine{remote: shown, session: s}
	// The builder dials lazily; ask the server something first so a server
	// that is down is reported as such, not as a failed setting.
	if err := e.bounded(ctx, "connect", func(ctx context.Context) error {
		_, err := s.Config().IsModifiable(ctx, "spark.sql.session.timeZone")
		return err
	}); err != nil {
		return nil, wrap(shown, "connect", redact.Error(err, remote))
	}
	for _, kv := range defaults {
		if _, ok := settings[kv[0]]; !ok {
			if err := e.set(ctx, kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == speculation {
			// checkSpeculation reads the server's value: a set would fail
			// on a value spelt otherwise than the server's (FALSE).
			continue
		}
		if err := e.set(ctx, k, settings[k]); err != nil {
			// The server answered with an exception (a value Spark does not
			// take): the config is wrong, as for a DuckDB setting, and a
			// retry would meet it again. A transport failure stays exit 1.
			if se := sparkError(err); se != nil && se.Reason != "" {
				err = &SettingError{Key: k, Err: exitcode.UsageError(err)}
			}
			// A transport failure, or a server that stopped answering,
			// says nothing of the value: not named by its config line.
			return nil, err
		}
	}
	for _, kv := range forced {
		if err := e.set(ctx, kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := e.checkSpeculation(ctx); err != nil {
		return nil, err
	}
	if err := e.findUnknown(ctx, keys); err != nil {
		return nil, err
	}
	return e, nil
}

// RequestTimeout bounds one small request to the server (a setting, a
// schema), which answers in milliseconds: a server that accepts and never
// answers must fail the command (exit 1), not hold it. A schema request
// once went unanswered for 16 minutes on an overloaded machine with its
// executors live, which the executor watch does not catch. Statements are
// watched by their progress instead.
var RequestTimeout = 2 * time.Minute

// bounded runs one small request under RequestTimeout, counted in
// ServerTime; past it the error says the server did not answer.
func (e *Engine) bounded(ctx context.Context, step string, op func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	err := e.onServer(func() error { return op(rctx) })
	if err != nil && ctx.Err() == nil && (errors.Is(rctx.Err(), context.DeadlineExceeded) || deadlineOnWire(err)) {
		return &silentError{fmt.Sprintf("spark %s: %s: the Spark Connect server did not answer in %s (stuck or overloaded; a retry with a new job id is safe)", e.remote, step, RequestTimeout)}
	}
	return err
}

// deadlineOnWire: the call ended with DEADLINE_EXCEEDED from the other end.
// gRPC sends the deadline along, and the server (or a proxy) may end the
// call on it a moment before the client's own timer fires: rctx is then
// not done yet (seen once in a rehearsal, as RST_STREAM CANCEL).
func deadlineOnWire(err error) bool {
	se := sparkError(err)
	return se != nil && se.Code == codes.DeadlineExceeded
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "spark" }

// VerifiesPageChecksums implements engine.ChecksumVerifier: the session
// forces parquet.page.verify-checksum.enabled.
func (e *Engine) VerifiesPageChecksums() bool { return true }

// UnreadableParquet implements engine.ParquetLimited: the pyspark
// distribution has no Brotli codec (Hadoop's BrotliCodec is not on its
// classpath), and its reader fails BYTE_STREAM_SPLIT timestamps; it failed
// both as "not a readable Parquet file" (FAILED_READ_FILE.NO_HINT).
func (e *Engine) UnreadableParquet() map[string]string {
	return map[string]string{
		"BROTLI":                  "the spark engine cannot read it (Spark ships no Brotli codec); publish with --engine duckdb, or have the producer write snappy or zstd",
		"BYTE_STREAM_SPLIT INT64": "the spark engine cannot read it, nor can duckdb; have the producer write the column without it (pyarrow: use_byte_stream_split=False)",
	}
}

// Remote is the sc:// URL the engine talks to.
func (e *Engine) Remote() string { return e.remote }

// Close ends the session. Temporary views die with it; the server stays up.
func (e *Engine) Close() error { return e.session.Stop() }

// exec runs one statement for its side effect.
func (e *Engine) exec(ctx context.Context, what, q string) error {
	_, err := e.rows(ctx, what, q)
	return err
}

// rows runs a query and returns its rows, watching the cluster's
// executors while it runs (watch).
func (e *Engine) rows(ctx context.Context, what, q string) ([]types.Row, error) {
	var rows []types.Row
	e.step(what)
	err := e.watch(ctx, func(ctx context.Context) error {
		return e.onServer(func() error {
			// Sql runs commands eagerly; a query is only planned until collected.
			df, err := e.session.Sql(ctx, q)
			if err != nil {
				return err
			}
			rows, err = df.Collect(ctx)
			return err
		})
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			se.Step = what
			return nil, se
		}
		return nil, wrap(e.remote, what, err)
	}
	return rows, nil
}

var (
	rawStrings        = []string{"event_id", "learner_key", "lesson_id", "course_id"}
	manifestStrings   = []string{"manifest_id", "lesson_id", "course_id", "lesson_title"}
	enrollmentStrings = []string{"learner_key", "course_id", "snapshot_id"}
)

// sparkError finds Spark's own error inside a spark-connect-go error. Some
// calls (the config RPCs) return the gRPC status without converting it.
func sparkError(err error) *sparkerrors.SparkError {
	var se *sparkerrors.SparkError
	if asSpark(err, &se) {
		return se
	}
	if _, ok := status.FromError(err); ok {
		return sparkerrors.FromRPCError(err)
	}
	return nil
}

// Query runs one SQL statement and returns its rows (the views tests run
// the statements `engagement views --dialect spark` prints).
func (e *Engine) Query(ctx context.Context, q string) ([]types.Row, error) {
	return e.rows(ctx, "query", q)
}
