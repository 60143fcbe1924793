package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/reader"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

type runFlags struct {
	bin, cache, events, memoryLimit, lowMemoryLimit, s3 string
	spark, sparkRun, sparkLocal                         string
	seed                                                uint64
	threads, repeat                                     int
	py                                                  pysparkFlags

	// The backfill (backfill.go); publishArgs are added to every
	// publish's command line.
	backfill, backfillMemoryLimit string
	publishArgs                   []string
}

// measurement is one process: its wall time, peak RSS and, for a publish,
// the phase times it logged.
type measurement struct {
	name, limit string
	events      int
	wall, cpu   time.Duration
	rssBytes    int64
	phases      map[string]float64
	steps       []string // "step: seconds" of the stage, in order
	verified    string
	// server is each phase's time waiting on the Spark Connect server and
	// serverTotal all of it, Open's settings included (Spark publishes).
	server      map[string]float64
	serverTotal float64
	// clusterRSS is the Spark driver's and executors' peak RSS (VmHWM)
	// after a Spark publish, by process.
	clusterRSS map[string]int64

	// estimates are the stage's time-left estimates set against the time
	// it then took (backfill.go).
	estimates []string
}

func runAll(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	fs.StringVar(&f.bin, "bin", "", "engagement binary (built once by bench/run.sh)")
	fs.StringVar(&f.cache, "cache", ".cache/bench", "where generated days and warehouses live")
	fs.StringVar(&f.events, "events", "6000000,60000000", "day sizes to measure, comma-separated, smallest first (empty: none, e.g. with --backfill)")
	fs.Uint64Var(&f.seed, "seed", 7, "generator seed")
	fs.IntVar(&f.threads, "threads", 2, "duckdb.threads for every measurement")
	fs.StringVar(&f.memoryLimit, "memory-limit", "6GB", "duckdb.memory_limit for every measurement")
	fs.StringVar(&f.lowMemoryLimit, "low-memory-limit", "2GB", "a second publish of the largest day at this limit, which must spill and give the same figures (empty: skip)")
	fs.IntVar(&f.repeat, "repeat", 2, "publishes of the largest day at --memory-limit (the first is the one compared)")
	fs.StringVar(&f.s3, "s3", "", "an s3://bucket/prefix: each day's inputs are uploaded there once, and each local publish is followed by the same publish with inputs and warehouse on S3 (the server of AWS_ENDPOINT_URL)")
	fs.StringVar(&f.spark, "spark", "", "a Spark Connect URL (sc://...): with --s3, each S3 publish is followed by the same publish on the Spark engine, inputs and warehouse on S3")
	fs.StringVar(&f.sparkLocal, "spark-local", "", "a Spark Connect URL (sc://...) of a server running local[2] (scripts/spark.sh with ENGAGEMENT_SPARK_MASTER=local[2]): each day is also published on the Spark engine, inputs and warehouse on local disk, before the PySpark design")
	fs.StringVar(&f.sparkRun, "spark-run", ".cache/spark/run", "scripts/spark.sh's run directory, whose pid files name the driver and the worker (for the cluster's peak RSS)")
	fs.StringVar(&f.backfill, "backfill", "", "DATES:EVENTS_PER_DATE, e.g. 10:30000000: after the days, a design day over that many dates published in one backfill and its first date alone (backfill.go)")
	fs.StringVar(&f.backfillMemoryLimit, "backfill-memory-limit", "4GB", "duckdb.memory_limit of both backfill publishes")
	f.py.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.bin == "" {
		return errors.New("run: --bin is required")
	}
	if f.spark != "" && f.s3 == "" {
		return errors.New("run: --spark needs --s3: the Spark engine is measured on S3, against DuckDB on S3")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var sizes []int
	for _, s := range strings.Split(f.events, ",") {
		if f.events == "" {
			break
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--events %q: %w", f.events, err)
		}
		sizes = append(sizes, n)
	}
	tmp := filepath.Join(f.cache, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	benchStart := time.Now()
	var genTime time.Duration
	var all []measurement
	for i, n := range sizes {
		data := filepath.Join(f.cache, fmt.Sprintf("design-%d-seed%d", n, f.seed))
		took, err := generate(ctx, f, data, n)
		if err != nil {
			return err
		}
		genTime += took
		exp, err := gen.ReadExpected(filepath.Join(data, gen.ExpectedFile))
		if err != nil {
			return err
		}
		query := func(kind string) []string {
			a := []string{kind, "--data", data, "--threads", strconv.Itoa(f.threads), "--memory-limit", f.memoryLimit, "--temp-directory", tmp}
			if kind == "baseline" || kind == "aggregate" {
				a = append(a, "--out", filepath.Join(f.cache, fmt.Sprintf("%s-%d", kind, n)))
			}
			return a
		}
		m, err := measure(ctx, "scan floor", n, f.memoryLimit, self, query("scan"))
		if err != nil {
			return err
		}
		all = append(all, m)
		if m, err = measure(ctx, "aggregate floor", n, f.memoryLimit, self, query("aggregate")); err != nil {
			return err
		}
		all = append(all, m)
		if m, err = measure(ctx, "naive baseline", n, f.memoryLimit, self, query("baseline")); err != nil {
			return err
		}
		all = append(all, m)
		runs := 1
		if i == len(sizes)-1 {
			runs = max(1, f.repeat)
		}
		for r := range runs {
			name := "publish"
			if r > 0 {
				name = fmt.Sprintf("publish (rerun %d)", r)
			}
			m, err := publish(ctx, f, data, exp, n, f.memoryLimit, name, fmt.Sprintf("%d-%d", n, r))
			if err != nil {
				return err
			}
			all = append(all, m)
			if f.s3 == "" {
				continue
			}
			in, err := upload(ctx, data, fmt.Sprintf("%s/design-%d-seed%d", f.s3, n, f.seed))
			if err != nil {
				return err
			}
			if m, err = publishAt(ctx, f, "duckdb", in, f.s3+"/warehouse-"+fmt.Sprintf("%d-%d", n, r), exp, n, f.memoryLimit, name+" (S3)", fmt.Sprintf("%d-%d-s3", n, r)); err != nil {
				return err
			}
			all = append(all, m)
			if f.spark == "" {
				continue
			}
			if m, err = publishAt(ctx, f, "spark", in, f.s3+"/warehouse-"+fmt.Sprintf("%d-%d-spark", n, r), exp, n, f.memoryLimit, name+" (Spark, S3)", fmt.Sprintf("%d-%d-spark", n, r)); err != nil {
				return err
			}
			m.clusterRSS = clusterRSS(f.sparkRun)
			all = append(all, m)
		}
		if i == len(sizes)-1 && f.lowMemoryLimit != "" {
			m, err := publish(ctx, f, data, exp, n, f.lowMemoryLimit, "publish", fmt.Sprintf("%d-low", n))
			if err != nil {
				return err
			}
			all = append(all, m)
		}
		if f.sparkLocal != "" {
			// The Spark engine on the same local[2] cores as the PySpark
			// design below, inputs and warehouse on local disk as there.
			// Twice: a Connect server is long-lived, so the second publish
			// (its JIT warm from the first) is what a production server's
			// publish costs; the first on the 6M day is the server's first
			// work since it started.
			g := f
			g.spark = f.sparkLocal
			abs, _ := filepath.Abs(data)
			for r, name := range []string{sparkLocalName, sparkLocalAgain} {
				m, err := publishAt(ctx, g, "spark", abs, filepath.Join(f.cache, fmt.Sprintf("warehouse-%d-spark-local", n)), exp, n, f.memoryLimit, name, fmt.Sprintf("%d-spark-local-%d", n, r))
				if err != nil {
					return err
				}
				m.clusterRSS = clusterRSS(f.sparkRun)
				all = append(all, m)
			}
		}
		if f.py.on {
			m, err := pysparkDesign(ctx, f, data, exp, n)
			if err != nil {
				return err
			}
			all = append(all, m)
		}
	}
	var backfill *backfillRun
	if f.backfill != "" {
		if backfill, err = runBackfill(ctx, f); err != nil {
			return err
		}
		genTime += backfill.gen
	}
	if len(sizes) > 0 {
		report(os.Stdout, f, sizes, all, genTime, time.Since(benchStart))
	}
	if backfill != nil {
		backfill.report(os.Stdout, time.Since(benchStart))
	}
	return nil
}

// generate makes the design day once; a tree without expected.json is the
// remains of an interrupted run and is made again. extra are more gen
// flags.
func generate(ctx context.Context, f runFlags, data string, n int, extra ...string) (time.Duration, error) {
	if _, err := os.Stat(filepath.Join(data, gen.ExpectedFile)); err == nil {
		fmt.Fprintf(os.Stderr, "bench: reusing %s\n", data)
		return 0, nil
	}
	if err := os.RemoveAll(data); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "bench: generating %d events into %s\n", n, data)
	start := time.Now()
	cmd := exec.CommandContext(ctx, f.bin, append([]string{"gen", "--shape", gen.ShapeDesign, "--events", strconv.Itoa(n),
		"--seed", strconv.FormatUint(f.seed, 10), "--out", data}, extra...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("generate %s: %w", data, err)
	}
	return time.Since(start), nil
}

// measure runs one process and reads its peak RSS from rusage; stderr is
// passed through (progress lines) and kept for the phase records.
func measure(ctx context.Context, name string, n int, limit, bin string, args []string) (measurement, error) {
	m := measurement{name: name, events: n, limit: limit}
	fmt.Fprintf(os.Stderr, "bench: %s, %s events, memory_limit %s\n", name, progress.Count(int64(n)), limit)
	cmd := exec.CommandContext(ctx, bin, args...)
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = io.MultiWriter(&plainLines{w: os.Stderr}, &errb)
	start := time.Now()
	err := cmd.Run()
	m.wall = time.Since(start)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.rssBytes = maxrssBytes(ru.Maxrss)
			m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s (%d events): %w", name, n, err)
	}
	m.phases, m.steps, m.server, m.serverTotal = phases(errb.Bytes())
	m.estimates = timeLeft(errb.Bytes())
	return m, nil
}

// plainLines passes a child's stderr through except its JSON log records,
// which are kept for the phase figures but would drown the progress lines.
type plainLines struct {
	w       io.Writer
	partial []byte
}

func (p *plainLines) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexAny(p.partial, "\n\r")
		if i < 0 {
			return len(b), nil
		}
		line := p.partial[:i+1]
		if !bytes.HasPrefix(line, []byte("{")) {
			if _, err := p.w.Write(line); err != nil {
				return 0, err
			}
		}
		p.partial = p.partial[i+1:]
	}
}

// maxrssBytes: Linux reports ru_maxrss in KiB, macOS in bytes.
func maxrssBytes(v int64) int64 {
	if runtime.GOOS == "darwin" {
		return v
	}
	return v * 1024
}

// phases reads the publish's structured "phase", "step" and "server time"
// records.
func phases(stderr []byte) (out map[string]float64, steps []string, server map[string]float64, serverTotal float64) {
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg          string  `json:"msg"`
			Phase        string  `json:"phase"`
			Step         string  `json:"step"`
			Seconds      float64 `json:"seconds"`
			TotalSeconds float64 `json:"total_seconds"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "server time" {
			if server == nil {
				server = map[string]float64{}
			}
			server[rec.Phase] += rec.Seconds
			serverTotal = max(serverTotal, rec.TotalSeconds)
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "step" {
			steps = append(steps, fmt.Sprintf("%s / %s: %.2fs", rec.Phase, rec.Step, rec.Seconds))
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "phase" {
			if out == nil {
				out = map[string]float64{}
			}
			out[rec.Phase] += rec.Seconds
		}
	}
	return out, steps, server, serverTotal
}

const confTemplate = `# written by bench run: the design day under production's job settings
engagement.engine                  %s
engagement.warehouse               %s
engagement.raw                     %s
engagement.lessons                 %s
engagement.enrollments             %s
engagement.manifestId              %s
engagement.enrollmentSnapshotId    %s
engagement.unknownCap              0.02
engagement.hotCourses              course-k8s
engagement.restatementHorizonDays  %d
engagement.latenessDays            2
engagement.targetFileBytes         192MB
engagement.freshnessMaxDays        1
engagement.asOfDate                %s
duckdb.threads                     %d
duckdb.memory_limit                %s
duckdb.temp_directory              %s
duckdb.preserve_insertion_order    false
%s`

// publish measures one publish of the day in data into a fresh local
// warehouse.
func publish(ctx context.Context, f runFlags, data string, exp gen.Expected, n int, limit, name, tag string) (measurement, error) {
	abs, _ := filepath.Abs(data)
	return publishAt(ctx, f, "duckdb", abs, filepath.Join(f.cache, "warehouse-"+tag), exp, n, limit, name, tag)
}

// publishAt measures one publish of the day whose inputs are under in (a
// directory or an s3:// prefix) into the fresh warehouse wh (either kind),
// checks its figures through the pointer, and removes the warehouse.
func publishAt(ctx context.Context, f runFlags, eng, in, wh string, exp gen.Expected, n int, limit, name, tag string) (measurement, error) {
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	whLoc, err := storage.Parse(wh)
	if err != nil {
		return measurement{}, err
	}
	if !whLoc.IsS3() {
		wh = abs(wh)
		whLoc.Path = wh
	}
	whBucket, err := open.Warehouse(ctx, whLoc, open.Options{})
	if err != nil {
		return measurement{}, err
	}
	// The warehouse is removed from its parent: a prefix is not a key.
	parent, err := open.Warehouse(ctx, whLoc.Dir(), open.Options{})
	if err != nil {
		return measurement{}, err
	}
	clear := func() error { return parent.DeletePrefix(ctx, whLoc.Base()+"/") }
	if err := clear(); err != nil && !storage.IsNotExist(err) {
		return measurement{}, err
	}
	conf := filepath.Join(f.cache, "publish-"+tag+".conf")
	sparkConf := ""
	if eng == "spark" {
		sparkConf = "engagement.sparkRemote             " + f.spark + "\n"
	}
	body := fmt.Sprintf(confTemplate, eng, wh, in+"/raw", in+"/lessons", in+"/enrollments", exp.ManifestID, exp.EnrollmentSnapshotID, exp.RestatementHorizonDays,
		exp.NewestIngestDate.AddDays(1), f.threads, limit, abs(filepath.Join(f.cache, "tmp")), sparkConf)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return measurement{}, err
	}
	m, err := measure(ctx, name, n, limit, f.bin, append([]string{"publish", "--config", conf, "--job-id", "bench-" + tag,
		"--dates", strings.Join(dates.Strings(exp.Dates), ",")}, f.publishArgs...))
	if err != nil {
		return m, err
	}
	if err := verify(ctx, whBucket, exp); err != nil {
		return m, fmt.Errorf("%s at memory_limit %s published wrong figures: %w", name, limit, err)
	}
	m.verified = "figures = expected.json"
	return m, clear()
}

// upload copies the day's inputs (and expected.json, written last, which
// marks a finished upload) to the s3:// prefix once; later runs reuse it.
func upload(ctx context.Context, data, to string) (string, error) {
	loc, err := storage.Parse(to)
	if err != nil {
		return "", err
	}
	b, err := open.Input(ctx, loc)
	if err != nil {
		return "", err
	}
	if _, err := b.Stat(ctx, gen.ExpectedFile); err == nil {
		fmt.Fprintf(os.Stderr, "bench: reusing %s\n", to)
		return to, nil
	}
	fmt.Fprintf(os.Stderr, "bench: uploading %s to %s\n", data, to)
	var files []string
	err = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != gen.ExpectedFile {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, p := range append(files, filepath.Join(data, gen.ExpectedFile)) {
		body, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(data, p)
		if _, err := b.Put(ctx, filepath.ToSlash(rel), body, storage.Cond{}); err != nil {
			return "", err
		}
	}
	return to, nil
}

// verify reads what readers see (the pointer, then exactly its files) and
// compares every course_day figure and the fact row count with the
// generator's expected.json.
func verify(ctx context.Context, wh storage.Bucket, exp gen.Expected) error {
	p, _, err := objstore.New(wh).Load(ctx)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the S3 secret lives on the one connection
	if wh.Location().IsS3() {
		if err := duckdb.EnableAWS(ctx, func(q string) error { _, err := db.ExecContext(ctx, q); return err }, ""); err != nil {
			return err
		}
	}
	cd, err := reader.Query(wh.Location(), p, engine.CourseDayTable, nil)
	if err != nil {
		return err
	}
	return checkFigures(ctx, db, exp, cd, func(d dates.Date) (string, error) {
		return reader.Query(wh.Location(), p, engine.FactTable, &d)
	})
}

// sparkLocalName and sparkLocalAgain are the Spark engine's two publishes
// of a day on a local[2] server.
const (
	sparkLocalName  = "publish (Spark, local[2])"
	sparkLocalAgain = "publish (Spark, local[2]) again"
)

// clusterRSS reads the peak RSS (VmHWM) of the Spark Connect server (the
// driver) and of the worker's executors, named by scripts/spark.sh's pid
// files. The figures are high-water marks since each JVM started: the
// driver's spans every publish since the cluster came up.
func clusterRSS(run string) map[string]int64 {
	out := map[string]int64{}
	pid := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(run, name))
		return strings.TrimSpace(string(b))
	}
	hwm := func(p string) int64 {
		b, err := os.ReadFile("/proc/" + p + "/status")
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
		return 0
	}
	out["driver"] = hwm(pid("server.pid"))
	if w := pid("worker.pid"); w != "" {
		// The executors are the worker's child processes.
		b, _ := exec.Command("pgrep", "-P", w).Output()
		for _, c := range strings.Fields(string(b)) {
			out["executor"] = max(out["executor"], hwm(c))
		}
	}
	return out
}
