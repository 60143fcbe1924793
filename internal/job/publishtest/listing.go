package publishtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// aroundStage wraps an engine and changes the inputs on disk just before or
// just after Stage: after the attempt listed and inspected them, before it
// verifies them.
type aroundStage struct {
	engine.Engine
	before, after func()
}

func (e aroundStage) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, stagingDir string) (engine.Staged, error) {
	if e.before != nil {
		e.before()
	}
	st, err := e.Engine.Stage(ctx, spec, wh, stagingDir)
	if e.after != nil {
		e.after()
	}
	return st, err
}

// RedeliveryFile writes, at path, 100 events whose event_ids repeat those
// of the fixture's raw partition of ingest date tue: an at-least-once
// producer's redelivery, the file the listing race moves into raw.
func RedeliveryFile(t *testing.T, db *sql.DB, fx Fixture, path string) {
	t.Helper()
	src := filepath.Join(fx.Dir, "raw", "ingest_date="+tue, "part-0.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s', hive_partitioning=false) ORDER BY event_id LIMIT 100) TO '%s' (FORMAT parquet)", src, path)); err != nil {
		t.Fatal(err)
	}
}

// testInputsChangedDuringAttempt: a raw file added, rewritten or removed
// after the attempt listed its inputs fails the attempt (exit 1, naming the
// file, pointer untouched). The engine reads exactly the listed files, so
// the added redelivery, had it been read, would show in the staged sum.
func testInputsChangedDuringAttempt(t *testing.T, h Harness) {
	part := func(fx Fixture, day, name string) string {
		return filepath.Join(fx.Dir, "raw", "ingest_date="+day, name)
	}
	for _, tc := range []struct {
		name   string
		wrap   func(t *testing.T, fx Fixture) aroundStage
		file   func(fx Fixture) string
		change string
	}{
		{"Added", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{before: func() { RedeliveryFile(t, DB(t), fx, part(fx, tue, "part-late.parquet")) }}
		}, func(fx Fixture) string { return part(fx, tue, "part-late.parquet") }, "was added after the attempt listed its inputs"},
		{"Rewritten", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{after: func() {
				later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				if err := os.Chtimes(part(fx, mon, "part-0.parquet"), later, later); err != nil {
					t.Error(err)
				}
			}}
		}, func(fx Fixture) string { return part(fx, mon, "part-0.parquet") }, "changed after the attempt listed it"},
		{"Removed", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{after: func() {
				if err := os.Rename(part(fx, mon, "part-0.parquet"), part(fx, mon, ".part-0.parquet.moved")); err != nil {
					t.Error(err)
				}
			}}
		}, func(fx Fixture) string { return part(fx, mon, "part-0.parquet") }, "was removed after the attempt listed it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := LoadFixture(t, "")
			wh := t.TempDir()
			h.MustPublish(t, fx.Job(t, wh, "settled", mon, tue))
			before := FileBytes(t, filepath.Join(wh, "pointer.json"))
			res, err := h.PublishWith(t, fx.Job(t, wh, "racing", mon, tue), func(e engine.Engine) engine.Engine {
				w := tc.wrap(t, fx)
				w.Engine = e
				return w
			})
			if exitcode.Code(err) != exitcode.Error || !errors.Is(err, inputs.ErrChanged) {
				t.Fatalf("exit %d (%v), want 1 wrapping inputs.ErrChanged", exitcode.Code(err), err)
			}
			if !strings.Contains(err.Error(), tc.file(fx)) || !strings.Contains(err.Error(), tc.change) {
				t.Errorf("error %q does not name %s and say it %s", err, tc.file(fx), tc.change)
			}
			if res.Published {
				t.Errorf("Result.Published after a changed input")
			}
			if after := FileBytes(t, filepath.Join(wh, "pointer.json")); string(after) != string(before) {
				t.Errorf("pointer.json changed")
			}
			if tc.name != "Added" {
				return
			}
			// What the engine staged is the listed day alone: the
			// redelivered events were not read.
			staged := filepath.Join(warehouse.Abs(wh, warehouse.StagingDir("racing")), engine.FactTable, "event_date="+tue, "*.parquet")
			var sum int64
			if err := DB(t).QueryRow(fmt.Sprintf("SELECT sum(event_count)::BIGINT FROM read_parquet('%s', hive_partitioning=false)", staged)).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if want := fx.Expected.ByDate[d(tue)].Events; sum != want {
				t.Errorf("staged %s sum %d, want %d: the engine read a file the attempt did not list", tue, sum, want)
			}
		})
	}
}
