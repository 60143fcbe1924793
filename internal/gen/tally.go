package gen

import "math/bits"

// dayTally accumulates one event date's figures while rows are emitted.
// Learner sets are bitsets over learner indexes, so memory grows with the
// learner count and not with the event count.
type dayTally struct {
	fig      DayFigures
	learners bitset
	facts    map[uint64]struct{} // learner<<32 | lesson slot
	course   []courseTally
}

type courseTally struct {
	fig      CourseFigures
	learners bitset
}

func newDayTally(learners, courses int) *dayTally {
	t := &dayTally{
		learners: newBitset(learners),
		facts:    map[uint64]struct{}{},
		course:   make([]courseTally, courses),
	}
	for c := range t.course {
		t.course[c].learners = newBitset(learners)
	}
	return t
}

func (g *generator) tally(di int, ev event) {
	t := g.tallies[di]
	d := g.days[di]
	matched := ev.lesson >= 0
	enrolled := ev.course >= 0 && g.enrolled(ev.learner, ev.course)

	t.fig.Events++
	if matched {
		t.fig.Matched++
	} else {
		t.fig.Unknown++
	}
	if enrolled {
		t.fig.Enrolled++
	}
	if ev.ingest == d.date {
		t.fig.SameDayIngestEvents++
	}
	t.learners.set(int(ev.learner))
	// lesson-missing takes the slot after the last real lesson.
	slot := uint64(len(g.lessons))
	if matched {
		slot = uint64(ev.lesson)
	}
	t.facts[uint64(ev.learner)<<32|slot] = struct{}{}

	if ev.course < 0 {
		return // NULL course: no course_day row and no enrollment pair
	}
	ct := &t.course[ev.course]
	ct.fig.Events++
	if matched {
		ct.fig.Matched++
	} else {
		ct.fig.Unknown++
	}
	if enrolled {
		ct.fig.Enrolled++
	}
	ct.learners.set(int(ev.learner))
	pair := int(ev.learner)*len(g.courses) + ev.course
	g.pairAny.set(pair)
	if d.restatable {
		g.pairRestatable.set(pair)
	}
}

type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
