package spark_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestSkewRisesWithoutSalt reads the enrollment join stage's tasks from the
// cluster's REST API on a generated day whose hot course is one hot join
// key: every event of course-k8s (20% of the day) and of two other courses
// (about 11% each) is given course-k8s and one learner, so (learner_key,
// course_id) of the hot course is a single key holding about 43% of the
// events (with 30% its task ran about as long as a task's first run of
// the plan, which the ratio must not hinge on). Salted into
// 64 buckets it spreads over the 16 shuffle partitions (four buckets each,
// give or take the hash); unsalted it lands in one task, which then runs
// far longer than the median: the skew ratio must rise. AQE's skew join
// and partition coalescing are off, so the salt is the only thing that
// differs.
func TestSkewRisesWithoutSalt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "generated")
	exp, err := gen.Generate(context.Background(), gen.Options{Out: dir, Events: 500_000})
	if err != nil {
		t.Fatal(err)
	}
	db := publishtest.DB(t)
	err = filepath.WalkDir(filepath.Join(dir, "raw"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		hot := p + ".hot"
		// The hot course and two others (43% of the day) become the one key.
		if _, err := db.Exec(fmt.Sprintf(`COPY (
			WITH t AS (SELECT * FROM read_parquet('%[2]s')),
			     hot AS (SELECT course_id FROM t WHERE course_id = '%[1]s'
			             UNION ALL (SELECT DISTINCT course_id FROM t WHERE course_id <> '%[1]s' ORDER BY course_id LIMIT 2))
			SELECT * REPLACE (CASE WHEN course_id IN (SELECT course_id FROM hot) THEN 'learner-hot' ELSE learner_key END AS learner_key,
			                  CASE WHEN course_id IN (SELECT course_id FROM hot) THEN '%[1]s' ELSE course_id END AS course_id)
			FROM t) TO '%[3]s' (FORMAT parquet)`, exp.HotCourse, p, hot)); err != nil {
			return err
		}
		return os.Rename(hot, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	fx := publishtest.Fixture{Dir: dir, Expected: exp}
	ratio := map[bool][]float64{}
	// An executor's first tasks of a plan it has not run compile its code,
	// two at once on two cores, for longer than a task of this small day
	// runs (763 and 753 against a median of 244 ms, measured): each plan is
	// staged once unmeasured, so that the ratios compare where the rows went.
	// Each plan is then measured three times and the medians compared: one
	// slow task on a busy machine (290 ms against a median of 108 ms in a
	// salted run) once made the salted ratio the larger.
	for i, salted := range []bool{true, false, true, false, true, false, true, false} {
		warmUp := i < 2
		settings := fixtureSettings(t)
		settings["spark.sql.shuffle.partitions"] = "16"
		settings["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
		settings["spark.sql.adaptive.skewJoin.enabled"] = "false"
		e, err := spark.Open(context.Background(), sparktest.Remote(t), settings)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		wh := t.TempDir()
		j := fx.Job(t, wh, fmt.Sprintf("skew-salted-%v-%d", salted, i), mon)
		j.SaltBuckets = 64
		if !salted {
			j.HotCourses = nil
		}
		spec := publishtest.Inspected(t, e, publishtest.Listed(t, j))
		st, err := e.Stage(context.Background(), spec, publishtest.Bucket(t, wh), "staging/job_id="+j.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if warmUp {
			continue
		}
		tk := st.Tasks
		if tk == nil {
			t.Fatalf("salted=%v: no task metrics: %s", salted, st.TasksUnavailable)
		}
		t.Logf("salted=%v: stage %d, %d tasks, max %d ms, median %.0f ms, ratio %.2f", salted, tk.StageID, tk.Tasks, tk.MaxMillis, tk.MedianMilli, tk.SkewRatio)
		if tk.Tasks != 16 || tk.MaxMillis <= 0 || tk.MedianMilli <= 0 {
			t.Errorf("salted=%v: %+v: want the 16 tasks of the join stage, with durations", salted, *tk)
		}
		ratio[salted] = append(ratio[salted], tk.SkewRatio)
	}
	if unsalted, salted := median3(ratio[false]), median3(ratio[true]); unsalted <= salted {
		t.Errorf("skew ratio unsalted %.2f, salted %.2f (medians of %v and %v): want it to rise without the salt",
			unsalted, salted, ratio[false], ratio[true])
	}
}

// median3 is the median of three values.
func median3(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
