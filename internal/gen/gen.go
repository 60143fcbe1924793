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
	// MaxFixtureEvents bounds the fixture shape, which holds every event in
	// memory (about 400 bytes each: 2 GB here): 60M events without --shape
	// design asked for 24 GB and was killed, leaving its --out behind.
	MaxFixtureEvents = 5_000_000
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
		if o.Events > MaxFixtureEvents {
			return fmt.Errorf("gen: events %d above the fixture shape's %d (it holds every event in memory); use --shape %s for a larger day", o.Events, MaxFixtureEvents, ShapeDesign)
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

// ErrOutNotEmpty: the output directory already holds files, which the
// command's caller must move (a usage error, not a failure to retry).
var ErrOutNotEmpty = errors.New("is not empty")

// prepareOut refuses a non-empty directory because mixing a previous run's
// partitions into a new dataset would silently change its figures.
func prepareOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil:
		if len(entries) > 0 {
			return fmt.Errorf("gen: output directory %s %w", dir, ErrOutNotEmpty)
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
