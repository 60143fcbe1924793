package gc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/gc"
	"github.com/techlearningpro/engagement/internal/history"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// publishAt moves the pointer to name job id for day1, written at t.
func (w *wh) publishAt(id string, t time.Time) {
	w.t.Helper()
	rel := "staging/job_id=" + id
	e := pointer.DateEntry{JobID: id, ManifestID: "m", EnrollmentSnapshotID: "e",
		FactFiles:      []pointer.File{{Path: rel + "/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet", Bytes: 1, Rows: 1}},
		CourseDayFiles: []pointer.File{}, EventCount: 1, GateReport: rel + "/_gate.json"}
	c := pointer.Commit{JobID: id, Entries: map[dates.Date]pointer.DateEntry{day1: e}, WrittenAt: t, WriterVersion: "test"}
	if _, err := pointer.Publish(context.Background(), w.store, c); err != nil {
		w.t.Fatal(err)
	}
	w.stamp(t)
}

func (w *wh) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(w.dir, rel))
	return err == nil
}

func (w *wh) generations() []int64 {
	w.t.Helper()
	gens, err := w.store.Generations(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return gens
}

// retained builds five generations, one a day before now, each naming its
// own old staging prefix, plus an old rejection record.
func retained(t *testing.T) *wh {
	w := newWH(t)
	veryOld := now.Add(-10 * 24 * time.Hour)
	w.touch("rejections/job_id=failed-old.json", veryOld)
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("pub-%d", i)
		w.prefix(id, veryOld, veryOld)
		w.publishAt(id, now.Add(time.Duration(i-6)*24*time.Hour))
	}
	return w
}

// TestRetention: which generations expire under each rule, and that the
// staging and records only they named go with them while everything the
// current pointer or a retained generation names stays.
func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        gc.Options
		expired  []int64
		mentions string
		recorded string // the expiry record's reason holds it
	}{
		{"Generations", gc.Options{RetainGenerations: 2}, []int64{1, 2, 3}, "within the 2 newest", ""},
		// Generation i was written 6-i days before now. Readers had surely
		// left it when generation i+2 was written, 4-i days before now
		// (readersLeft), and left 4 when pointer.json named 5, a day ago:
		// its age. (Replaced 5-i days ago, unless its successor was
		// committed by an interrupted write and shown later.)
		{"Days", gc.Options{RetainFor: 24*time.Hour + time.Minute}, []int64{1, 2}, "within --retain-days", ""},
		// Either rule keeps: the 2 newest, or left within 2 days.
		{"Both", gc.Options{RetainGenerations: 2, RetainFor: 2*24*time.Hour + time.Minute}, []int64{1}, "within --retain-days", ""},
		{"OneKeepsOnlyCurrent", gc.Options{RetainGenerations: 1}, []int64{1, 2, 3, 4}, "the current generation", ""},
		{"MinAgeKeepsYoung", gc.Options{RetainGenerations: 1, MinAge: 47 * time.Hour}, []int64{1, 2}, "younger than --min-age", ""},
		// As the CLI converts --retain-days 1.2: recorded as given, not
		// 1.2000000000000002.
		{"DaysFraction", gc.Options{RetainFor: time.Duration(1.2 * float64(24*time.Hour))}, []int64{1, 2}, "within --retain-days", "beyond --retain-days 1.2"},
		// Nothing expires, the old rejection record goes: its record must
		// not cite the rule that expired nothing.
		{"NoneExpire", gc.Options{RetainGenerations: 10}, nil, "within the 10 newest", "idle over --min-age"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := retained(t)
			rep, err := w.run(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Expired, tc.expired) {
				t.Errorf("expired %v, want %v", rep.Expired, tc.expired)
			}
			var keeps []string
			for _, v := range rep.Verdicts {
				if strings.HasPrefix(v.Path, "pointer-history/") && !v.Delete {
					keeps = append(keeps, v.Reason)
				}
			}
			if !strings.Contains(strings.Join(keeps, "|"), tc.mentions) {
				t.Errorf("kept generations' reasons %q do not mention %q", keeps, tc.mentions)
			}
			for _, v := range rep.Verdicts {
				if v.Path == "pointer-history/5.json" && v.Reason != "the current generation" {
					t.Errorf("the current generation kept because %q, want \"the current generation\"", v.Reason)
				}
			}
			var want []int64
			for g := int64(1); g <= 5; g++ {
				if !slices.Contains(tc.expired, g) {
					want = append(want, g)
				}
			}
			if got := w.generations(); !slices.Equal(got, want) {
				t.Errorf("history after gc %v, want %v", got, want)
			}
			for g := int64(1); g <= 5; g++ {
				prefix := fmt.Sprintf("staging/job_id=pub-%d", g)
				if gone := !w.exists(prefix); gone != slices.Contains(tc.expired, g) {
					t.Errorf("%s gone=%v, but generation %d expired=%v", prefix, gone, g, slices.Contains(tc.expired, g))
				}
			}
			if w.exists("rejections/job_id=failed-old.json") {
				t.Errorf("an old rejection record survived gc with retention")
			}
			if !w.exists("raw/ingest_date=2026-03-02/part-0.parquet") || !w.exists("pointer.json") {
				t.Errorf("gc deleted raw or pointer.json")
			}
			log, err := history.List(context.Background(), w.store, w.bucket, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.recorded == "" {
				tc.recorded = "beyond --retain"
			}
			if len(log.Expiries) != 1 || len(log.Expiries[0].Generations) != len(tc.expired) ||
				!slices.Equal(log.Expiries[0].Generations, tc.expired) {
				t.Fatalf("expiry records %+v, want one naming %v", log.Expiries, tc.expired)
			}
			if r := log.Expiries[0].Reason; !strings.Contains(r, tc.recorded) || (tc.expired == nil && strings.Contains(r, "beyond")) || strings.Contains(r, "00000") {
				t.Errorf("expiry reason %q, want it to say %q", r, tc.recorded)
			}
		})
	}
}

// TestRetentionDryRun lists every object it would delete, each with a
// reason, and deletes nothing.
func TestRetentionDryRun(t *testing.T) {
	w := retained(t)
	before := w.tree()
	rep, err := w.run(gc.Options{RetainGenerations: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Expired, []int64{1, 2, 3}) {
		t.Errorf("dry run would expire %v, want [1 2 3]", rep.Expired)
	}
	if after := w.tree(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a dry run changed the warehouse")
	}
	listed := map[string]string{}
	for _, v := range rep.Verdicts {
		if v.Reason == "" {
			t.Errorf("%s has no reason", v.Path)
		}
		if v.Delete {
			listed[v.Path] = v.Reason
			for _, o := range v.Objects {
				listed[o] = v.Reason
			}
		}
	}
	for _, want := range []string{
		"pointer-history/1.json", "pointer-history/3.json", "rejections/job_id=failed-old.json",
		"staging/job_id=pub-2/_attempt.json", "staging/job_id=pub-3/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet",
	} {
		if listed[want] == "" {
			t.Errorf("dry run does not list %s", want)
		}
	}
	if listed["pointer-history/4.json"] != "" || listed["staging/job_id=pub-4/_attempt.json"] != "" {
		t.Errorf("dry run would delete what a retained generation names")
	}
}

// TestRollbackRecordKeepsPrefix: a recent rollback record keeps the
// prefixes it names even when no retained generation names them (the
// rollback is between its file check and its swap); an old one does not.
func TestRollbackRecordKeepsPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		age  time.Duration
		kept bool
	}{{"Recent", time.Hour, true}, {"Old", 48 * time.Hour, false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := retained(t)
			rec, _ := json.Marshal(history.Record{JobID: "back", ToGeneration: 1, Prefixes: []string{"staging/job_id=pub-1"}})
			w.file("rollbacks/job_id=back.json", string(rec), now.Add(-tc.age))
			rep, err := w.run(gc.Options{RetainGenerations: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(rep.Expired, 1) {
				t.Fatalf("generation 1 not expired: %v", rep.Expired)
			}
			if got := w.exists("staging/job_id=pub-1"); got != tc.kept {
				t.Errorf("staging/job_id=pub-1 kept=%v, want %v", got, tc.kept)
			}
			if got := w.exists("rollbacks/job_id=back.json"); got != tc.kept {
				t.Errorf("the rollback record kept=%v, want %v", got, tc.kept)
			}
		})
	}
}

// TestNoRetentionKeepsHistory: without a retention flag gc behaves as
// before: every generation and every record stays.
func TestNoRetentionKeepsHistory(t *testing.T) {
	w := retained(t)
	if _, err := w.run(gc.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := w.generations(); len(got) != 5 {
		t.Errorf("history %v, want all 5 generations", got)
	}
	if !w.exists("rejections/job_id=failed-old.json") {
		t.Errorf("a rejection record went without retention")
	}
}

// TestRetentionWithoutStaging: a warehouse with no staging/ at all (every
// prefix collected already) still has its old records collected.
func TestRetentionWithoutStaging(t *testing.T) {
	w := newWH(t)
	w.touch("rejections/job_id=failed-old.json", now.Add(-10*24*time.Hour))
	w.publishAt("pub-1", now.Add(-5*24*time.Hour))
	w.publishAt("pub-2", now.Add(-4*24*time.Hour))
	rep, err := w.run(gc.Options{RetainGenerations: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Expired, []int64{1}) || w.exists("rejections/job_id=failed-old.json") {
		t.Errorf("expired %v, rejection record left=%v; want [1] and the record gone", rep.Expired, w.exists("rejections/job_id=failed-old.json"))
	}
}

// TestRetentionAgesFromTheReplacement: a generation's age runs from when
// its successor replaced it. One current for ten days and replaced a
// minute ago is what readers loaded until a minute ago: neither rule
// expires it yet, and the staging it names stays.
func TestRetentionAgesFromTheReplacement(t *testing.T) {
	for _, o := range aMinuteRules {
		w := newWH(t)
		w.prefix("long", now.Add(-10*24*time.Hour), now.Add(-10*24*time.Hour))
		w.publishAt("long", now.Add(-10*24*time.Hour))
		w.prefix("new", now.Add(-time.Minute), now.Add(-time.Minute))
		w.publishAt("new", now.Add(-time.Minute))
		keptAMinuteAfter(t, w, o, "long")
	}
}

// aMinuteRules are retention rules under which a generation readers left
// a minute ago is kept: by days, and by generations with --min-age.
var aMinuteRules = []gc.Options{
	{RetainFor: 24 * time.Hour},
	{RetainGenerations: 1, MinAge: time.Hour},
}

// keptAMinuteAfter runs gc with o and checks that generation 1, which
// readers left a minute ago, is kept for that reason, with the staging
// prefix of job id, which it names.
func keptAMinuteAfter(t *testing.T, w *wh, o gc.Options, id string) {
	t.Helper()
	rep, err := w.run(o)
	if err != nil {
		t.Fatal(err)
	}
	attempt := "staging/job_id=" + id + "/_attempt.json"
	if slices.Contains(rep.Expired, 1) || !w.exists(attempt) {
		t.Errorf("%+v: expired %v, %s kept %v; want generation 1 and its staging kept", o, rep.Expired, attempt, w.exists(attempt))
	}
	for _, v := range rep.Verdicts {
		if v.Path == "pointer-history/1.json" && !strings.Contains(v.Reason, "replaced 1m0s ago") {
			t.Errorf("%+v: generation 1 kept because %q, want the minute since readers left it", o, v.Reason)
		}
	}
}

// TestHistoryListedByGeneration: expired history copies are listed by
// generation (2 before 10, as they expire), not as strings.
func TestHistoryListedByGeneration(t *testing.T) {
	w := newWH(t)
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("pub-%d", i)
		w.prefix(id, old, old)
		w.publish(id)
	}
	rep, err := w.run(gc.Options{RetainGenerations: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range rep.Verdicts {
		if v.Delete && strings.HasPrefix(v.Path, "pointer-history/") {
			got = append(got, v.Path)
		}
	}
	var want []string
	for g := 1; g <= 11; g++ {
		want = append(want, fmt.Sprintf("pointer-history/%d.json", g))
	}
	if !slices.Equal(got, want) {
		t.Errorf("history listed %v, want %v", got, want)
	}
}

// TestRetentionAfterRollForward: a publish killed between its history
// copy and pointer.json commits generation 2 without showing it; readers
// keep loading generation 1 until the next publish rolls 2 forward, nine
// days later, and writes 3. Generation 1 was what readers saw a minute
// ago: it is kept, and the staging it names, though 2's written_at is
// nine days old (gc had aged 1 from it and deleted what readers had just
// been following).
func TestRetentionAfterRollForward(t *testing.T) {
	for _, o := range aMinuteRules {
		w := newWH(t)
		w.prefix("day1", now.Add(-10*24*time.Hour), now.Add(-10*24*time.Hour))
		w.publishAt("day1", now.Add(-10*24*time.Hour))
		shown, err := os.ReadFile(filepath.Join(w.dir, "pointer.json"))
		if err != nil {
			t.Fatal(err)
		}
		w.prefix("day2-try1", now.Add(-9*24*time.Hour), now.Add(-9*24*time.Hour))
		w.publishAt("day2-try1", now.Add(-9*24*time.Hour))
		// The kill: pointer.json still names generation 1.
		w.file("pointer.json", string(shown), now.Add(-10*24*time.Hour))
		w.prefix("day2-try2", now.Add(-time.Minute), now.Add(-time.Minute))
		w.publishAt("day2-try2", now.Add(-time.Minute))
		if gens := w.generations(); !slices.Equal(gens, []int64{1, 2, 3}) {
			t.Fatalf("history %v, want [1 2 3] (2 rolled forward)", gens)
		}
		keptAMinuteAfter(t, w, o, "day1")
	}
}
