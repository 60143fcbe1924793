package publishtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/storage"
)

// tamper wraps an engine and changes what Stage left in the warehouse before
// the gate reads it back: the gate must judge the bytes, not the engine's
// intentions.
type tamper struct {
	engine.Engine
	t   *testing.T
	db  *sql.DB
	fn  func(t *testing.T, db *sql.DB, warehouse string, st *engine.Staged)
	wh  string
	ran bool
}

func (e *tamper) Stage(ctx context.Context, spec engine.Spec, wh storage.Bucket, stagingDir string) (engine.Staged, error) {
	st, err := e.Engine.Stage(ctx, spec, wh, stagingDir)
	if err == nil {
		e.fn(e.t, e.db, e.wh, &st)
		e.ran = true
	}
	return st, err
}

// rewrite replaces the staged Parquet object key of the warehouse wh with
// the result of query over it (the object is available as the view "f").
func rewrite(t *testing.T, db *sql.DB, wh, key, query string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "rewrite.parquet")
	if _, err := db.Exec(fmt.Sprintf("CREATE OR REPLACE VIEW f AS SELECT * FROM read_parquet('%s', hive_partitioning=false)", Join(t, wh, key))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, tmp)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DROP VIEW f"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	Put(t, wh, key, data)
}

func testGateReadsStagedBytes(t *testing.T, h Harness) {
	cases := []struct {
		name  string
		check string
		fn    func(t *testing.T, db *sql.DB, wh string, st *engine.Staged)
	}{
		{"course_day row breaks matched+unknown", gate.CheckMatchedPlusUnknown, func(t *testing.T, db *sql.DB, wh string, st *engine.Staged) {
			rewrite(t, db, wh, st.CourseDayFiles[d(mon)][0].Path, "SELECT * REPLACE (CASE WHEN course_id = (SELECT min(course_id) FROM f) THEN matched_lesson_count + 1 ELSE matched_lesson_count END AS matched_lesson_count) FROM f")
		}},
		{"course_day total differs from fact", gate.CheckFactEqualsCourseDay, func(t *testing.T, db *sql.DB, wh string, st *engine.Staged) {
			rewrite(t, db, wh, st.CourseDayFiles[d(mon)][0].Path, "SELECT * REPLACE (event_count + 5 AS event_count, matched_lesson_count + 5 AS matched_lesson_count) FROM f")
		}},
		{"fact row lost after staging", gate.CheckInputEqualsFact, func(t *testing.T, db *sql.DB, wh string, st *engine.Staged) {
			rewrite(t, db, wh, st.FactFiles[d(mon)][0].Path, "SELECT * FROM f WHERE learner_key <> (SELECT min(learner_key) FROM f)")
		}},
		{"date with events staged nothing", gate.CheckDatesStaged, func(t *testing.T, db *sql.DB, wh string, st *engine.Staged) {
			for _, f := range st.FactFiles[d(tue)] {
				if err := Bucket(t, wh).Delete(context.Background(), f.Path); err != nil {
					t.Fatal(err)
				}
			}
			delete(st.FactFiles, d(tue))
		}},
		{"fact row with a null key", gate.CheckNullKeys, func(t *testing.T, db *sql.DB, wh string, st *engine.Staged) {
			rewrite(t, db, wh, st.FactFiles[d(mon)][0].Path, "SELECT * REPLACE (CASE WHEN learner_key = (SELECT min(learner_key) FROM f) THEN NULL ELSE lesson_id END AS lesson_id) FROM f")
		}},
	}
	// The tampered attempts share one warehouse and one clean publish
	// before them: each is rejected, so each must leave the same pointer,
	// and each stages under its own job id. (A publish costs the Spark
	// cluster about ten seconds; a clean one per case was four more.)
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	h.MustPublish(t, fx.Job(t, wh, "clean", mon, tue))
	before := Get(t, wh, "pointer.json")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tp *tamper
			res, err := h.PublishWith(t, fx.Job(t, wh, fmt.Sprintf("tampered-%d", i), mon, tue), func(e engine.Engine) engine.Engine {
				tp = &tamper{Engine: e, t: t, db: DBFor(t, wh), fn: tc.fn, wh: wh}
				return tp
			})
			if !tp.ran {
				t.Fatalf("stage did not run: %v", err)
			}
			if exitcode.Code(err) != exitcode.GateRejected {
				t.Fatalf("exit %d (%v), want %d", exitcode.Code(err), err, exitcode.GateRejected)
			}
			if !slices.Contains(res.Report.FailedNames(), tc.check) {
				t.Errorf("failed checks %v, want %s among them", res.Report.FailedNames(), tc.check)
			}
			if after := Get(t, wh, "pointer.json"); string(after) != string(before) {
				t.Errorf("pointer changed after a rejected attempt")
			}
		})
	}

	// Events of one (learner, lesson, day) with different course ids,
	// landed as a second file of an ingest partition: every such fact row
	// is counted once, and the gate rejects. The hot course is salted
	// where the engine salts, so its events and the other course's may
	// meet only after the join: of the eight unknown lessons, six land in
	// a salt other than 0 on Spark with the fixture's salts, and a merge
	// made per salt counts only the other two (tried).
	hot := h.LoadFixture(t, "").Expected.HotCourse
	const lessons = 8 // one conflicting fact row each
	pairs := func(first, second string) (rows []string) {
		for i := 1; i <= lessons; i++ {
			l := fmt.Sprintf("lesson-x-%d", i)
			rows = append(rows,
				fmt.Sprintf("('ev-%s-a', 'learner-conflict', '%s', %s, TIMESTAMPTZ '%s 10:00:00+00')", l, l, first, mon),
				fmt.Sprintf("('ev-%s-b', 'learner-conflict', '%s', %s, TIMESTAMPTZ '%s 11:00:00+00')", l, l, second, mon))
		}
		return rows
	}
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"two other courses", "'course-a'", "'course-b'"},
		{"the hot course and another", "'" + hot + "'", "'course-a'"},
		{"the hot course and none", "'" + hot + "'", "NULL"},
	} {
		t.Run("events of one fact row disagree on course_id: "+tc.name, func(t *testing.T) {
			fx := h.LoadFixture(t, "")
			rows, want := pairs(tc.first, tc.second), int64(lessons)
			extra := filepath.Join(t.TempDir(), "part-extra.parquet")
			q := fmt.Sprintf(`COPY (SELECT event_id, learner_key, lesson_id, CAST(course_id AS VARCHAR) AS course_id, event_time FROM (VALUES %s)
				AS t(event_id, learner_key, lesson_id, course_id, event_time)) TO '%s' (FORMAT parquet)`, strings.Join(rows, ",\n"), extra)
			if _, err := DB(t).Exec(q); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(extra)
			if err != nil {
				t.Fatal(err)
			}
			Put(t, fx.In(), "raw/ingest_date="+mon+"/part-extra.parquet", data)
			j := fx.Job(t, h.NewWarehouse(t), "row-conflict", mon, tue)
			j.HotCourses = []string{hot}
			res, err := h.Publish(t, j)
			if exitcode.Code(err) != exitcode.GateRejected {
				t.Fatalf("exit %d (%v), want %d", exitcode.Code(err), err, exitcode.GateRejected)
			}
			var got int64 // the check is made a date
			for _, c := range res.Report.Checks {
				if c.Name == gate.CheckFactRowCourseConflict {
					n, ok := c.Figures["conflicting_fact_rows"].(int64)
					if !ok {
						t.Fatalf("%s figures %v: no conflicting_fact_rows count", c.Name, c.Figures)
					}
					got += n
				}
			}
			if got != want {
				t.Errorf("%s counted %d fact rows, want %d; failed checks %v", gate.CheckFactRowCourseConflict, got, want, res.Report.FailedNames())
			}
		})
	}
}

// testAppendingPublisherDoubles keeps the seed's incident as a negative
// test: a publisher that appends each attempt's files to one shared path,
// read by listing that path, shows the day twice after a retry, while the
// pointer shows it once.
func testAppendingPublisherDoubles(t *testing.T, h Harness) {
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	shared := "appended/" + engine.FactTable + "/event_date=" + mon
	for _, id := range []string{"append-1", "append-2"} { // the scheduler's retry
		res := h.MustPublish(t, fx.Job(t, wh, id, mon))
		for i, f := range res.Entries[d(mon)].FactFiles {
			Put(t, wh, fmt.Sprintf("%s/%s-%d.parquet", shared, id, i), Get(t, wh, f.Path))
		}
	}
	var appended int64
	if err := DBFor(t, wh).QueryRow(fmt.Sprintf("SELECT sum(event_count)::BIGINT FROM read_parquet('%s/*.parquet', hive_partitioning=false)", Join(t, wh, shared))).Scan(&appended); err != nil {
		t.Fatal(err)
	}
	once := fx.Expected.ByDate[d(mon)].Events
	if appended != 2*once {
		t.Errorf("appending publisher shows %d events, want the doubled %d", appended, 2*once)
	}
	if got := FactSum(t, wh)[d(mon)]; got != once {
		t.Errorf("pointer readers see %d events, want %d", got, once)
	}
}
