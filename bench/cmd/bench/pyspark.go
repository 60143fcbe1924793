package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/progress"
)

// pysparkName is the measurement's name in the report.
const pysparkName = "seed PySpark design (local[2])"

// pysparkFlags run the reference PySpark design (bench/pyspark_design.py)
// beside the publishes: the yardstick the Spark engine is held to.
type pysparkFlags struct {
	on                   bool
	sparkHome, script    string
	driverMemory, joined string
}

func (p *pysparkFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&p.on, "pyspark", false, "also run the seed's PySpark design on each day, with spark-submit on local[2] (SPARK_HOME, PYTHONPATH and JAVA_HOME as `scripts/spark.sh pyspark` prints them)")
	fs.StringVar(&p.sparkHome, "spark-home", os.Getenv("SPARK_HOME"), "the Spark distribution whose bin/spark-submit runs the design")
	fs.StringVar(&p.script, "pyspark-script", "bench/pyspark_design.py", "the design job")
	fs.StringVar(&p.driverMemory, "pyspark-driver-memory", "8g", "spark-submit --driver-memory (local mode: the driver is the executor)")
	fs.StringVar(&p.joined, "pyspark-joined", "persist", "the design's --joined: persist the joined events for the two writes, or recompute them")
}

// pysparkDesign runs the design on the day in data as its own process tree
// (spark-submit's JVM and the Python driver it starts), then checks both
// tables' figures against expected.json.
func pysparkDesign(ctx context.Context, f runFlags, data string, exp gen.Expected, n int) (measurement, error) {
	m := measurement{name: pysparkName, events: n, limit: "driver " + f.py.driverMemory}
	if f.py.sparkHome == "" {
		return m, fmt.Errorf("--pyspark: no --spark-home (eval \"$(bash scripts/spark.sh pyspark)\" sets SPARK_HOME)")
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	work := abs(filepath.Join(f.cache, "tmp", fmt.Sprintf("pyspark-%d", n)))
	out := abs(filepath.Join(f.cache, fmt.Sprintf("pyspark-%d", n)))
	logPath := abs(filepath.Join(f.cache, fmt.Sprintf("pyspark-%d.log", n)))
	for _, d := range []string{work, out} {
		if err := os.RemoveAll(d); err != nil {
			return m, err
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return m, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return m, err
	}
	defer logFile.Close()
	fmt.Fprintf(os.Stderr, "bench: %s, %s events, driver memory %s (Spark's log: %s)\n", pysparkName, progress.Count(int64(n)), f.py.driverMemory, logPath)
	// Run from a scratch directory, so spark-warehouse and the like land
	// there; event dates are UTC in the JVM as in the session.
	cmd := exec.CommandContext(ctx, filepath.Join(f.py.sparkHome, "bin", "spark-submit"),
		"--master", "local[2]", "--driver-memory", f.py.driverMemory,
		"--conf", "spark.local.dir="+filepath.Join(work, "local"),
		"--conf", "spark.sql.warehouse.dir="+filepath.Join(work, "warehouse"),
		"--conf", "spark.driver.extraJavaOptions=-Duser.timezone=UTC",
		abs(f.py.script), "--data", abs(data), "--out", out, "--master", "local[2]", "--joined", f.py.joined)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PYSPARK_PYTHON=python3", "PYSPARK_DRIVER_PYTHON=python3")
	// Its own process group, so the sampler finds the JVM and the Python
	// driver it forks, and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// spark-submit merges the Python driver's stderr into its stdout.
	cmd.Stdout = io.MultiWriter(logFile, &prefixLines{w: os.Stderr, prefix: "pyspark_design:"})
	cmd.Stderr = io.MultiWriter(logFile, &prefixLines{w: os.Stderr, prefix: "pyspark_design:"})
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, fmt.Errorf("%s: %w", pysparkName, err)
	}
	peak := sampleGroupRSS(cmd.Process.Pid)
	err = cmd.Wait()
	m.wall = time.Since(start)
	tree := peak()
	m.rssBytes = tree
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// rusage's peak is the largest single process (the JVM, the
			// Python driver being its waited-for child); the sampled sum
			// of the group is the tree's, and the larger is reported.
			m.rssBytes = max(maxrssBytes(ru.Maxrss), tree)
			m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s (%d events): %w; the end of its log %s:\n%s", pysparkName, n, err, logPath, tail(logPath, 30))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return m, err
	}
	defer db.Close()
	table := func(name string) string { return filepath.Join(out, name) }
	cd := fmt.Sprintf("SELECT * FROM read_parquet('%s', hive_partitioning = true)", filepath.Join(table("course_day"), "*", "*.parquet"))
	err = checkFigures(ctx, db, exp, cd, func(d dates.Date) (string, error) {
		return fmt.Sprintf("SELECT event_count FROM read_parquet('%s')", filepath.Join(table("fact_lesson_engagement"), "event_date="+d.String(), "*.parquet")), nil
	})
	if err != nil {
		return m, fmt.Errorf("%s wrote wrong figures (output %s): %w", pysparkName, out, err)
	}
	m.verified = "figures = expected.json"
	return m, errors.Join(os.RemoveAll(out), os.RemoveAll(work))
}

// sampleGroupRSS samples, every 100 ms until the returned function is
// called, the summed RSS of the processes in process group pgid, and
// returns the largest sum seen.
func sampleGroupRSS(pgid int) func() int64 {
	var (
		mu   sync.Mutex
		peak int64
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			s := groupRSS(pgid)
			mu.Lock()
			peak = max(peak, s)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// groupRSS sums the resident pages of every process whose process group is
// pgid, from /proc/<pid>/stat (field 5 the group, field 24 the RSS pages).
func groupRSS(pgid int) int64 {
	procs, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pgid)
	var sum int64
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces: split after its ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(string(b[i+1:])) // fs[0] is field 3
		if len(fs) < 22 || fs[2] != want {
			continue
		}
		pages, _ := strconv.ParseInt(fs[21], 10, 64)
		sum += pages * int64(os.Getpagesize())
	}
	return sum
}

// prefixLines passes through only the lines that start with prefix.
type prefixLines struct {
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixLines) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if line := p.partial[:i+1]; bytes.HasPrefix(line, []byte(p.prefix)) {
			if _, err := p.w.Write(line); err != nil {
				return 0, err
			}
		}
		p.partial = p.partial[i+1:]
	}
}

// tail is the last n lines of a log, for an error message.
func tail(path string, n int) string {
	fh, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
