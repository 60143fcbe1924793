package duckdb_test

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

func harness() publishtest.Harness {
	return publishtest.Harness{
		Engine: "duckdb",
		Open: func(t *testing.T) engine.Engine {
			e, err := duckdb.Open(context.Background(), map[string]string{"threads": "2"})
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
	}
}

// TestPublishSuite writes every date's titles as an ENUM, which the
// fixture's small dates never are otherwise, and so does the batched suite;
// the S3 suite keeps them VARCHAR.
func TestPublishSuite(t *testing.T) {
	h := harness()
	open := h.Open
	h.Open = func(t *testing.T) engine.Engine {
		e := open(t)
		duckdb.EnumTitlesFrom(e.(*duckdb.Engine), 1)
		return e
	}
	publishtest.Run(t, h)
}

// TestPublishSuiteBatched runs the suite, locally and on S3, the ways a day
// larger than memory takes, which the fixture's few rows never cause: the
// writes of a spilled temp table (a batch of dates per partitioned COPY) and
// the uniqueness checks by hash table.
func TestPublishSuiteBatched(t *testing.T) {
	for name, h := range map[string]publishtest.Harness{"local": harness(), "s3": s3Harness()} {
		t.Run(name, func(t *testing.T) { publishtest.Run(t, batched(h)) })
	}
}

func batched(h publishtest.Harness) publishtest.Harness {
	open := h.Open
	h.Open = func(t *testing.T) engine.Engine {
		e := open(t)
		duckdb.AlwaysBatch(e.(*duckdb.Engine))
		// Few open files and early flushes, as a design-size backfill's
		// batch of hundreds of parts meets them: DuckDB then closes a
		// part's file and opens another, unless the write keeps them open.
		for k, v := range map[string]string{"partitioned_write_max_open_files": "1", "partitioned_write_flush_threshold": "4"} {
			if err := duckdb.Set(e.(*duckdb.Engine), k, v); err != nil {
				t.Fatal(err)
			}
		}
		duckdb.CountRepeatsBy(e.(*duckdb.Engine), "hash")
		duckdb.EnumTitlesFrom(e.(*duckdb.Engine), 1)
		return e
	}
	return h
}

// TestPublishSuiteS3 runs the same suite with the warehouse and the inputs
// on the test S3 server: DuckDB reads the inputs and writes the staged
// files through httpfs, the pointer moves by conditional writes.
func TestPublishSuiteS3(t *testing.T) { publishtest.Run(t, s3Harness()) }

func s3Harness() publishtest.Harness {
	h := harness()
	h.Backend = publishtest.S3
	open := h.Open
	h.Open = func(t *testing.T) engine.Engine {
		e := open(t).(*duckdb.Engine)
		if err := e.EnableAWS(context.Background(), ""); err != nil {
			e.Close()
			t.Fatal(err)
		}
		return e
	}
	return h
}
