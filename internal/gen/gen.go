// Package gen writes deterministic synthetic inputs for the engagement job,
// together with the figures those inputs imply by construction.
//
// # Why it exists
//
// The job's tests must compare its output against numbers that were known
// before the job ran. The generator tallies every figure in Go while it emits
// the rows, writes them to expected.json beside the data, and never runs the
// product. The same Options always give bit-identical files: randomness comes
// only from math/rand/v2 PCG streams seeded by Options.Seed, never the clock,
// and DuckDB writes the Parquet single-threaded, UTC, ordered and zstd.
//
// # Layout under Options.Out
//
//	raw/ingest_date=YYYY-MM-DD/part-0.parquet   event_id, learner_key, lesson_id,
//	                                            course_id, event_time (TIMESTAMPTZ),
//	                                            client_payload [, Email]
//	lessons/part-0.parquet                      manifest_id, lesson_id, course_id, lesson_title
//	enrollments/part-0.parquet                  learner_key, course_id, snapshot_id
//	expected.json                               see Expected
//
// ingest_date lives only in the directory name, as Spark writes a
// hive-partitioned dataset. client_payload is a harmless blob so the job's
// column projection has something to drop.
//
// # Shape (Events = 2000, Seed = 7, the committed fixture)
//
// Events is the total number of raw rows. About 1/40 of them (50 in the
// fixture) have event_date 2026-03-01 and sit in ingest_date=2026-03-01;
// 3 more events of 2026-03-01 arrived late in ingest_date=2026-03-02. The
// newest ingest date is 2026-03-03 and the fixture horizon is 2 dates, so
// 2026-03-01 is outside it and those late rows must never show up in
// anyone's figures for 2026-03-02 or 2026-03-03. The rest is split evenly
// between event dates 2026-03-02 and 2026-03-03; exactly one event of
// 2026-03-02 was ingested on 2026-03-03 (Expected.LateEvents).
//
// Eight courses; course-k8s is the hot key with exactly 20% of each date's
// events, the others share the rest evenly, so the hot course is strictly
// the largest. The pinned manifest dim-2026-03-04 has 10·k lessons, with
// k = max(1, Events/2000): 3·k for the hot course, k for each other. About
// 1% of each date's events (never 2% or more) point at lesson-missing,
// which the pin lacks. The older pin dim-2026-02-20 in the
// same file repeats most lesson ids with other titles, moves one lesson to
// another course and still lists lesson-missing, so a job that forgets the
// pin filter gets duplicates and too few unknown lessons.
//
// Learners number Events/10 (learner-0001 …). Each date draws sessions from
// an active 60% of them; a session is 1–5 events of one learner on one
// lesson a few minutes apart, so fact rows are well below events. Every 20th
// session starts in 00:00–00:30 UTC and the next one ends in 23:30–24:00
// UTC, and the late arrivals are 23:30+ sessions, so a job that dates
// events in a local time zone misdates some of them. A learner's
// lesson-missing events on one date all carry the same course_id, so the
// base fixture has no fact row whose events disagree on course.
//
// Enrollment membership of a (learner_key, course_id) pair is a hash of the
// seed and the pair: the pinned snapshot enr-2026-03-04 holds about 75% of
// the pairs that have events plus about 4% of the pairs that have none; the
// older snapshot enr-2026-02-20 is a different hash and overlaps it.
//
// # Variants
//
// Each variant is the base fixture with exactly one defect, drawn from a
// separate random stream so the rest of the data stays identical to the base
// (over-cap necessarily reshuffles, since it changes how many unknown events
// exist): over-cap (4% unknown lessons on every date), duplicate-enrollment
// (one pinned pair twice), duplicate-lesson (one lesson id twice in the pin,
// same course), course-conflict (3 events per restatable date carry a course
// other than their lesson's), null-course (3 events per restatable date with
// NULL course_id) and prohibited-column (raw carries an extra "Email"
// column). Expected.Defects counts the defect.
package gen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/techlearningpro/engagement/internal/dates"
)

// Options control one generation run.
type Options struct {
	Out     string // output directory (created; must be empty or absent)
	Events  int    // total raw rows; 0 means DefaultEvents
	Seed    uint64 // 0 means DefaultSeed
	Variant string // "" or one of Variants
	Shape   string // "" or ShapeFixture (the default), or ShapeDesign
	// Dates is the design shape's number of restatable event dates; 0
	// means DefaultDesignDates. The fixture shape takes none.
	Dates int
	// Log, when set, receives one line per finished step of a long run.
	Log io.Writer
}

// Defaults are the committed fixture's options.
const (
	DefaultEvents = 2000
	DefaultSeed   = 7
	// MinEvents keeps every invariant reachable: at least one unknown lesson
	// per date while staying under the 2% cap needs more than 50 events a date.
	MinEvents = 200
)

// Variant names.
const (
	VariantOverCap             = "over-cap"
	VariantDuplicateEnrollment = "duplicate-enrollment"
	VariantDuplicateLesson     = "duplicate-lesson"
	VariantCourseConflict      = "course-conflict"
	VariantNullCourse          = "null-course"
	VariantProhibitedColumn    = "prohibited-column"
)

// Variants lists every defect variant Generate accepts.
var Variants = []string{
	VariantOverCap,
	VariantDuplicateEnrollment,
	VariantDuplicateLesson,
	VariantCourseConflict,
	VariantNullCourse,
	VariantProhibitedColumn,
}

// Pins, ids and dates of the fixture world.
const (
	ManifestID                   = "dim-2026-03-04"
	PreviousManifestID           = "dim-2026-02-20"
	EnrollmentSnapshotID         = "enr-2026-03-04"
	PreviousEnrollmentSnapshotID = "enr-2026-02-20"
	UnknownLessonID              = "lesson-missing"
	HotCourse                    = "course-k8s"
	RestatementHorizonDays       = 2
	ProhibitedColumn             = "Email"
)

var (
	// UnrestatedDate is older than the horizon allows once 2026-03-03 has landed.
	UnrestatedDate = dates.MustParse("2026-03-01")
	// RestatableDates are the two event dates inside the fixture horizon.
	RestatableDates = []dates.Date{dates.MustParse("2026-03-02"), dates.MustParse("2026-03-03")}
	// NewestIngestDate is the last raw partition.
	NewestIngestDate = dates.MustParse("2026-03-03")
)

type courseDef struct{ id, title string }

// The hot course is first; the order is also the quota order.
var courseDefs = []courseDef{
	{HotCourse, "Kubernetes in Production"},
	{"course-sql", "SQL for Analysts"},
	{"course-go", "Go Fundamentals"},
	{"course-python", "Python for Data Work"},
	{"course-spark", "Spark at Scale"},
	{"course-security", "Secure Coding"},
	{"course-ml", "Machine Learning Basics"},
	{"course-cloud", "Cloud Architecture"},
}

const (
	hotShare        = 20 // percent of a date's events in the hot course
	unknownPct      = 1  // base fixture, per date
	overCapPct      = 4  // over-cap variant, per date
	activePct       = 60 // share of learners active on a date
	maxSession      = 5  // events per learner-lesson session
	enrolledPct     = 75 // pinned share of pairs that have events
	strayEnrollPct  = 4  // pinned share of pairs without events
	previousPct     = 25 // previous snapshot share of all pairs
	edgeEvery       = 20 // one session in this many starts just after midnight, one ends just before
	defectsPerDate  = 3  // course-conflict / null-course rows per restatable date
	unrestatedLate  = 3  // late events for the unrestated date
	restatableLate  = 1  // late events for the first restatable date
	millisPerDay    = 86_400_000
	edgeWindowMilli = 30 * 60 * 1000
)

// Distinct salts keep the enrollment hashes independent of each other.
const (
	saltPinned uint64 = iota + 1
	saltStray
	saltPrevious
)

// PCG stream selectors: the defect stream is separate so a variant that
// draws from it leaves the base rows untouched.
const (
	streamMain   uint64 = 0x656e676167656d65 // "engageme"
	streamDefect uint64 = 0x646566656374730a
)

// Generate writes the inputs and expected.json under opts.Out and returns the
// expected figures. expected.json is written last, so a tree without it is
// the remains of a failed run; Generate refuses to reuse it until removed.
func Generate(ctx context.Context, opts Options) (Expected, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return Expected{}, err
	}
	if err := prepareOut(opts.Out); err != nil {
		return Expected{}, err
	}
	if opts.design() {
		exp, err := generateDesign(ctx, opts)
		if err != nil {
			return Expected{}, fmt.Errorf("generate into %s: %w", opts.Out, err)
		}
		return exp, writeExpected(filepath.Join(opts.Out, ExpectedFile), exp)
	}
	g := newGenerator(opts)
	if err := g.run(ctx); err != nil {
		return Expected{}, fmt.Errorf("generate into %s: %w", opts.Out, err)
	}
	exp := g.expected()
	if err := writeExpected(filepath.Join(opts.Out, ExpectedFile), exp); err != nil {
		return Expected{}, err
	}
	return exp, nil
}

// WithDefaults fills the zero values: the fixture's event count (the design
// day's for the design shape), seed and, for the design shape, dates.
func (o Options) WithDefaults() Options {
	if o.Events == 0 {
		o.Events = DefaultEvents
		if o.design() {
			o.Events = DesignEvents
		}
	}
	if o.design() && o.Dates == 0 {
		o.Dates = DefaultDesignDates
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	return o
}

// Validate refuses options that cannot make a dataset; the command maps its
// error to a usage error.
func (o Options) Validate() error {
	if o.Out == "" {
		return errors.New("gen: output directory is required")
	}
	switch o.Shape {
	case "", ShapeFixture:
		if o.Dates != 0 {
			return fmt.Errorf("gen: dates %d: only the design shape takes a number of dates", o.Dates)
		}
	case ShapeDesign:
		if o.Variant != "" {
			return fmt.Errorf("gen: the design shape takes no variant (got %q)", o.Variant)
		}
		if o.Dates < 1 {
			return fmt.Errorf("gen: dates %d: the design shape needs at least one date", o.Dates)
		}
		if lo := max(MinDesignEvents, o.Dates*MinDesignEvents/DefaultDesignDates); o.Events < lo {
			return fmt.Errorf("gen: events %d below the design shape's minimum %d for %d dates", o.Events, lo, o.Dates)
		}
	default:
		return fmt.Errorf("gen: unknown shape %q (want %s or %s)", o.Shape, ShapeFixture, ShapeDesign)
	}
	if o.Events < MinEvents {
		return fmt.Errorf("gen: events %d below the minimum %d", o.Events, MinEvents)
	}
	if o.Variant != "" && !slices.Contains(Variants, o.Variant) {
		return fmt.Errorf("gen: unknown variant %q (want one of %s)", o.Variant, strings.Join(Variants, ", "))
	}
	return nil
}

// prepareOut refuses a non-empty directory because mixing a previous run's
// partitions into a new dataset would silently change its figures.
func prepareOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil:
		if len(entries) > 0 {
			return fmt.Errorf("gen: output directory %s is not empty", dir)
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("gen: inspect output directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen: create output directory: %w", err)
	}
	return nil
}

type lessonDef struct {
	id, title string
	course    int
}

// dayPlan is one event date's share of the events.
type dayPlan struct {
	date       dates.Date
	events     int
	unknown    int
	late       int // ingested on date+1
	restatable bool
}

type generator struct {
	opts    Options
	rng     *rand.Rand
	defRng  *rand.Rand
	courses []courseDef
	lessons []lessonDef
	byCrs   [][]int32 // lesson indexes per course
	keys    []string  // learner keys
	idWidth int
	days    []dayPlan
	tallies []*dayTally
	seq     int
	late    []LateEvent
	stale   []LateEvent
	// pairs with any event, and pairs with an event on a restatable date,
	// indexed learner*len(courses)+course.
	pairAny, pairRestatable bitset
	defects                 map[string]int
	pinnedRows              int
}

func newGenerator(o Options) *generator {
	g := &generator{
		opts:    o,
		rng:     rand.New(rand.NewPCG(o.Seed, streamMain)),
		defRng:  rand.New(rand.NewPCG(o.Seed, streamDefect)),
		courses: courseDefs,
	}
	perCourse := max(1, o.Events/DefaultEvents)
	g.byCrs = make([][]int32, len(g.courses))
	for c, cd := range g.courses {
		n := perCourse
		if c == 0 {
			n = 3 * perCourse
		}
		short := strings.TrimPrefix(cd.id, "course-")
		w := max(2, len(strconv.Itoa(n)))
		for i := range n {
			g.byCrs[c] = append(g.byCrs[c], int32(len(g.lessons)))
			g.lessons = append(g.lessons, lessonDef{
				id:     fmt.Sprintf("lesson-%s-%0*d", short, w, i+1),
				title:  fmt.Sprintf("%s, lesson %d", cd.title, i+1),
				course: c,
			})
		}
	}
	nLearners := max(20, o.Events/10)
	w := max(4, len(strconv.Itoa(nLearners)))
	g.keys = make([]string, nLearners)
	for i := range g.keys {
		g.keys[i] = fmt.Sprintf("learner-%0*d", w, i+1)
	}
	g.idWidth = max(6, len(strconv.Itoa(o.Events)))

	pct := unknownPct
	if o.Variant == VariantOverCap {
		pct = overCapPct
	}
	unknownFor := func(n int) int { return max(1, (n*pct+50)/100) }
	old := max(1, o.Events/40)
	rest := o.Events - old - unrestatedLate
	g.days = []dayPlan{
		{date: UnrestatedDate, events: old + unrestatedLate, late: unrestatedLate},
		{date: RestatableDates[0], events: rest / 2, late: restatableLate, restatable: true},
		{date: RestatableDates[1], events: rest - rest/2, restatable: true},
	}
	for i := range g.days {
		g.days[i].unknown = unknownFor(g.days[i].events)
		g.tallies = append(g.tallies, newDayTally(nLearners, len(g.courses)))
	}
	g.pairAny = newBitset(nLearners * len(g.courses))
	g.pairRestatable = newBitset(nLearners * len(g.courses))
	return g
}

func (g *generator) run(ctx context.Context) error {
	conn, closeDB, err := openDuckDB(ctx)
	if err != nil {
		return err
	}
	defer closeDB()

	email := ""
	if g.opts.Variant == VariantProhibitedColumn {
		email = `, "` + ProhibitedColumn + `" VARCHAR`
	}
	stmts := []string{
		`CREATE TABLE raw (event_id VARCHAR, learner_key VARCHAR, lesson_id VARCHAR, course_id VARCHAR,
			event_time TIMESTAMPTZ, client_payload VARCHAR` + email + `, ingest_date DATE)`,
		`CREATE TABLE lessons (manifest_id VARCHAR, lesson_id VARCHAR, course_id VARCHAR, lesson_title VARCHAR)`,
		`CREATE TABLE enrollments (learner_key VARCHAR, course_id VARCHAR, snapshot_id VARCHAR)`,
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create staging table: %w", err)
		}
	}

	// Each event date's rows are written as soon as its ingest partition is
	// complete, so DuckDB holds at most one date plus a few late rows.
	for i := range g.days {
		err := conn.Raw(func(dc any) error {
			app, err := duckdb.NewAppender(dc.(driver.Conn), "", "", "raw")
			if err != nil {
				return fmt.Errorf("open raw appender: %w", err)
			}
			if err := g.genDay(ctx, app, i); err != nil {
				_ = app.Close()
				return err
			}
			if err := app.Close(); err != nil {
				return fmt.Errorf("flush raw rows: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := g.copyRaw(ctx, conn, g.days[i].date); err != nil {
			return err
		}
	}
	if err := conn.Raw(func(dc any) error { return g.appendDims(dc.(driver.Conn)) }); err != nil {
		return err
	}
	return g.copyDims(ctx, conn)
}

// openDuckDB opens a private in-memory database. UTC and one thread are set
// on every connection: the zone decides how TIMESTAMPTZ is rendered and cast,
// and one thread makes the Parquet writer's output independent of scheduling.
func openDuckDB(ctx context.Context) (*sql.Conn, func(), error) { return openDuckDBThreads(ctx, 1) }

// openDuckDBThreads is openDuckDB with more threads, for writers whose row
// order does not depend on scheduling.
func openDuckDBThreads(ctx context.Context, threads int) (*sql.Conn, func(), error) {
	connector, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
		for _, s := range []string{`SET TimeZone = 'UTC'`, fmt.Sprintf(`SET threads = %d`, threads)} {
			if _, err := ex.ExecContext(ctx, s, nil); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		_ = connector.Close()
		return nil, nil, fmt.Errorf("connect duckdb: %w", err)
	}
	return conn, func() {
		_ = conn.Close()
		_ = db.Close()
		_ = connector.Close()
	}, nil
}

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

func (g *generator) copyRaw(ctx context.Context, conn *sql.Conn, ingest dates.Date) error {
	dir := filepath.Join(g.opts.Out, "raw", "ingest_date="+ingest.String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create raw partition: %w", err)
	}
	cols := "event_id, learner_key, lesson_id, course_id, event_time, client_payload"
	if g.opts.Variant == VariantProhibitedColumn {
		cols += `, "` + ProhibitedColumn + `"`
	}
	path := filepath.Join(dir, "part-0.parquet")
	lit := "DATE '" + ingest.String() + "'"
	q := fmt.Sprintf(`COPY (SELECT %s FROM raw WHERE ingest_date = %s ORDER BY event_id) TO %s %s`,
		cols, lit, sqlString(path), parquetOpts)
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM raw WHERE ingest_date = `+lit); err != nil {
		return fmt.Errorf("drop written rows of %s: %w", path, err)
	}
	return nil
}

// parquetOpts fixes the codec so the same inputs give the same bytes.
const parquetOpts = `(FORMAT parquet, COMPRESSION zstd)`

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// appendDims fills the lessons and enrollments tables: both pins of each.
func (g *generator) appendDims(dc driver.Conn) error {
	lessons, err := duckdb.NewAppender(dc, "", "", "lessons")
	if err != nil {
		return fmt.Errorf("open lessons appender: %w", err)
	}
	if err := g.appendLessons(lessons); err != nil {
		_ = lessons.Close()
		return err
	}
	if err := lessons.Close(); err != nil {
		return fmt.Errorf("flush lessons: %w", err)
	}
	enr, err := duckdb.NewAppender(dc, "", "", "enrollments")
	if err != nil {
		return fmt.Errorf("open enrollments appender: %w", err)
	}
	if err := g.appendEnrollments(enr); err != nil {
		_ = enr.Close()
		return err
	}
	if err := enr.Close(); err != nil {
		return fmt.Errorf("flush enrollments: %w", err)
	}
	return nil
}

func (g *generator) appendLessons(app *duckdb.Appender) error {
	add := func(manifest, id, course, title string) error {
		if err := app.AppendRow(manifest, id, course, title); err != nil {
			return fmt.Errorf("append lesson %s/%s: %w", manifest, id, err)
		}
		return nil
	}
	for _, l := range g.lessons {
		if err := add(ManifestID, l.id, g.courses[l.course].id, l.title); err != nil {
			return err
		}
	}
	if g.opts.Variant == VariantDuplicateLesson {
		hot := g.byCrs[0]
		l := g.lessons[hot[g.defRng.IntN(len(hot))]]
		if err := add(ManifestID, l.id, g.courses[l.course].id, l.title+" (duplicate)"); err != nil {
			return err
		}
		g.defects = map[string]int{"duplicate_lesson_ids": 1}
	}
	// The previous pin: the newest hot lesson did not exist yet, the first
	// SQL lesson still belonged to the Go course, lesson-missing was live.
	hot := g.byCrs[0]
	newest := hot[len(hot)-1]
	moved := g.byCrs[1][0]
	for i, l := range g.lessons {
		if int32(i) == newest {
			continue
		}
		course := g.courses[l.course].id
		if int32(i) == moved {
			course = g.courses[2].id
		}
		if err := add(PreviousManifestID, l.id, course, l.title+" (v1)"); err != nil {
			return err
		}
	}
	return add(PreviousManifestID, UnknownLessonID, g.courses[1].id, "Retired lesson")
}

func (g *generator) appendEnrollments(app *duckdb.Appender) error {
	nc := len(g.courses)
	var restatablePinned []int
	for l := range g.keys {
		for c := range nc {
			idx := l*nc + c
			pinned := g.enrolled(int32(l), c)
			if !g.pairAny.has(idx) {
				pinned = mix(g.opts.Seed, uint64(l), uint64(c), saltStray)%100 < strayEnrollPct
			}
			if pinned {
				if err := app.AppendRow(g.keys[l], g.courses[c].id, EnrollmentSnapshotID); err != nil {
					return fmt.Errorf("append enrollment: %w", err)
				}
				g.pinnedRows++
				if g.pairRestatable.has(idx) {
					restatablePinned = append(restatablePinned, idx)
				}
			}
			if mix(g.opts.Seed, uint64(l), uint64(c), saltPrevious)%100 < previousPct {
				if err := app.AppendRow(g.keys[l], g.courses[c].id, PreviousEnrollmentSnapshotID); err != nil {
					return fmt.Errorf("append enrollment: %w", err)
				}
			}
		}
	}
	if g.opts.Variant == VariantDuplicateEnrollment {
		// Duplicate a pair that has events on a restatable date so a job
		// that drops the uniqueness check double-counts real events.
		idx := restatablePinned[g.defRng.IntN(len(restatablePinned))]
		if err := app.AppendRow(g.keys[idx/nc], g.courses[idx%nc].id, EnrollmentSnapshotID); err != nil {
			return fmt.Errorf("append enrollment: %w", err)
		}
		g.pinnedRows++
		g.defects = map[string]int{"duplicate_enrollment_pairs": 1}
	}
	return nil
}

func (g *generator) copyDims(ctx context.Context, conn *sql.Conn) error {
	for _, t := range []struct{ table, order string }{
		{"lessons", "manifest_id, lesson_id, course_id, lesson_title"},
		{"enrollments", "snapshot_id, learner_key, course_id"},
	} {
		dir := filepath.Join(g.opts.Out, t.table)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s directory: %w", t.table, err)
		}
		path := filepath.Join(dir, "part-0.parquet")
		q := fmt.Sprintf(`COPY (SELECT * FROM %s ORDER BY %s) TO %s %s`, t.table, t.order, sqlString(path), parquetOpts)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// enrolled decides pinned-snapshot membership of a pair that has events. It
// is a pure function of the seed and the pair so the tally can use it before
// the snapshot is written.
func (g *generator) enrolled(learner int32, course int) bool {
	return mix(g.opts.Seed, uint64(learner), uint64(course), saltPinned)%100 < enrolledPct
}

func (g *generator) expected() Expected {
	e := Expected{
		Seed:                         g.opts.Seed,
		Events:                       g.opts.Events,
		Variant:                      g.opts.Variant,
		ManifestID:                   ManifestID,
		EnrollmentSnapshotID:         EnrollmentSnapshotID,
		PreviousManifestID:           PreviousManifestID,
		PreviousEnrollmentSnapshotID: PreviousEnrollmentSnapshotID,
		UnknownLessonID:              UnknownLessonID,
		HotCourse:                    HotCourse,
		LessonsInPin:                 len(g.lessons),
		EnrollmentRowsInPin:          g.pinnedRows,
		RestatementHorizonDays:       RestatementHorizonDays,
		NewestIngestDate:             NewestIngestDate,
		Dates:                        slices.Clone(RestatableDates),
		LateEvents:                   g.late,
		UnrestatedLateEvents:         g.stale,
		ByDate:                       map[dates.Date]DayFigures{},
		ByDateCourse:                 map[dates.Date]map[string]CourseFigures{},
		Defects:                      g.defects,
	}
	if g.opts.Variant == VariantDuplicateLesson {
		e.LessonsInPin++
	}
	for _, c := range g.courses {
		e.Courses = append(e.Courses, c.id)
	}
	for i, d := range g.days {
		t := g.tallies[i]
		fig := t.fig
		fig.Learners = int64(t.learners.count())
		fig.FactRows = int64(len(t.facts))
		e.ByDate[d.date] = fig
		per := map[string]CourseFigures{}
		for c, ct := range t.course {
			if ct.fig.Events == 0 {
				continue
			}
			cf := ct.fig
			cf.Learners = int64(ct.learners.count())
			per[g.courses[c].id] = cf
		}
		e.ByDateCourse[d.date] = per
	}
	if g.opts.Variant == VariantOverCap {
		over, unknown := 0, int64(0)
		for _, d := range RestatableDates {
			f := e.ByDate[d]
			unknown += f.Unknown
			if f.Unknown*50 > f.Events { // rate above the 2% default cap
				over++
			}
		}
		e.Defects = map[string]int{"over_cap_dates": over, "unknown_lesson_events": int(unknown)}
	}
	if g.opts.Variant == VariantProhibitedColumn {
		e.Defects = map[string]int{"prohibited_columns": 1}
	}
	return e
}

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
