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

func TestPublishSuite(t *testing.T) { publishtest.Run(t, harness()) }
