// Package publishtest is the one publish test suite every engine runs: the
// capstone's test table (unknown lesson, cap, two job ids, crash before the
// pointer, neighbour date, late event, duplicate enrollment, identities, no
// helper column) plus the gate variants, the published-job-id refusal and the
// appending publisher kept as a negative test. Expected numbers come from the
// generator's expected.json, never from the job's own output.
package publishtest

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the tests read Parquet back with DuckDB, whatever engine wrote it

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// Harness is how the suite reaches one engine.
type Harness struct {
	// Engine is the --engine value for the real-process tests.
	Engine string
	// Open starts an engine for one in-process publish.
	Open func(t *testing.T) engine.Engine
	// Args are extra CLI flags for the real-process tests (e.g. --spark-remote).
	Args []string
	// Backend is where warehouses and inputs live (the zero value: local disk).
	Backend Backend
	// NoLocalCopy, on S3, deletes every fixture's local copy once it is
	// uploaded: an engine on a cluster must read the bucket alone, and a
	// path only the test's process can see fails the test.
	NoLocalCopy bool
	// LogTo receives the in-process publishes' log records (JSON lines);
	// nil discards them.
	LogTo io.Writer
}

// Root is the module root, found from this source file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Fixture is a committed input set and its expected figures.
type Fixture struct {
	Dir string // the local copy
	// Root is where the job reads the inputs when they are not Dir (an
	// s3:// prefix holding an uploaded copy).
	Root     string
	Expected gen.Expected
}

// In is where the job reads the inputs: Root, or Dir.
func (f Fixture) In() string {
	if f.Root != "" {
		return f.Root
	}
	return f.Dir
}

// Input names rel (slash-separated) under the inputs the job reads.
func (f Fixture) Input(rel string) string {
	if f.Root != "" {
		return f.Root + "/" + rel
	}
	return filepath.Join(f.Dir, filepath.FromSlash(rel))
}

// LoadFixture copies testdata/fixture (name "") or testdata/variants/<name>
// into a temp dir, so no test can touch the committed bytes.
func LoadFixture(t *testing.T, name string) Fixture {
	t.Helper()
	src := filepath.Join(Root(), "testdata", "fixture")
	if name != "" {
		src = filepath.Join(Root(), "testdata", "variants", name)
	}
	dst := filepath.Join(t.TempDir(), "inputs")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy fixture %s: %v", src, err)
	}
	exp, err := gen.ReadExpected(filepath.Join(dst, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	return Fixture{Dir: dst, Expected: exp}
}

// Job resolves config/fixture.conf with the fixture's inputs and a warehouse.
func (f Fixture) Job(t *testing.T, warehouse, jobID string, ds ...string) config.Job {
	t.Helper()
	props, err := config.ReadFile(filepath.Join(Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := config.Resolve(props, []config.Override{
		{Key: config.KeyRaw, Value: f.Input("raw")},
		{Key: config.KeyLessons, Value: f.Input("lessons")},
		{Key: config.KeyEnrollments, Value: f.Input("enrollments")},
		{Key: config.KeyWarehouse, Value: warehouse},
	})
	if err != nil {
		t.Fatal(err)
	}
	j.JobID = jobID
	for _, d := range ds {
		j.Dates = append(j.Dates, dates.MustParse(d))
	}
	sort.Slice(j.Dates, func(a, b int) bool { return j.Dates[a] < j.Dates[b] })
	return j
}

// Args are the CLI flags for the same job.
func (f Fixture) Args(warehouse, jobID string, ds ...string) []string {
	return []string{"publish", "--config", filepath.Join(Root(), "config", "fixture.conf"),
		"--raw", f.Input("raw"), "--lessons", f.Input("lessons"),
		"--enrollments", f.Input("enrollments"), "--warehouse", warehouse,
		"--job-id", jobID, "--dates", strings.Join(ds, ",")}
}

// WithFlag is args with flag's value set to value: in place when args has
// the flag (the command refuses a flag given twice), else at the end.
func WithFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, flag); i >= 0 && i+1 < len(out) {
		out[i+1] = value
		return out
	}
	return append(out, flag, value)
}

// Listed is the engine's view of j with its inputs listed, as publish and
// explain hand it to an engine.
func Listed(t *testing.T, j config.Job) engine.Spec {
	t.Helper()
	spec, err := job.ListedSpec(context.Background(), Source(), j, dates.FromTime(Now))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// Inspected is spec after e's Inspect, with the input counts Stage needs,
// as the job hands them on: a test that stages by itself inspects first.
func Inspected(t *testing.T, e engine.Engine, spec engine.Spec) engine.Spec {
	t.Helper()
	in, err := e.Inspect(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.InputEvents = in.Events
	return spec
}

// Source reads inputs as publish does.
func Source() *inputs.Source { return inputs.NewSource(open.Input) }

// WithInputs fills spec.Inputs by listing spec's raw read window and pins.
func WithInputs(t *testing.T, spec engine.Spec) engine.Spec {
	t.Helper()
	loc := func(p string) storage.Location {
		l, err := storage.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l, err := Source().List(context.Background(), inputs.Request{Raw: loc(spec.Raw), Lessons: loc(spec.Lessons), Enrollments: loc(spec.Enrollments), From: spec.IngestFrom, To: spec.IngestTo})
	if err != nil {
		t.Fatal(err)
	}
	spec.Inputs = l
	return spec
}

// Warehouse is the bucket of a warehouse (a directory or an s3:// URL) and
// the pointer on it, as publish opens them.
func Warehouse(where string) (storage.Bucket, *objstore.Store) {
	loc, err := storage.Parse(where)
	if err != nil {
		panic(err)
	}
	b, err := open.Warehouse(context.Background(), loc, open.Options{})
	if err != nil {
		panic(err)
	}
	return b, objstore.New(b)
}

// Publish runs one attempt in-process.
func (h Harness) Publish(t *testing.T, j config.Job) (job.Result, error) {
	t.Helper()
	return h.PublishWith(t, j, nil)
}

// Now is the clock of every in-process publish: the run date of
// config/fixture.conf, 06:00 UTC.
var Now = time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)

// PublishWith runs one attempt with the engine wrapped by wrap (for fault injection).
func (h Harness) PublishWith(t *testing.T, j config.Job, wrap func(engine.Engine) engine.Engine) (job.Result, error) {
	t.Helper()
	eng := h.Open(t)
	defer eng.Close()
	if wrap != nil {
		eng = wrap(eng)
	}
	wh, store := Warehouse(j.Warehouse)
	p := &job.Publisher{
		Engine:    eng,
		Warehouse: wh,
		Store:     store,
		Inputs:    Source(),
		Log:       slog.New(slog.NewJSONHandler(cmp.Or(h.LogTo, io.Discard), nil)),
		Clock:     func() time.Time { return Now },
	}
	return p.Publish(context.Background(), j)
}

// MustPublish fails the test unless the attempt publishes.
func (h Harness) MustPublish(t *testing.T, j config.Job) job.Result {
	t.Helper()
	res, err := h.Publish(t, j)
	if err != nil {
		t.Fatalf("publish %s: %v", j.JobID, err)
	}
	return res
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
	mainRan   bool
)

// Main runs a package's tests and then removes the binary Binary built: each
// test process builds its own 100 MB copy, and without this every run of the
// suite left one per package in the temp directory.
func Main(m *testing.M) int {
	mainRan = true
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	return code
}

// Binary builds cmd/engagement once per test process. The package's TestMain
// must call Main, which removes it afterwards.
func Binary(t *testing.T) string {
	t.Helper()
	if !mainRan {
		t.Fatal("publishtest.Binary: this package needs func TestMain(m *testing.M) { os.Exit(publishtest.Main(m)) }, which removes the built binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "engagement-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "engagement")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/engagement")
		cmd.Dir = Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("build engagement: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (b *buildError) Error() string { return b.err.Error() + ": " + b.out }

// Run runs the real binary; it returns the exit code (-1 when killed by a
// signal), stdout and stderr.
func (h Harness) Run(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return h.RunIn(t, "", env, args...)
}

// RunIn is Run in the working directory dir ("": the test's own).
func (h Harness) RunIn(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	args = append(args, h.Args...)
	if h.Engine != "" && len(args) > 0 && args[0] == "publish" {
		args = append(args, "--engine", h.Engine)
	}
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run engagement: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// LoadPointer reads the pointer the way readers do.
func LoadPointer(t *testing.T, warehouse string) pointer.Pointer {
	t.Helper()
	_, store := Warehouse(warehouse)
	p, _, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	CheckSchema(t, warehouse)
	return p
}

// FileBytes returns a file's bytes, nil when absent.
func FileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TreeHash hashes every file under the local dir (names and bytes): Hash
// of the whole directory.
func TreeHash(t *testing.T, dir string) string {
	t.Helper()
	return Hash(t, dir, "")
}

// EmptyPartition lands raw/ingest_date=<d>/part-0.parquet in the inputs the
// job reads: a Parquet file of the raw columns and no rows, as ingestion
// writes a day without events.
func EmptyPartition(t *testing.T, fx Fixture, d string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "empty.parquet")
	src := filepath.Join(Root(), "testdata", "fixture", "raw", "ingest_date=2026-03-02", "part-0.parquet")
	if _, err := DB(t).Exec(fmt.Sprintf(`COPY (SELECT * FROM read_parquet('%s') LIMIT 0) TO '%s' (FORMAT parquet)`, src, tmp)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := storage.Parse(fx.In())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Bucket(t, fx.In()).Put(context.Background(), "raw/ingest_date="+d+"/part-0.parquet", data, storage.Cond{}); err != nil {
		t.Fatalf("land an empty partition under %s: %v", loc, err)
	}
}

// DB is a DuckDB connection for reading Parquet back in assertions.
func DB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // session settings live on the one connection
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// DamagePages overwrites bytes of the Parquet file at path's pages, not its
// footer: its size and metadata stay, and a read of its values fails.
func DamagePages(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 200 && i < len(b)/2; i++ {
		b[i] = 0xFF
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
