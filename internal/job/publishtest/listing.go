package publishtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
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
	inspect       func() // before Inspect
}

func (e aroundStage) Inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	if e.inspect != nil {
		e.inspect()
	}
	return e.Engine.Inspect(ctx, spec)
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
// producer's redelivery, the file the listing race moves into raw. db must
// reach where the fixture's inputs are (DBFor(t, fx.In())).
func RedeliveryFile(t *testing.T, db *sql.DB, fx Fixture, path string) {
	t.Helper()
	src := fx.Input("raw/ingest_date=" + tue + "/part-0.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s', hive_partitioning=false) ORDER BY event_id LIMIT 100) TO '%s' (FORMAT parquet)", src, path)); err != nil {
		t.Fatal(err)
	}
}

// testInputsChangedDuringAttempt: a raw file added, rewritten or removed
// after the attempt listed its inputs fails the attempt (exit 1, naming the
// file, pointer untouched), whether Stage or Inspect succeeded or failed on
// it. The
// engine reads exactly the listed files, so the added redelivery, had it
// been read, would show in the staged sum.
func testInputsChangedDuringAttempt(t *testing.T, h Harness) {
	part := func(day, name string) string { return "raw/ingest_date=" + day + "/" + name }
	for _, tc := range []struct {
		name   string
		wrap   func(t *testing.T, fx Fixture) aroundStage
		key    string
		change string
	}{
		{"Added", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{before: func() {
				tmp := filepath.Join(t.TempDir(), "part-late.parquet")
				RedeliveryFile(t, DBFor(t, fx.In()), fx, tmp)
				data, err := os.ReadFile(tmp)
				if err != nil {
					t.Error(err)
				}
				Put(t, fx.In(), part(tue, "part-late.parquet"), data)
			}}
		}, part(tue, "part-late.parquet"), "was added after the attempt listed its inputs"},
		{"Rewritten", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{after: func() {
				if fx.Root == "" {
					// On disk a new modification time alone is a change.
					later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
					if err := os.Chtimes(filepath.Join(fx.Dir, filepath.FromSlash(part(mon, "part-0.parquet"))), later, later); err != nil {
						t.Error(err)
					}
					return
				}
				// On S3 an object is rewritten whole: other bytes, another ETag.
				Put(t, fx.In(), part(mon, "part-0.parquet"), Get(t, fx.In(), part(tue, "part-0.parquet")))
			}}
		}, part(mon, "part-0.parquet"), "changed after the attempt listed it"},
		{"Removed", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{after: func() {
				if err := Bucket(t, fx.In()).Delete(context.Background(), part(mon, "part-0.parquet")); err != nil {
					t.Error(err)
				}
			}}
		}, part(mon, "part-0.parquet"), "was removed after the attempt listed it"},
		// Rewritten as something that is not Parquet while the engine
		// inspects: the engine's error is damage, the cause the change.
		{"DamagedDuringInspect", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{inspect: func() {
				Put(t, fx.In(), part(mon, "part-0.parquet"), []byte("PAR1 not a footer PAR1"))
			}}
		}, part(mon, "part-0.parquet"), "changed after the attempt listed it"},
		// Removed before Stage reads it, the engine fails on the missing
		// file; the error must still say which input changed, not only
		// what the engine could not read.
		{"RemovedBeforeStage", func(t *testing.T, fx Fixture) aroundStage {
			return aroundStage{before: func() {
				if err := Bucket(t, fx.In()).Delete(context.Background(), part(mon, "part-0.parquet")); err != nil {
					t.Error(err)
				}
			}}
		}, part(mon, "part-0.parquet"), "was removed after the attempt listed it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := h.LoadFixture(t, "")
			// A first publish of the same dates would cost the Spark
			// suite seconds a case: the attempt's refusal is the same
			// without one, and must leave no pointer at all.
			wh := h.NewWarehouse(t)
			res, err := h.PublishWith(t, fx.Job(t, wh, "racing", mon, tue), func(e engine.Engine) engine.Engine {
				w := tc.wrap(t, fx)
				w.Engine = e
				return w
			})
			if exitcode.Code(err) != exitcode.Error || !errors.Is(err, inputs.ErrChanged) {
				t.Fatalf("exit %d (%v), want 1 wrapping inputs.ErrChanged", exitcode.Code(err), err)
			}
			if !strings.Contains(err.Error(), fx.Input(tc.key)) || !strings.Contains(err.Error(), tc.change) {
				t.Errorf("error %q does not name %s and say it %s", err, fx.Input(tc.key), tc.change)
			}
			if res.Published {
				t.Errorf("Result.Published after a changed input")
			}
			if Get(t, wh, "pointer.json") != nil {
				t.Errorf("pointer.json written by a refused attempt")
			}
			if tc.name != "Added" {
				return
			}
			// What the engine staged is the listed day alone: the
			// redelivered events were not read.
			staged := Join(t, wh, warehouse.StagingDir("racing")+"/"+engine.FactTable+"/event_date="+tue) + "/*.parquet"
			var sum int64
			if err := DBFor(t, wh).QueryRow(fmt.Sprintf("SELECT sum(event_count)::BIGINT FROM read_parquet('%s', hive_partitioning=false)", staged)).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if want := fx.Expected.ByDate[d(tue)].Events; sum != want {
				t.Errorf("staged %s sum %d, want %d: the engine read a file the attempt did not list", tue, sum, want)
			}
		})
	}
}

// testTodaysPartitionNotRead: the read window ends by yesterday. Today's
// partition is still being written (an ingestion streams into it): a file
// in it at the listing, and one landing in it during the attempt, are
// neither read nor a change of the attempt's inputs. Both hold tue's
// events again (redelivered ids), so a read of either would show (exit 3
// on the ids, exit 1 on the change, or tue's sum off).
func testTodaysPartitionNotRead(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	today := dates.FromTime(Now).String()
	if today != dates.MustParse(tue).AddDays(1).String() {
		t.Fatalf("the harness's today %s is not the day after %s: the case tests nothing", today, tue)
	}
	redelivery := func() []byte {
		tmp := filepath.Join(t.TempDir(), "part.parquet")
		RedeliveryFile(t, DBFor(t, fx.In()), fx, tmp)
		data, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	data := redelivery()
	Put(t, fx.In(), "raw/ingest_date="+today+"/part-0.parquet", data)
	wh := h.NewWarehouse(t)
	j := fx.Job(t, wh, "streaming-today", mon, tue)
	if j.LatenessDays < 1 {
		t.Fatalf("lateness %d: the window would not reach today anyway", j.LatenessDays)
	}
	_, err := h.PublishWith(t, j, func(e engine.Engine) engine.Engine {
		return aroundStage{Engine: e, before: func() { Put(t, fx.In(), "raw/ingest_date="+today+"/part-1.parquet", data) }}
	})
	if err != nil {
		t.Fatalf("publish with today's partition being written: %v", err)
	}
	for _, day := range []string{mon, tue} {
		if got, want := FactSum(t, wh)[dates.MustParse(day)], fx.Expected.ByDate[dates.MustParse(day)].Events; got != want {
			t.Errorf("%s: %d events, want %d: today's partition was read", day, got, want)
		}
	}
}

// testMidnightOutage: a date's own partition holds only the day before's
// late events, and no event of the date lies anywhere the run reads: a
// real day without events, or ingestion that stopped at midnight. It is
// published with zero counts and a warning naming the partition; refusing
// it failed every run of a real day without events, and the dates run
// beside it missed their last restatement. Its events, should they land
// later, make the next run refuse it (the outage rule, other tests).
func testMidnightOutage(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	own := "raw/ingest_date=" + tue + "/part-0.parquet"
	tmp := filepath.Join(t.TempDir(), "stragglers.parquet")
	if _, err := DBFor(t, fx.In()).Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s', hive_partitioning=false) WHERE event_time < TIMESTAMPTZ '%s 00:00:00+00') TO '%s' (FORMAT parquet)",
		fx.Input(own), tue, tmp)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	Put(t, fx.In(), own, data)
	var logs bytes.Buffer
	h.LogTo = &logs
	res, err := h.Publish(t, fx.Job(t, h.NewWarehouse(t), "outage", tue))
	if err != nil {
		t.Fatalf("a day without events beside the day before's late events: %v", err)
	}
	if e := res.Entries[d(tue)]; e.EventCount != 0 {
		t.Errorf("%s: %d events, want 0", tue, e.EventCount)
	}
	if !strings.Contains(logs.String(), "a day without events: its own partition holds other dates' events only") || !strings.Contains(logs.String(), `"date":"`+tue+`"`) {
		t.Errorf("no warning naming %s:\n%s", tue, logs.String())
	}
}
