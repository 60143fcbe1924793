package spark

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/spark-connect-go/spark/sql/types"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
)

// Spark type names, matched exactly.
var rawColumns, manifestColumns, enrollmentColumns = engine.InputColumns([]string{"string"}, []string{"timestamp", "timestampntz"})

// schema asks Spark for one Parquet file's columns and types (Spark's type
// names, lower case: string, timestamp, timestampntz, ...). Asking per file
// (not once for the directory) is what lets an error name the file. The job
// checked every listed file's magic bytes before, for both engines alike.
func (e *Engine) schema(ctx context.Context, what, file string) (map[string]string, []string, error) {
	step := fmt.Sprintf("read the schema of %s file %s", what, file)
	df, err := e.session.Read().Format("parquet").Load(literalPath(file))
	if err != nil {
		return nil, nil, wrap(e.remote, step, err)
	}
	var st *types.StructType
	err = e.bounded(ctx, step, func(ctx context.Context) (err error) { st, err = df.Schema(ctx); return err })
	if err != nil {
		werr := wrap(e.remote, step, err)
		if se, ok := werr.(*Error); ok && se.Cause == "" && !transport(se.Class) && ctx.Err() == nil {
			// Not the cluster's failure, nor the connection's: the file's.
			se.Step += ": " + fileFault(se.Class)
		}
		return nil, nil, werr
	}
	typeOf := map[string]string{}
	var names []string
	for _, f := range st.Fields {
		typeOf[f.Name] = strings.ToLower(f.DataType.TypeName())
		names = append(names, f.Name)
	}
	return typeOf, names, nil
}

// schemaReaders is how many schema requests checkColumns keeps in flight.
const schemaReaders = 8

// transport reports a gRPC status the connection gave, not Spark: no
// file is to blame for it.
func transport(class string) bool {
	switch class {
	case "UNAVAILABLE", "CANCELED", "DEADLINE_EXCEEDED", "CLIENT", "UNKNOWN", "INTERNAL_ERROR":
		return true
	}
	return false
}

// fileFault says what Spark's failure to read a file's schema means for
// the file, by Spark's error class.
func fileFault(class string) string {
	switch class {
	case "PARQUET_TYPE_ILLEGAL", "PARQUET_TYPE_NOT_SUPPORTED", "PARQUET_TYPE_NOT_RECOGNIZED":
		// Spark names the type, not the column, and reads every column's
		// type, not only the five the job uses.
		return "a column's Parquet type is one Spark cannot read (in any column of the file, used by the job or not: " +
			"drop or retype it where the file is written, or, when the job does not read that column, publish with the duckdb engine)"
	case "COLUMN_ALREADY_EXISTS":
		return "a column name appears twice"
	}
	return "not a readable Parquet file"
}

// checkColumns verifies the required columns of every file of one input and
// returns the union of the column names seen.
func (e *Engine) checkColumns(ctx context.Context, what string, files []string, required []engine.Column) ([]string, error) {
	for _, f := range files {
		// Hadoop's local file system names a checksum file beside each
		// file it reads (.name.crc) and cannot parse that name when it
		// holds a colon; Spark then fails with no word of the file.
		if name := f[strings.LastIndex(f, "/")+1:]; !strings.Contains(f, "://") && strings.Contains(name, ":") {
			return nil, fmt.Errorf("%s file %s: Spark cannot read a local file whose name holds ':' (Hadoop takes it for a URI scheme): rename the file, or publish with --engine duckdb", what, f)
		}
	}
	step := fmt.Sprintf("read the schemas of %d %s files", len(files), what)
	e.step(step)
	// Each schema is a round trip and an analysis on the server (about
	// 50 ms); a few at a time, read ahead of the checks, which then take
	// them in the files' order, so the first error is the one a reading
	// one by one would meet.
	type read struct {
		types map[string]string
		names []string
		err   error
	}
	reads := make([]read, len(files))
	at := make(map[string]int, len(files))
	// Reading a schema runs a job on an executor: with none, it would
	// wait for ever, so the reads are watched as a statement is.
	err := e.watch(ctx, func(ctx context.Context) error {
		for i, f := range files {
			at[f] = i
		}
		bounded.Each(len(files), schemaReaders, func(i int) {
			r := &reads[i]
			r.types, r.names, r.err = e.schema(ctx, what, files[i])
		})
		return ctx.Err()
	})
	var se *Error
	if errors.As(err, &se) {
		se.Step = step
		return nil, se
	}
	schema := func(file string) (map[string]string, []string, error) {
		r := reads[at[file]]
		return r.types, r.names, r.err
	}
	// Spark names types exactly (string, timestamp, timestampntz).
	exact := func(typ string, want []string) bool { return slices.Contains(want, typ) }
	return engine.CheckColumns(what, files, required, schema, exact)
}

// Inspect implements engine.Engine.
func (e *Engine) Inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	spec, err := absSpec(spec)
	if err != nil {
		return engine.Inputs{}, err
	}
	in, err := e.inspect(ctx, spec)
	return in, e.namedDamage(ctx, spec, e.whereNotUTF8(ctx, spec, err))
}

func (e *Engine) inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	var in engine.Inputs
	rawFiles := spec.Inputs.RawPaths()
	in.Figures.RawFiles = len(rawFiles)
	union, err := e.checkColumns(ctx, "raw", rawFiles, rawColumns)
	if err != nil {
		return in, err
	}
	in.Figures.RawColumns = union
	check := func(what string, files []string, required []engine.Column) error {
		_, err := e.checkColumns(ctx, what, files, required)
		return err
	}
	if err := engine.CheckPinInputs(spec, manifestColumns, enrollmentColumns, check); err != nil {
		return in, err
	}
	in.PerDate()
	ev, err := e.eventCheck(ctx, spec, &in.Figures)
	if err != nil {
		return in, err
	}

	// The raw events' first pass and both pins are checked in one
	// statement, each part a scalar subquery of its own: a statement is a
	// Spark job with its fixed cost, and the subqueries run side by side,
	// so the pins' small stages (the enrollment file is one task) fill the
	// cores the event-id check's stages leave idle. The manifest's figures
	// are judged first, as if it ran alone.
	//
	// The longest title is measured in bytes (octet_length; Spark's length
	// counts characters) and ties go to the smallest lesson_id, nulls last,
	// as in the DuckDB engine, so both name the same lesson. A null
	// lesson_id is counted for its own check and kept out of the
	// duplicates, which name lessons.
	lessonPin := fmt.Sprintf("SELECT lesson_id, octet_length(lesson_title) AS title_bytes FROM %s WHERE manifest_id = %s",
		filesRel(spec.Inputs.LessonPaths(), manifestStrings), quote(spec.ManifestID))
	enrollRel := filesRel(spec.Inputs.EnrollmentPaths(), enrollmentStrings)
	enrollPin := fmt.Sprintf("SELECT learner_key, course_id FROM %s WHERE snapshot_id = %s", enrollRel, quote(spec.EnrollmentSnapshotID))
	// The enrollment rows and the repeated pairs in one pass over the pin
	// (each row is in exactly one group), grouped by a 64-bit hash of the
	// pair as the event ids are: a collision can only make a repeat
	// appear, so a pass by the pair itself runs only when one does, and
	// the sample of repeated pairs only when that pass confirms one. The
	// hashes are distributed before they are grouped: nearly every pair is
	// distinct, so a partial aggregate before the shuffle would only widen
	// its rows.
	// A pair with a null key joins no event: its repeats are no duplicate
	// enrollment (its hash is null, and null is not counted as a repeat).
	hashed := fmt.Sprintf(`SELECT k, count(*) AS n FROM (SELECT CASE WHEN learner_key IS NOT NULL AND course_id IS NOT NULL THEN %s END AS k FROM (%s) DISTRIBUTE BY k) GROUP BY k`,
		e.hashOf("learner_key, course_id"), enrollPin)
	var dupLessons string
	var hashRepeats int64
	// One subquery returns a struct where a part gives several figures,
	// so none is computed twice.
	what := "check manifest " + spec.Lessons + " and enrollments " + spec.Enrollments
	if ev.query != "" {
		what = "check raw event ids " + spec.Raw + ", manifest " + spec.Lessons + " and enrollments " + spec.Enrollments
	}
	dest := append(ev.dest, &in.Figures.ManifestRows, &in.Figures.NullLessonIDs, &dupLessons, &in.Figures.LongestTitleBytes, &in.Figures.LongestTitleLesson,
		&in.Figures.EnrollmentRows, &hashRepeats)
	if err := e.scan(ctx, what, fmt.Sprintf(`WITH pin AS (%s)
		SELECT %sm.rows, m.null_ids, dups, longest.bytes, longest.lesson_id, en.rows, en.repeats FROM (SELECT%s
		  (SELECT named_struct('rows', count(*), 'null_ids', count_if(lesson_id IS NULL)) FROM pin) AS m,
		  (SELECT concat_ws(char(1), sort_array(collect_list(lesson_id))) FROM
		     (SELECT lesson_id FROM pin WHERE lesson_id IS NOT NULL GROUP BY lesson_id HAVING count(*) > 1 ORDER BY lesson_id LIMIT 20)) AS dups,
		  (SELECT named_struct('bytes', CAST(title_bytes AS BIGINT), 'lesson_id', lesson_id) FROM pin WHERE title_bytes IS NOT NULL
		     ORDER BY title_bytes DESC, lesson_id ASC NULLS LAST LIMIT 1) AS longest,
		  (SELECT named_struct('rows', CAST(coalesce(sum(n), 0) AS BIGINT), 'repeats', count_if(n > 1 AND k IS NOT NULL)) FROM (%s)) AS en)`,
		lessonPin, ev.fields, ev.query, hashed), dest...); err != nil {
		return in, err
	}
	if err := e.eventExact(ctx, spec, ev, &in); err != nil {
		return in, err
	}
	if in.Figures.ManifestRows == 0 {
		return in, e.noPin(ctx, "lessons", spec.Lessons, filesRel(spec.Inputs.LessonPaths(), manifestStrings), "manifest_id", spec.ManifestID, "--manifest-id")
	}
	in.Figures.DuplicateLessonIDs = splitList(dupLessons)
	if in.Figures.EnrollmentRows == 0 {
		return in, e.noPin(ctx, "enrollments", spec.Enrollments, enrollRel, "snapshot_id", spec.EnrollmentSnapshotID, "--enrollment-snapshot-id")
	}
	what = "check enrollments " + spec.Enrollments
	pairs := func(cols string) string {
		return fmt.Sprintf(`SELECT %s, count(*) AS n FROM (%s) WHERE learner_key IS NOT NULL AND course_id IS NOT NULL GROUP BY %[1]s`, cols, enrollPin)
	}
	in.Figures.DuplicateEnrollCount = 0
	if hashRepeats == 0 {
		return in, nil
	}
	exact := pairs("learner_key, course_id")
	if err := e.scan(ctx, what, fmt.Sprintf(`SELECT count_if(n > 1) FROM (%s)`, exact), &in.Figures.DuplicateEnrollCount); err != nil {
		return in, err
	}
	if in.Figures.DuplicateEnrollCount == 0 {
		return in, nil
	}
	sample, err := e.strings(ctx, what, fmt.Sprintf(`SELECT coalesce(learner_key, '<null>') || '|' || coalesce(course_id, '<null>') AS pair
		FROM (%s) WHERE n > 1 ORDER BY pair LIMIT 5`, exact))
	if err != nil {
		return in, err
	}
	in.Figures.DuplicateEnrollments = sample
	return in, nil
}

// eventPass is the first pass of the raw events' check, as a part of
// Inspect's one statement: query is a scalar subquery and its alias on
// lines of their own, ending in a comma (empty when the read window holds
// no raw file), fields the outer columns that read its struct (ending in
// a comma too), dest where they go (the null counts straight into the
// input figures). Only hashRepeats says whether eventExact has more to do.
type eventPass struct {
	query, fields string
	dest          []any
	hashRepeats   int64
	// Per requested date: its events, and those the window holds past
	// its own window, before it, and in its own partition.
	counts, late, early, own []int64
	keyed                    func(key string) string
	// Past perDateAggregates dates the per-date figures come grouped, in
	// byDate: "i:d:l:e:o" a date with events, comma separated, i the
	// date's 1-based distance from first, the earliest requested date.
	grouped bool
	first   dates.Date
	byDate  string
}

// eventCheck prepares the check of the raw events that cannot be placed
// or counted once, with the DuckDB engine's meaning: a null event_time
// anywhere in the read window, a null event_id among the events of the
// requested dates, and an event_id of one of them that the read window
// holds twice, with a sorted sample of five repeated ids (eventExact).
// Every event of the window with an id or without a time reaches the
// shuffle: a copy on another date is a repeat too.
//
// The first pass keys each event by a 64-bit hash of event_id, not by the
// string: equal ids hash alike, so no repeated hash means no repeated id,
// and on the design day the shuffle carries a long a row instead of the id.
// Its other counts do not depend on the key and are exact. A repeated hash
// may be a collision, so only then does an exact pass group by the id
// itself, and only when that finds repeats does a third name five of them.
func (e *Engine) eventCheck(ctx context.Context, spec engine.Spec, f *gate.InputFigures) (*eventPass, error) {
	n := len(spec.Dates)
	p := &eventPass{counts: make([]int64, n), late: make([]int64, n), early: make([]int64, n), own: make([]int64, n)}
	if len(spec.Inputs.Raw) == 0 {
		return p, nil
	}
	if _, err := e.registerRaw(ctx, spec); err != nil {
		return nil, err
	}
	// Each requested date's events are counted in the same scan: the
	// silent-drop figures Stage audits against, so a publish reads raw
	// twice in all, here and for the fact grain.
	//
	// Each event reaches the shuffle as its key and one packed integer f:
	// bit 0 a null event_time, bit 1 a requested date's event in its own
	// window, bit 2 one past it (late: counted nowhere, but a sign of an
	// outage), bit 3 one in a partition before the date (early: counted
	// nowhere, warned of), bit 4 one in the date's own partition, bit 5 an
	// event of a date not requested outside its partition's own window
	// (stray: no publish counts it), bit 6 an event_time outside the years
	// 0001 to 9999 (refused with the null ones, not stray), f >> 7 the
	// 1-based index of the requested date: its place in spec.Dates, or
	// past perDateAggregates dates its distance from the first (grouped).
	var dateIdx, perDate, fields []string
	index := ""
	if p.grouped = n > e.perDateAggregates(); p.grouped {
		p.first = slices.Min(spec.Dates)
		index = fmt.Sprintf("128 * (datediff(event_date, DATE %s) + 1)", quote(p.first.String()))
	} else {
		for i, d := range spec.Dates {
			dateIdx = append(dateIdx, fmt.Sprintf("WHEN DATE %s THEN %d", quote(d.String()), 128*(i+1)))
			perDate = append(perDate, fmt.Sprintf(", 'd%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 2) = 2), 'l%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 4) = 4)"+
				", 'e%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 8) = 8), 'o%[1]d', count_if(shiftright(f, 7) = %[2]d AND (f & 16) = 16)", i, i+1))
			fields = append(fields, fmt.Sprintf("ev.d%[1]d, ev.l%[1]d, ev.e%[1]d, ev.o%[1]d, ", i))
		}
		index = "CASE event_date " + strings.Join(dateIdx, " ") + " END"
	}
	// keyed is every event as (k, f); key is an expression of event_id
	// that is null exactly when event_id is.
	p.keyed = func(key string) string {
		return fmt.Sprintf(`SELECT %s AS k,
		       CASE WHEN event_time IS NULL THEN 1 ELSE 0 END + CASE WHEN requested THEN 2 ELSE 0 END + CASE WHEN late THEN 4 ELSE 0 END
		       + CASE WHEN early THEN 8 ELSE 0 END + CASE WHEN requested AND ingest_date = event_date THEN 16 ELSE 0 END
		       + CASE WHEN stray THEN 32 ELSE 0 END + CASE WHEN oor THEN 64 ELSE 0 END
		       + CASE WHEN requested OR late OR early THEN %[2]s ELSE 0 END AS f
		FROM (SELECT event_id, event_time, event_date, ingest_date, oor, coalesce(event_date IN %[3]s AND %[4]s, false) AS requested,
		             coalesce(event_date IN %[3]s AND ingest_date > date_add(event_date, %[9]d), false) AS late,
		             coalesce(event_date IN %[3]s AND ingest_date < event_date, false) AS early,
		             coalesce(NOT (event_date IN %[3]s) AND NOT (%[4]s) AND NOT oor, false) AS stray
		      FROM (SELECT event_id, event_time, %[5]s AS event_date, ingest_date, coalesce(%[10]s, false) AS oor FROM %[6]s
		            WHERE ingest_date BETWEEN DATE %[7]s AND DATE %[8]s))
		WHERE event_time IS NULL OR requested OR late OR early OR stray OR oor OR event_id IS NOT NULL`,
			key, index, dateList(spec.Dates), ownWindow(spec.LatenessDays), eventDateExpr, rawView,
			quote(spec.IngestFrom.String()), quote(spec.IngestTo.String()), spec.LatenessDays, outOfRangeExpr)
	}
	// The first pass counts, beside each requested event, the events that
	// share its hash: a window over the hash, which Spark runs as a sort of
	// one long column and a streaming count. A GROUP BY of the same hashes
	// ran a partial and then a final hash aggregate over nearly distinct
	// keys, one after the other in the same tasks; on the design day the
	// window spent 15% less executor time. Only whether some hash repeats
	// matters here (the exact pass counts the repeats).
	windowed := fmt.Sprintf("SELECT k, f, count(1) OVER (PARTITION BY k) AS n FROM (%s)",
		p.keyed("CASE WHEN event_id IS NOT NULL THEN "+e.hashOf("event_id")+" END"))
	if p.grouped {
		// Four aggregates and a WHEN a date cost rows x dates (a 200-date
		// publish of 800,000 events spent 70 s in inspect, 32 s so): on
		// many dates the windowed rows are grouped by their date's index,
		// a hash aggregate of at most dates + 1 groups in the window's own
		// tasks, and the groups' figures are summed and listed in the one
		// row. Raw is still read once here.
		p.query = fmt.Sprintf(`
		  (SELECT named_struct('null_times', CAST(coalesce(sum(nt), 0) AS BIGINT),
		     'null_ids', CAST(coalesce(sum(ni), 0) AS BIGINT),
		     'repeats', CAST(coalesce(sum(rep), 0) AS BIGINT),
		     'stray', CAST(coalesce(sum(st), 0) AS BIGINT),
		     'oor', CAST(coalesce(sum(oo), 0) AS BIGINT),
		     'by_date', concat_ws(',', collect_list(CASE WHEN i > 0 THEN format_string('%%d:%%d:%%d:%%d:%%d', i, d, l, e, o) END)))
		   FROM (SELECT shiftright(f, 7) AS i, count_if((f & 1) = 1) AS nt, count_if(k IS NULL AND (f & 2) = 2) AS ni,
		           count_if(k IS NOT NULL AND (f & 2) = 2 AND n > 1) AS rep, count_if((f & 2) = 2) AS d,
		           count_if((f & 4) = 4) AS l, count_if((f & 8) = 8) AS e, count_if((f & 16) = 16) AS o,
		           count_if((f & 32) = 32) AS st, count_if((f & 64) = 64) AS oo
		         FROM (%s) GROUP BY shiftright(f, 7))) AS ev,`, windowed)
		p.fields = "ev.null_times, ev.null_ids, ev.repeats, ev.stray, ev.oor, ev.by_date, "
		p.dest = []any{&f.NullEventTimes, &f.NullEventIDs, &p.hashRepeats, &f.StrayEvents, &f.OutOfRangeEventTimes, &p.byDate}
		return p, nil
	}
	p.query = fmt.Sprintf(`
		  (SELECT named_struct('null_times', CAST(count_if((f & 1) = 1) AS BIGINT),
		     'null_ids', CAST(count_if(k IS NULL AND (f & 2) = 2) AS BIGINT),
		     'repeats', CAST(count_if(k IS NOT NULL AND (f & 2) = 2 AND n > 1) AS BIGINT),
		     'stray', CAST(count_if((f & 32) = 32) AS BIGINT),
		     'oor', CAST(count_if((f & 64) = 64) AS BIGINT)%s)
		   FROM (%s)) AS ev,`,
		strings.Join(perDate, ""), windowed)
	p.fields = "ev.null_times, ev.null_ids, ev.repeats, ev.stray, ev.oor, " + strings.Join(fields, "")
	p.dest = []any{&f.NullEventTimes, &f.NullEventIDs, &p.hashRepeats, &f.StrayEvents, &f.OutOfRangeEventTimes}
	for i := range p.counts {
		p.dest = append(p.dest, &p.counts[i], &p.late[i], &p.early[i], &p.own[i])
	}
	return p, nil
}

// eventExact files the first pass's figures and, when a hash repeated,
// counts the repeated ids exactly and names five of them.
func (e *Engine) eventExact(ctx context.Context, spec engine.Spec, p *eventPass, in *engine.Inputs) error {
	if p.query == "" {
		return nil
	}
	f := &in.Figures
	if p.grouped {
		if err := p.fromByDate(spec.Dates); err != nil {
			return fmt.Errorf("spark %s: check raw event ids %s: %w", e.remote, spec.Raw, err)
		}
	}
	for i, d := range spec.Dates {
		in.Events[d], in.Late[d], in.Early[d], in.Own[d] = p.counts[i], p.late[i], p.early[i], p.own[i]
	}
	if f.NullEventTimes > 0 || f.OutOfRangeEventTimes > 0 {
		// Which: the read window may hold thousands of files. The rows as
		// DuckDB's sample names them (engine.NullTimeSampleSQL).
		concat := func(parts ...string) string { return "concat(" + strings.Join(parts, ", ") + ")" }
		rows, err := e.strings(ctx, "check raw event times "+spec.Raw, fmt.Sprintf(
			"SELECT %s AS s FROM %s WHERE (event_time IS NULL OR %s) AND ingest_date BETWEEN DATE %s AND DATE %s ORDER BY s LIMIT 5",
			engine.NullTimeSampleSQL(concat, "CAST(ingest_date AS STRING)"), rawView, outOfRangeExpr, quote(spec.IngestFrom.String()), quote(spec.IngestTo.String())))
		if err != nil {
			return err
		}
		f.NullEventTimeSample = engine.NullTimeSample(rows)
	}
	f.DuplicateEventIDs = 0
	if p.hashRepeats == 0 {
		return nil
	}
	what := "check raw event ids " + spec.Raw
	// The rows are distributed by the id before they are grouped: nearly
	// every id is distinct, so a partial aggregate before the shuffle would
	// only widen the rows.
	// The extra copies of each id repeated in the window with a copy of a
	// requested date.
	exact := fmt.Sprintf(`SELECT k, count(1) AS n, count_if((f & 2) = 2) AS n_requested FROM (%s DISTRIBUTE BY k) GROUP BY k`, p.keyed("event_id"))
	if err := e.scan(ctx, what, fmt.Sprintf(
		"SELECT CAST(coalesce(sum(CASE WHEN k IS NOT NULL AND n > 1 AND n_requested > 0 THEN n - 1 ELSE 0 END), 0) AS BIGINT) FROM (%s)", exact),
		&f.DuplicateEventIDs); err != nil {
		return err
	}
	if f.DuplicateEventIDs == 0 {
		return nil
	}
	sample, err := e.strings(ctx, what, fmt.Sprintf(
		"SELECT k FROM (%s) WHERE k IS NOT NULL AND n > 1 AND n_requested > 0 ORDER BY k LIMIT 5", exact))
	if err != nil {
		return err
	}
	f.DuplicateEventIDSample = sample
	return nil
}

// perDateAggregates is the most dates eventCheck counts with aggregates of
// their own; past it, grouped by the date's index. The design day (2
// dates) and the ten-date backfill of the benchmark keep the statement
// they were measured with. A test may set its own (aggregatesUpTo).
func (e *Engine) perDateAggregates() int {
	if e.aggregatesUpTo != 0 {
		return e.aggregatesUpTo
	}
	return 16
}

// fromByDate files the grouped pass's per-date figures (byDate) by the
// requested dates' places.
func (p *eventPass) fromByDate(ds []dates.Date) error {
	if p.byDate == "" {
		return nil // no requested date has an event
	}
	at := make(map[dates.Date]int, len(ds))
	for i, d := range ds {
		at[d] = i
	}
	for _, g := range strings.Split(p.byDate, ",") {
		var idx, d, l, e, o int64
		if _, err := fmt.Sscanf(g, "%d:%d:%d:%d:%d", &idx, &d, &l, &e, &o); err != nil {
			return fmt.Errorf("per-date figures %q: %w", g, err)
		}
		i, ok := at[p.first.AddDays(int(idx-1))]
		if !ok {
			// Only a requested date's events have an index.
			return fmt.Errorf("per-date figures %q: index %d is no requested date", g, idx)
		}
		p.counts[i], p.late[i], p.early[i], p.own[i] = d, l, e, o
	}
	return nil
}

// noPin explains a pin with no rows: a wrong argument, not an empty input.
// The error lists the pins that do exist.
func (e *Engine) noPin(ctx context.Context, what, path, rel, col, pin, flag string) error {
	present, err := e.strings(ctx, "read "+what+" "+path, fmt.Sprintf(
		"SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL ORDER BY 1 DESC LIMIT %d", col, rel, col, engine.PinsShown+1))
	if err != nil {
		return err
	}
	return engine.NoPinError(flag, pin, col, path, present)
}

// splitList splits what concat_ws(char(1), …) joined; nil for none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x01")
}

func (e *Engine) strings(ctx context.Context, what, q string) ([]string, error) {
	rows, err := e.rows(ctx, what, q)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		s, _ := r.At(0).(string)
		out = append(out, s)
	}
	return out, nil
}

// scan runs a one-row query and stores its columns in dst, each an *int64
// or a *string (null becomes 0 or "").
func (e *Engine) scan(ctx context.Context, what, q string, dst ...any) error {
	rows, err := e.rows(ctx, what, q)
	if err != nil {
		return err
	}
	if len(rows) != 1 || rows[0].Len() != len(dst) {
		return fmt.Errorf("spark %s: %s: unexpected result shape", e.remote, what)
	}
	for i, p := range dst {
		v := rows[0].At(i)
		switch p := p.(type) {
		case *int64:
			n, err := asInt(v)
			if err != nil {
				return fmt.Errorf("spark %s: %s: %w", e.remote, what, err)
			}
			*p = n
		case *string:
			*p, _ = v.(string)
		}
	}
	return nil
}

func asInt(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected number %v (%T)", v, v)
}

// whereNotUTF8 names, after a statement failed on a string that is not
// UTF-8 (utf8Checked), the input file and the column holding one: Spark's
// error gives only the bytes. It reads each input once, unvalidated, and
// returns err with the first such file and column in front; err itself
// when the error is another or none is found.
func (e *Engine) whereNotUTF8(ctx context.Context, spec engine.Spec, err error) error {
	var se *Error
	// The input checks' scalar subqueries run in parallel, and wrap the
	// class in one line saying only "Exception thrown in awaitResult:".
	if !errors.As(err, &se) || se.Class != "INVALID_UTF8_STRING" && !(se.Class == "SparkException" && strings.Contains(se.Msg, "awaitResult")) {
		return err
	}
	for _, in := range []struct {
		what  string
		files []string
		cols  []string
	}{
		{"raw", spec.Inputs.RawPaths(), rawStrings},
		{"lessons", spec.Inputs.LessonPaths(), manifestStrings},
		{"enrollments", spec.Inputs.EnrollmentPaths(), enrollmentStrings},
	} {
		var parts, firsts []string
		for _, s := range scans(in.files) {
			parts = append(parts, fmt.Sprintf("SELECT _metadata.file_path AS f, %s FROM %s", strings.Join(in.cols, ", "), s))
		}
		for _, c := range in.cols {
			firsts = append(firsts, fmt.Sprintf("min(CASE WHEN NOT is_valid_utf8(%s) THEN f END)", c))
		}
		if len(parts) == 0 {
			continue
		}
		found := make([]string, len(in.cols))
		dst := make([]any, len(found))
		for i := range found {
			dst[i] = &found[i]
		}
		if e.scan(ctx, "find the string that is not UTF-8", fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(firsts, ", "), strings.Join(parts, "\nUNION ALL\n")), dst...) != nil {
			return err
		}
		for i, f := range found {
			if f != "" {
				return fmt.Errorf("%s file %s: column %s holds a value that is not valid UTF-8: %w", in.what, localName(f), in.cols[i], err)
			}
		}
	}
	return err
}

// localName is a file path as Spark's _metadata.file_path gives it
// (file:/a/b%20c), as the job listed it (/a/b c), and s3a:// as s3://,
// the scheme the job names it by.
func localName(p string) string {
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
		return u.Path
	}
	if rest, ok := strings.CutPrefix(p, "s3a://"); ok {
		return "s3://" + rest
	}
	return p
}
