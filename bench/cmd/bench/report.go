package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/progress"
)

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

func report(w io.Writer, f runFlags, sizes []int, all []measurement, genTime, total time.Duration) {
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "\n## engagement benchmark, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "machine: %s, %d cores, %s; load average at the end: %s\n", host, runtime.NumCPU(), memTotal(), strings.TrimSpace(string(load)))
	fmt.Fprintf(w, "settings: duckdb threads=%d, memory_limit=%s (low-memory publish: %s), seed %d\n\n", f.threads, f.memoryLimit, f.lowMemoryLimit, f.seed)
	fmt.Fprintln(w, "| events | measurement | memory_limit | wall s | CPU s | events/s | peak RSS | inspect s | stage s (read+transform+stage) | gate s | pointer s | check |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, m := range all {
		ph := func(k string) string {
			if m.phases == nil {
				return ""
			}
			return fmt.Sprintf("%.2f", m.phases[k])
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %s |\n", progress.Count(int64(m.events)), m.name, m.limit,
			m.wall.Seconds(), m.cpu.Seconds(), progress.Count(int64(float64(m.events)/m.wall.Seconds())), gib(m.rssBytes),
			ph("inspect"), ph("stage"), ph("gate"), ph("pointer"), m.verified)
	}
	find := func(n int, name, limit string) *measurement {
		for i := range all {
			if all[i].events == n && all[i].name == name && all[i].limit == limit {
				return &all[i]
			}
		}
		return nil
	}
	fmt.Fprintln(w, "\n| events | publish / aggregate floor (wall) | publish / baseline (wall) | publish / scan floor (wall) | same three, CPU time | target |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---|---|")
	for _, n := range sizes {
		p, a, b, s := find(n, "publish", f.memoryLimit), find(n, "aggregate floor", f.memoryLimit), find(n, "naive baseline", f.memoryLimit), find(n, "scan floor", f.memoryLimit)
		if p == nil || a == nil || b == nil || s == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f / %.2f / %.2f | <= 2 of the aggregate floor |\n", progress.Count(int64(n)),
			p.wall.Seconds()/a.wall.Seconds(), p.wall.Seconds()/b.wall.Seconds(), p.wall.Seconds()/s.wall.Seconds(),
			p.cpu.Seconds()/a.cpu.Seconds(), p.cpu.Seconds()/b.cpu.Seconds(), p.cpu.Seconds()/s.cpu.Seconds())
	}
	if f.s3 != "" {
		fmt.Fprintln(w, "\n| events | pairs | S3 / local wall (median, min–max) | S3 / local CPU (median) | peak RSS S3 − local (median, max) | target |")
		fmt.Fprintln(w, "|---:|---:|---|---:|---|---|")
		for _, n := range sizes {
			var wall, cpu, rss []float64
			for _, m := range all {
				if s3 := find(n, m.name+" (S3)", m.limit); m.events == n && s3 != nil {
					wall = append(wall, s3.wall.Seconds()/m.wall.Seconds())
					cpu = append(cpu, s3.cpu.Seconds()/m.cpu.Seconds())
					rss = append(rss, float64(s3.rssBytes-m.rssBytes)/(1<<30))
				}
			}
			if len(wall) == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s | %d | %.2f (%.2f–%.2f) | %.2f | %+.2f GiB, %+.2f GiB | <= 1.5, <= +0.5 GiB |\n", progress.Count(int64(n)), len(wall),
				median(wall), slices.Min(wall), slices.Max(wall), median(cpu), median(rss), slices.Max(rss))
		}
	}
	if f.spark != "" {
		sparkReport(w, sizes, all)
	}
	if f.sparkLocal != "" && f.py.on {
		fmt.Fprintln(w, "\n| events | Spark engine local[2] wall s (first, again) | seed PySpark design wall s | engine / design (wall: first, again) | Spark server peak RSS (since it started) | target |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---|---|")
		for _, n := range sizes {
			e, a, d := find(n, sparkLocalName, f.memoryLimit), find(n, sparkLocalAgain, f.memoryLimit), find(n, pysparkName, "driver "+f.py.driverMemory)
			if e == nil || a == nil || d == nil {
				continue
			}
			fmt.Fprintf(w, "| %s | %.2f, %.2f | %.2f | %.2f, %.2f | %s | <= 0.7 |\n", progress.Count(int64(n)), e.wall.Seconds(), a.wall.Seconds(), d.wall.Seconds(),
				e.wall.Seconds()/d.wall.Seconds(), a.wall.Seconds()/d.wall.Seconds(), gib(a.clusterRSS["driver"]))
		}
	}
	if len(sizes) > 1 {
		lo, hi := find(sizes[0], "publish", f.memoryLimit), find(sizes[len(sizes)-1], "publish", f.memoryLimit)
		if lo != nil && hi != nil {
			fmt.Fprintf(w, "\npublish time grows %.2fx from %s to %s events (%.0fx the events; target <= 11x)\n",
				hi.wall.Seconds()/lo.wall.Seconds(), progress.Count(int64(sizes[0])), progress.Count(int64(sizes[len(sizes)-1])),
				float64(sizes[len(sizes)-1])/float64(sizes[0]))
		}
	}
	for _, m := range all {
		if m.events == sizes[len(sizes)-1] && len(m.steps) > 0 {
			fmt.Fprintf(w, "\nprofile of %s, %s events, memory_limit %s (the job's step records):\n", m.name, progress.Count(int64(m.events)), m.limit)
			for _, s := range m.steps {
				fmt.Fprintf(w, "  %s\n", s)
			}
		}
	}
	fmt.Fprintf(w, "\ngeneration %.1fs (0 when the cached day was reused), benchmark total %.1fs\n", genTime.Seconds(), total.Seconds())
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			fs := strings.Fields(l)
			if len(fs) >= 2 {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				return gib(kb*1024) + " RAM"
			}
		}
	}
	return "memory unknown"
}

// sparkReport sets each Spark publish on S3 against the DuckDB publish on S3
// just before it, and splits its wall time into the time spent waiting on
// the Spark Connect server and the rest: process start, listing, the
// pointer and the gate's own work, all on the machine that runs engagement.
func sparkReport(w io.Writer, sizes []int, all []measurement) {
	fmt.Fprintln(w, "\n| events | pair | DuckDB on S3 wall s | Spark on S3 wall s | Spark / DuckDB | Spark: waiting on the server s | outside Spark s | outside share | engagement peak RSS (Spark) | Spark driver, executor peak RSS |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range sizes {
		pair := 0
		for i, m := range all {
			if m.events != n || !strings.HasSuffix(m.name, "(Spark, S3)") || i == 0 {
				continue
			}
			d := all[i-1] // the DuckDB publish on S3 of the same day
			pair++
			out := m.wall.Seconds() - m.serverTotal
			fmt.Fprintf(w, "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f%% | %s | %s, %s |\n", progress.Count(int64(n)), pair,
				d.wall.Seconds(), m.wall.Seconds(), m.wall.Seconds()/d.wall.Seconds(), m.serverTotal, out, 100*out/m.wall.Seconds(),
				gib(m.rssBytes), gib(m.clusterRSS["driver"]), gib(m.clusterRSS["executor"]))
		}
	}
	for _, m := range all {
		if !strings.HasSuffix(m.name, "(Spark, S3)") {
			continue
		}
		fmt.Fprintf(w, "\nphases of %s, %s events (wall from the phase records; on the server from the engine's count):\n\n", m.name, progress.Count(int64(m.events)))
		fmt.Fprintln(w, "| phase | wall s | waiting on the Spark server s | outside Spark s |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		var inPhases float64
		for _, p := range []string{"prepare", "inspect", "stage", "gate", "pointer"} {
			inPhases += m.phases[p]
			fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f |\n", p, m.phases[p], m.server[p], m.phases[p]-m.server[p])
		}
		fmt.Fprintf(w, "| before and after the phases (process, session, settings, exit) | %.2f | | |\n", m.wall.Seconds()-inPhases)
	}
}
