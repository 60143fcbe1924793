// Command bench measures the DuckDB engine on the design shape, and with
// --s3 and --spark the same publishes on S3 and on the Spark engine. It is
// driven by bench/run.sh; see docs/benchmark.md.
//
//	bench run      --bin B --cache DIR --events 6000000,60000000 ...   the whole benchmark
//	bench run      --bin B --events "" --backfill 10:30000000         only the backfill (backfill.go)
//	bench scan     --data DIR --threads 2 --memory-limit 6GB ...      (a) the scan floor
//	bench aggregate --data DIR --out DIR ...                           (b) the aggregate floor: one read, the fact grain, one partitioned write
//	bench baseline --data DIR --out DIR --threads 2 --memory-limit 6GB  (c) the naive two-COPY job
//	bench sql      --threads 2 --memory-limit 6GB 'STATEMENT' ...     time any statements (profiling)
//
// run starts every measurement as its own process and reads the child's peak
// RSS from the kernel's rusage, so each figure is one process's high-water
// mark.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench run|scan|aggregate|baseline [flags]")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "run":
		err = runAll(ctx, os.Args[2:])
	case "scan":
		err = runQuery(ctx, "scan", os.Args[2:])
	case "baseline", "aggregate":
		err = runQuery(ctx, os.Args[1], os.Args[2:])
	case "sql":
		err = runQuery(ctx, "sql", os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want run, scan, aggregate or baseline)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
