package gen

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/techlearningpro/engagement/internal/dates"
)

// event is one raw row before it is rendered to strings.
type event struct {
	learner int32
	lesson  int32 // -1: lesson-missing
	course  int   // -1: NULL course_id
	at      time.Time
	ingest  dates.Date
}

// genDay emits one event date's sessions into the raw appender.
func (g *generator) genDay(ctx context.Context, app *duckdb.Appender, di int) error {
	d := g.days[di]
	nc := len(g.courses)
	quota := courseQuotas(d.events, nc)
	unknown := spread(d.unknown, quota)
	// buckets[c] known-lesson events of course c, buckets[nc+c] lesson-missing ones.
	buckets := make([]int, 2*nc)
	for c := range nc {
		buckets[c] = quota[c] - unknown[c]
		buckets[nc+c] = unknown[c]
	}
	active := g.rng.Perm(len(g.keys))
	active = active[:max(1, len(active)*activePct/100)]
	missingCourse := map[int32]int{}
	targets := g.defectTargets(d)
	lateLeft := d.late
	dayStart := d.date.Time()

	pos := 0
	for session := 0; pos < d.events; session++ {
		if session%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b := pickWeighted(g.rng, buckets, d.events-pos)
		c, missing := b%nc, b >= nc
		k := min(1+g.rng.IntN(maxSession), buckets[b])
		buckets[b] -= k

		learner := int32(active[g.rng.IntN(len(active))])
		lesson := int32(-1)
		if missing {
			// One fact row must not mix course ids in the base fixture, so a
			// learner's lesson-missing events on a date stay in one course.
			for tries := 0; ; tries++ {
				if prev, ok := missingCourse[learner]; !ok || prev == c {
					break
				}
				if tries < 64 {
					learner = int32(active[g.rng.IntN(len(active))])
					continue
				}
				learner = g.freeLearner(active, missingCourse, c)
				break
			}
			missingCourse[learner] = c
		} else {
			ls := g.byCrs[c]
			lesson = ls[g.rng.IntN(len(ls))]
		}

		offsets := make([]int, k)
		for i := 1; i < k; i++ {
			offsets[i] = offsets[i-1] + 5_000 + g.rng.IntN(235_000)
		}
		span := offsets[k-1]
		var start int
		switch {
		case lateLeft > 0 || session%edgeEvery == 1:
			start = millisPerDay - edgeWindowMilli + g.rng.IntN(edgeWindowMilli-span)
		case session%edgeEvery == 0:
			start = g.rng.IntN(edgeWindowMilli - span)
		default:
			start = g.rng.IntN(millisPerDay - span)
		}
		lateFrom := k - min(lateLeft, k) // the session's last events arrive after midnight
		lateLeft -= k - lateFrom

		for i := range k {
			ev := event{
				learner: learner,
				lesson:  lesson,
				course:  c,
				at:      dayStart.Add(time.Duration(start+offsets[i]) * time.Millisecond),
				ingest:  d.date,
			}
			if i >= lateFrom {
				ev.ingest = d.date.AddDays(1)
			}
			if len(targets) > 0 && pos >= targets[0] && ev.ingest == d.date && g.applyDefect(&ev) {
				targets = targets[1:]
			}
			if err := g.emit(app, di, ev); err != nil {
				return err
			}
			pos++
		}
	}
	return nil
}

// freeLearner is the fallback when random draws keep hitting learners whose
// lesson-missing events already sit in another course; it scans in order so
// the result stays deterministic.
func (g *generator) freeLearner(active []int, used map[int32]int, c int) int32 {
	for _, a := range active {
		if prev, ok := used[int32(a)]; !ok || prev == c {
			return int32(a)
		}
	}
	// Every active learner is taken: fall back to any learner; an inactive
	// one cannot collide.
	for l := range g.keys {
		if prev, ok := used[int32(l)]; !ok || prev == c {
			return int32(l)
		}
	}
	return 0
}

// defectTargets picks the in-date positions where course-conflict or
// null-course alter a row; the defect stream is drawn only for those variants.
func (g *generator) defectTargets(d dayPlan) []int {
	if !d.restatable || (g.opts.Variant != VariantCourseConflict && g.opts.Variant != VariantNullCourse) {
		return nil
	}
	var t []int
	for len(t) < defectsPerDate {
		p := g.defRng.IntN(d.events * 3 / 4) // leave room to find an eligible row after p
		if !slices.Contains(t, p) {
			t = append(t, p)
		}
	}
	slices.Sort(t)
	return t
}

// applyDefect alters a known-lesson row; it reports false when the row is not
// eligible so the caller tries the next one.
func (g *generator) applyDefect(ev *event) bool {
	if ev.lesson < 0 {
		return false
	}
	if g.defects == nil {
		g.defects = map[string]int{}
	}
	switch g.opts.Variant {
	case VariantCourseConflict:
		ev.course = (ev.course + 1) % len(g.courses)
		g.defects["conflicting_events"]++
	case VariantNullCourse:
		ev.course = -1
		g.defects["null_course_events"]++
	default:
		return false
	}
	return true
}

func (g *generator) emit(app *duckdb.Appender, di int, ev event) error {
	g.seq++
	id := fmt.Sprintf("ev-%0*d", g.idWidth, g.seq)
	learnerKey := g.keys[ev.learner]
	lessonID := UnknownLessonID
	if ev.lesson >= 0 {
		lessonID = g.lessons[ev.lesson].id
	}
	var courseID driver.Value
	if ev.course >= 0 {
		courseID = g.courses[ev.course].id
	}
	payload := fmt.Sprintf(`{"client":"%s","progress":%d}`, clients[g.rng.IntN(len(clients))], g.rng.IntN(101))
	row := []driver.Value{id, learnerKey, lessonID, courseID, ev.at, payload}
	if g.opts.Variant == VariantProhibitedColumn {
		row = append(row, learnerKey+"@example.com")
	}
	row = append(row, ev.ingest.Time())
	if err := app.AppendRow(row...); err != nil {
		return fmt.Errorf("append raw row %s: %w", id, err)
	}

	d := g.days[di]
	if ev.ingest != d.date {
		le := LateEvent{EventID: id, EventDate: d.date, IngestDate: ev.ingest}
		if d.restatable {
			g.late = append(g.late, le)
		} else {
			g.stale = append(g.stale, le)
		}
	}
	g.tally(di, ev)
	return nil
}

var clients = []string{"web", "ios", "android"}

// courseQuotas gives the hot course exactly hotShare percent of n and splits
// the rest evenly, the earlier courses taking the remainder.
func courseQuotas(n, courses int) []int {
	q := make([]int, courses)
	q[0] = n * hotShare / 100
	rest := n - q[0]
	for c := 1; c < courses; c++ {
		q[c] = rest / (courses - 1)
		if c-1 < rest%(courses-1) {
			q[c]++
		}
	}
	return q
}

// spread distributes u unknown-lesson events over the courses in proportion
// to their quotas, never exceeding a quota.
func spread(u int, quota []int) []int {
	total := 0
	for _, q := range quota {
		total += q
	}
	out := make([]int, len(quota))
	given := 0
	for c, q := range quota {
		out[c] = u * q / total
		given += out[c]
	}
	for c := 0; given < u; c = (c + 1) % len(quota) {
		if out[c] < quota[c] {
			out[c]++
			given++
		}
	}
	return out
}

// pickWeighted draws an index with probability proportional to its weight;
// total is the sum of the weights.
func pickWeighted(r *rand.Rand, w []int, total int) int {
	x := r.IntN(total)
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	panic("gen: weights do not sum to total")
}

// mix is a splitmix64-style hash: a stable pseudo-random function of its
// inputs, used where a decision must not depend on emission order.
func mix(vals ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vals {
		h ^= v
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}
