package duckdb_test

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestBatchedWriteKeepsAConfigsOpenFiles: the batched write raises
// partitioned_write_max_open_files to its batch's part count, but never
// below a config's larger value.
func TestBatchedWriteKeepsAConfigsOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		config, want string
	}{{"", "100"}, {"500", "500"}} {
		settings := map[string]string{"threads": "2"}
		if tc.config != "" {
			settings["partitioned_write_max_open_files"] = tc.config
		}
		e, err := duckdb.Open(context.Background(), settings)
		if err != nil {
			t.Fatal(err)
		}
		duckdb.AlwaysBatch(e)
		h := publishtest.Harness{Engine: "duckdb", Open: func(*testing.T) engine.Engine { return keptOpen{e} }}
		fx := h.LoadFixture(t, "")
		h.MustPublish(t, fx.Job(t, h.NewWarehouse(t), "open-files", "2026-03-02", "2026-03-03"))
		if got, err := duckdb.Setting(e, "partitioned_write_max_open_files"); err != nil || got != tc.want {
			t.Errorf("config %q: partitioned_write_max_open_files %q (%v), want %s", tc.config, got, err, tc.want)
		}
		e.Close()
	}
}

// keptOpen is an engine the publish does not close, so the test can ask it
// for its settings after.
type keptOpen struct{ *duckdb.Engine }

func (keptOpen) Close() error { return nil }
