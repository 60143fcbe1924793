package spark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestEnginesPublishTheSameTables publishes the same inputs with both
// engines and compares what readers see: every row of both tables (sorted)
// and every gate figure. Only the file layout may differ. Both sides run
// config/fixture.conf, so Spark salts the hot course (course-k8s, 4 salts)
// and DuckDB does not: equal rows show the salt changes nothing but the
// plan. The generated day has 250,000 events with its hot course and late
// events (a million took 2.5 minutes of the suite beside the other
// packages, for the same kinds of rows four times over). The inputs and
// both warehouses are in the test S3 server's bucket alone (the local copy
// is deleted once uploaded), and Spark runs on the cluster.
func TestEnginesPublishTheSameTables(t *testing.T) {
	duck := publishtest.Harness{Engine: "duckdb", Backend: publishtest.S3, Open: func(t *testing.T) engine.Engine {
		e, err := duckdb.Open(context.Background(), map[string]string{"threads": "2"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.EnableAWS(context.Background(), ""); err != nil {
			e.Close()
			t.Fatal(err)
		}
		return e
	}}
	onS3 := func(t *testing.T, fx publishtest.Fixture) publishtest.Fixture {
		fx.Root = publishtest.S3.Root(t)
		publishtest.Upload(t, fx.Dir, fx.Root)
		publishtest.DropLocalCopy(t, &fx)
		return fx
	}
	cases := []struct {
		name string
		load func(t *testing.T) publishtest.Fixture
	}{
		{"fixture", func(t *testing.T) publishtest.Fixture { return onS3(t, publishtest.LoadFixture(t, "")) }},
		// A Spark 4 writer's collated keys: Spark merged LEARNER-…1 with
		// learner-…1 (and enrolled it); DuckDB, and the contract, compare
		// bytes.
		{"collated learner_key", func(t *testing.T) publishtest.Fixture { return onS3(t, collatedFixture(t)) }},
		{"generated 250K events", func(t *testing.T) publishtest.Fixture {
			dir := filepath.Join(t.TempDir(), "generated")
			exp, err := gen.Generate(context.Background(), gen.Options{Out: dir, Events: 250_000})
			if err != nil {
				t.Fatal(err)
			}
			return onS3(t, publishtest.Fixture{Dir: dir, Expected: exp})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := tc.load(t)
			got := map[string]published{}
			for _, h := range []publishtest.Harness{duck, s3Harness(t)} {
				wh := h.NewWarehouse(t)
				res := h.MustPublish(t, fx.Job(t, wh, "equivalence", mon, tue))
				checks, err := json.Marshal(res.Report.Checks)
				if err != nil {
					t.Fatal(err)
				}
				got[h.Engine] = published{
					fact:      sortedRows(publishtest.Visible(t, wh, engine.FactTable).Rows),
					courseDay: sortedRows(publishtest.Visible(t, wh, engine.CourseDayTable).Rows),
					checks:    string(checks),
				}
				var events int64
				for ds, n := range publishtest.FactSum(t, wh) {
					if want := fx.Expected.ByDate[ds].Events; n != want {
						t.Errorf("%s %s: %d events visible, want %d (expected.json)", h.Engine, ds, n, want)
					}
					events += n
				}
				if events == 0 {
					t.Fatalf("%s published no events", h.Engine)
				}
			}
			d, s := got["duckdb"], got["spark"]
			compareRows(t, engine.FactTable, d.fact, s.fact)
			compareRows(t, engine.CourseDayTable, d.courseDay, s.courseDay)
			if d.checks != s.checks {
				t.Errorf("gate figures differ:\nduckdb: %s\nspark:  %s", d.checks, s.checks)
			}
		})
	}
}

type published struct {
	fact, courseDay []string
	checks          string
}

func sortedRows(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%v", r)
	}
	sort.Strings(out)
	return out
}

func compareRows(t *testing.T, table string, duck, spark []string) {
	t.Helper()
	if len(duck) == 0 {
		t.Fatalf("%s: no rows; the comparison would prove nothing", table)
	}
	if len(duck) != len(spark) {
		t.Errorf("%s: duckdb %d rows, spark %d rows", table, len(duck), len(spark))
	}
	shown := 0
	for i := 0; i < len(duck) && i < len(spark) && shown < 5; i++ {
		if duck[i] != spark[i] {
			t.Errorf("%s row %d differs:\nduckdb: %s\nspark:  %s", table, i, duck[i], spark[i])
			shown++
		}
	}
}

// TestEnginesListTheSameUnknownLessons asks both engines for the top
// unknown lessons of one hand-written staged fact table: each must give
// the hand-written answer (limit, sums across files, ties by lesson_id
// bytewise, the null lesson_id last), so they agree with each other.
func TestEnginesListTheSameUnknownLessons(t *testing.T) {
	c := publishtest.NewUnknownLessonsCase(t)
	duck, err := duckdb.Open(context.Background(), map[string]string{"threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	sp := open(t)
	defer sp.Close()
	got := map[string]string{}
	for _, e := range []engine.Engine{duck, sp} {
		top, err := e.UnknownLessons(context.Background(), c.Warehouse, c.Staged, c.Dates, gate.TopUnknownLessons)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		c.CheckUnknownLessons(t, e.Name(), top)
		b, err := json.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	if got["duckdb"] != got["spark"] {
		t.Errorf("unknown lessons differ:\nduckdb: %s\nspark:  %s", got["duckdb"], got["spark"])
	}
}

// TestConflictRowsMergedOnlyWhenSuspect stages the fixture and its two
// conflict variants with both engines: Spark builds its fact grain a second
// time, merging a fact row's courses, exactly when the first grain shows a
// suspect (events off their manifest course, a null course), and either way
// its conflict figures and each date's fact rows equal DuckDB's. The base
// fixture must not pay for the merge. The unknown lessons whose events
// disagree on course (no manifest course to differ from) are the publish
// suite's conflict cases.
func TestConflictRowsMergedOnlyWhenSuspect(t *testing.T) {
	for _, tc := range []struct {
		variant string
		merges  int
	}{
		{"", 0},
		{gen.VariantCourseConflict, 1},
		{gen.VariantNullCourse, 1},
	} {
		t.Run("variant "+tc.variant, func(t *testing.T) {
			fx := publishtest.LoadFixture(t, tc.variant)
			type staged struct {
				figs map[string]gate.StageFigures
				rows map[string]int64
			}
			stage := func(e engine.Engine) staged {
				wh := t.TempDir()
				j := fx.Job(t, wh, "merge", mon, tue)
				if len(j.HotCourses) == 0 {
					t.Fatal("fixture.conf salts no course: the split rows would not be exercised")
				}
				st, err := e.Stage(context.Background(), publishtest.Inspected(t, e, publishtest.Listed(t, j)), publishtest.Bucket(t, wh), "staging/job_id=merge")
				if err != nil {
					t.Fatal(err)
				}
				out := staged{figs: map[string]gate.StageFigures{}, rows: map[string]int64{}}
				for d, f := range st.Stage {
					out.figs[d.String()] = f
				}
				for d, files := range st.FactFiles {
					for _, f := range files {
						out.rows[d.String()] += f.Rows
					}
				}
				return out
			}
			duck, err := duckdb.Open(context.Background(), map[string]string{"threads": "2"})
			if err != nil {
				t.Fatal(err)
			}
			defer duck.Close()
			want := stage(duck)
			e := open(t)
			defer e.Close()
			got := stage(e)
			if n := spark.Merges(e); n != tc.merges {
				t.Errorf("merged the grain %d times, want %d", n, tc.merges)
			}
			// Both grains, the unmerged one too, are gone from the server's
			// cache: one left behind would be read by the next plan alike.
			// UNCACHE returns before the block manager lets go of the
			// blocks (Spark unpersists without blocking), so the storage
			// page may list a grain for a moment: asked again for a while.
			left, err := spark.SessionCaches(context.Background(), e)
			for deadline := time.Now().Add(10 * time.Second); err == nil && len(left) > 0 && time.Now().Before(deadline); {
				time.Sleep(250 * time.Millisecond)
				left, err = spark.SessionCaches(context.Background(), e)
			}
			if err != nil || len(left) > 0 {
				t.Errorf("the stage left cached tables on the server: %v (%v)", left, err)
			}
			var conflicts int64
			for ds, f := range want.figs {
				conflicts += f.ManifestCourseConflicts + f.FactRowCourseConflicts
				if got.figs[ds] != f || got.rows[ds] != want.rows[ds] {
					t.Errorf("%s: spark %+v and %d fact rows, duckdb %+v and %d", ds, got.figs[ds], got.rows[ds], f, want.rows[ds])
				}
			}
			if len(got.figs) != len(want.figs) || len(want.figs) == 0 {
				t.Errorf("spark staged dates %v, duckdb %v", got.figs, want.figs)
			}
			if (conflicts > 0) != (tc.merges > 0) {
				t.Errorf("duckdb counts %d conflicts in variant %q: the case tests nothing", conflicts, tc.variant)
			}
		})
	}
}

// collatedFixture is the fixture with learner_key declared UTF8_LCASE in
// every raw and enrollment file's Spark schema (the row metadata a Spark 4
// writer of a STRING COLLATE UTF8_LCASE column leaves), and the keys
// ending in 1 upper-cased in raw alone: by bytes, other learners than the
// enrolled ones. The event counts stay expected.json's.
func collatedFixture(t *testing.T) publishtest.Fixture {
	fx := publishtest.LoadFixture(t, "")
	schema := func(cols ...string) string {
		var fields []string
		for _, c := range cols {
			name, typ, _ := strings.Cut(c, ":")
			md := "{}"
			if name == "learner_key" {
				md = `{"__COLLATIONS":{"learner_key":"spark.UTF8_LCASE"}}`
			}
			fields = append(fields, fmt.Sprintf(`{"name":%q,"type":%q,"nullable":true,"metadata":%s}`, name, typ, md))
		}
		return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`
	}
	db := publishtest.DB(t)
	rewrite := func(path, sel, sparkSchema string) {
		tmp := path + ".new"
		q := fmt.Sprintf(`COPY (SELECT %s FROM read_parquet('%s', hive_partitioning=false)) TO '%s' (FORMAT parquet, KV_METADATA {"org.apache.spark.sql.parquet.row.metadata": '%s'})`,
			sel, path, tmp, sparkSchema)
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("rewrite %s: %v", path, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	raw := schema("event_id:string", "learner_key:string", "lesson_id:string", "course_id:string", "event_time:timestamp", "client_payload:string")
	files, err := filepath.Glob(fx.Input("raw/*/*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("raw files: %v %v", files, err)
	}
	for _, f := range files {
		rewrite(f, "* REPLACE (CASE WHEN learner_key LIKE '%1' THEN upper(learner_key) ELSE learner_key END AS learner_key)", raw)
	}
	rewrite(fx.Input("enrollments/part-0.parquet"), "*", schema("learner_key:string", "course_id:string", "snapshot_id:string"))
	return fx
}
