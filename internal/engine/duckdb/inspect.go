package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/engine"
)

// DuckDB type families, matched by prefix (hasPrefix).
var rawColumns, manifestColumns, enrollmentColumns = engine.InputColumns([]string{"VARCHAR"}, []string{"TIMESTAMP"})

// schema reads one Parquet file's column names and types on conn (the
// engine's own, or one of checkColumns' readers). Reading
// the footer of every file (not only the first) is what lets an error name
// the file. The job has checked every listed file's magic bytes already.
func (e *Engine) schema(ctx context.Context, conn *sql.Conn, what, file string) (map[string]string, []string, error) {
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("DESCRIBE SELECT * FROM read_parquet(%s, hive_partitioning=false)", FileRef(file)))
	if err != nil {
		return nil, nil, fmt.Errorf("%s file %s: %s: %w", what, file, readFault(err), firstLine(err))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	types := map[string]string{}
	var names []string
	var sig strings.Builder // names and types in order, for rawLayout
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, fmt.Errorf("%s file %s: schema: %w", what, file, err)
		}
		name, _ := vals[0].(string)
		typ, _ := vals[1].(string)
		types[name] = typ
		names = append(names, name)
		fmt.Fprintf(&sig, "%q %q\n", name, typ)
		if what == "raw" && name == "event_time" {
			e.typesMu.Lock()
			e.eventTimeTypes[file] = typ
			e.typesMu.Unlock()
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s file %s: %s: %w", what, file, readFault(err), firstLine(err))
	}
	if what == "raw" {
		e.typesMu.Lock()
		e.rawSchemas[file] = sig.String()
		e.typesMu.Unlock()
	}
	// DuckDB renames a repeated column name (lesson_id, then lesson_id_1,
	// or LESSON_ID) and reads the first: the footer's own names are
	// what CheckColumns judges for repeats.
	names, err = footerNames(ctx, conn, file)
	if err != nil {
		return nil, nil, fmt.Errorf("%s file %s: %s: %w", what, file, readFault(err), firstLine(err))
	}
	return types, names, nil
}

// readFault says whose fault a failed read of a file's footer is: a
// transport failure (the store did not answer, or answered with an HTTP
// error) is not the file's, nor is running out of the memory the config
// allows, and the person on call must not be sent to whoever wrote it.
func readFault(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "Out of Memory Error") {
		return "reading it ran out of memory"
	}
	// httpfs words a reply that never came as "Server returned nothing (no
	// headers, no data) error for HTTP HEAD"; the others as they read.
	for _, s := range []string{"HTTP Error", "Could not connect", "Could not resolve hostname", "Connection error", "Timeout",
		"Server returned nothing", "error for HTTP HEAD", "error for HTTP GET"} {
		if strings.Contains(msg, s) {
			return "could not be read from the store"
		}
	}
	return "not a readable Parquet file"
}

// footerNames are a Parquet file's top-level column names as its footer
// spells them, in order. parquet_schema lists the schema tree in
// pre-order, the root first, each node with its number of children.
func footerNames(ctx context.Context, conn *sql.Conn, file string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT name, coalesce(num_children, 0) FROM parquet_schema(%s)", FileRef(file)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []string
	var kids []int64
	for rows.Next() {
		var n string
		var k int64
		if err := rows.Scan(&n, &k); err != nil {
			return nil, err
		}
		all, kids = append(all, n), append(kids, k)
	}
	if err := rows.Err(); err != nil || len(all) == 0 {
		return nil, err
	}
	var top []string
	i := 1
	for n := int64(0); n < kids[0] && i < len(all); n++ {
		top = append(top, all[i])
		// Skip the column's subtree: pending counts its nodes not yet passed.
		for pending := int64(1); pending > 0 && i < len(all); i++ {
			pending += kids[i] - 1
		}
	}
	return top, nil
}

// checkColumns verifies the required columns of every file of one input and
// returns the union of the column names seen. The files' schemas are read
// several at a time, each reader on a connection of its own (DuckDB runs a
// connection's statements one after another, and a DESCRIBE waits on its
// file's footer): on an object store each file costs requests, and 1,050
// small raw files took 2.9 s one at a time against a server on the same
// machine (docs/benchmark.md, run 39). The checks still run file by file
// in listing order, so the first bad file is the one named.
func (e *Engine) checkColumns(ctx context.Context, what string, files []string, required []engine.Column) ([]string, error) {
	type read struct {
		types map[string]string
		names []string
		err   error
		own   bool // read on the engine's own connection
		done  bool
	}
	reads := make([]read, len(files))
	conns := e.readers(ctx, min(len(files), schemaReaders))
	pool := make(chan *sql.Conn, len(conns))
	for _, c := range conns {
		pool <- c
	}
	// Past a failed read the later files are not read: the checks stop at
	// that file, or at an earlier one.
	bounded.First(len(files), len(conns), func(i int) error {
		conn := <-pool
		defer func() { pool <- conn }()
		r := &reads[i]
		r.types, r.names, r.err = e.schema(ctx, conn, what, files[i])
		r.own, r.done = conn == e.conn, true
		return r.err
	})
	for _, c := range conns[1:] {
		c.Close()
	}
	// A read that failed on a reader's connection is made again on the
	// engine's own, and so are the reads its failure skipped, so the
	// outcome is the one reads one at a time give: a reader may have run
	// out of memory beside the others, where one read alone fits.
	for i := range reads {
		r := &reads[i]
		if !r.done || (r.err != nil && !r.own) {
			r.types, r.names, r.err = e.schema(ctx, e.conn, what, files[i])
			r.own, r.done = true, true
		}
		if r.err != nil {
			break
		}
	}
	// CheckColumns asks for the files' schemas once each, in order.
	next := 0
	schema := func(string) (map[string]string, []string, error) {
		r := reads[next]
		next++
		return r.types, r.names, r.err
	}
	return engine.CheckColumns(what, files, required, schema, hasPrefix)
}

// schemaReaders is how many files' schemas checkColumns reads at once:
// each read waits on a request or two (benchmark.md, run 39: with 10 ms
// added to each request, 8 readers took 3.3 s for 1,050 files, 16 took
// 2.0 s).
const schemaReaders = 16

// readers are n connections to read on (one at least): the engine's own
// first, then new ones, which the caller closes. A new connection shares
// the database's extensions, S3 secret and global settings, not the
// engine's temporary tables; it runs the engine's SET statements of the
// settings DuckDB keeps per connection (an extension's:
// s3_url_compatibility_mode, http_retries, the config's httpfs keys).
// When a new connection cannot be made so (at a memory limit of a few KB
// even the settings query fails), the engine's own is the one reader, and
// the files' reads on it name what is wrong.
func (e *Engine) readers(ctx context.Context, n int) []*sql.Conn {
	conns := []*sql.Conn{e.conn}
	if n < 2 {
		return conns
	}
	local, err := e.localSets(ctx)
	for err == nil && len(conns) < n {
		var c *sql.Conn
		if c, err = e.db.Conn(ctx); err != nil {
			break
		}
		conns = append(conns, c)
		for _, q := range local {
			if _, err = c.ExecContext(ctx, q); err != nil {
				break
			}
		}
	}
	if err != nil {
		for _, c := range conns[1:] {
			c.Close()
		}
		return conns[:1]
	}
	return conns
}

// localSets are the engine's SET statements (set) of the settings its
// connection keeps as its own, by name.
func (e *Engine) localSets(ctx context.Context) ([]string, error) {
	names, err := e.strings(ctx, "SELECT name FROM duckdb_settings() WHERE scope = 'LOCAL' ORDER BY name")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range names {
		if q, ok := e.sets[strings.ToLower(k)]; ok {
			out = append(out, q)
		}
	}
	return out, nil
}

// hasPrefix matches DuckDB type families: TIMESTAMP also accepts
// TIMESTAMP WITH TIME ZONE and TIMESTAMP_NS. A list or an array of one
// (VARCHAR[], TIMESTAMP[3]) is not a member: Spark refuses it too.
func hasPrefix(typ string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(typ, p) && !strings.Contains(typ, "[") {
			return true
		}
	}
	return false
}

// Inspect implements engine.Engine. A read that failed on a damaged file
// without naming it is traced to the file (namedDamage).
func (e *Engine) Inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	in, err := e.inspect(ctx, spec)
	return in, e.outOfMemory(e.namedDamage(ctx, spec, err))
}

func (e *Engine) inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	var in engine.Inputs
	rawFiles := spec.Inputs.RawPaths()
	in.Figures.RawFiles = len(rawFiles)
	step := func(what string) { e.reporter().Step(0, 0, 0, what) }
	step(fmt.Sprintf("raw columns: %d files", len(rawFiles)))
	union, err := e.checkColumns(ctx, "raw", rawFiles, rawColumns)
	if err != nil {
		return in, err
	}
	in.Figures.RawColumns = union
	in.PerDate()
	// The input count folds the day ranges as the stage does, so it runs
	// without statistics propagation too (asWritten).
	step(fmt.Sprintf("event identity and input counts: %d files", len(rawFiles)))
	if err := e.withOptimizersOff(ctx, []string{rawStats}, func() error { return e.eventIdentity(ctx, spec, rawFiles, &in) }); err != nil {
		return in, err
	}

	step("manifest and enrollment pins")
	if err := e.withOptimizersOff(ctx, pinSafe, func() error { return e.inspectPins(ctx, spec, &in) }); err != nil {
		return in, err
	}
	return in, nil
}

// inspectPins checks the manifest and enrollment pins and counts their
// figures into in, every statement reading every row group (pinSafe).
func (e *Engine) inspectPins(ctx context.Context, spec engine.Spec, in *engine.Inputs) error {
	var err error
	check := func(what string, files []string, required []engine.Column) error {
		_, err := e.checkColumns(ctx, what, files, required)
		return err
	}
	if err := engine.CheckPinInputs(spec, manifestColumns, enrollmentColumns, check); err != nil {
		return err
	}
	lessons, enrollments := spec.Inputs.LessonPaths(), spec.Inputs.EnrollmentPaths()

	if in.Figures.ManifestRows, err = e.pinRows(ctx, "lessons", spec.Lessons, lessons, "manifest_id", spec.ManifestID, "--manifest-id"); err != nil {
		return err
	}
	pin := fmt.Sprintf("FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s", FileList(lessons), pinFilter("manifest_id", spec.ManifestID))
	// A null lesson_id is no key at all: counted for its own check and kept
	// out of the duplicate and title figures, which name lessons.
	if err := e.conn.QueryRowContext(ctx, "SELECT count(*) FILTER (WHERE lesson_id IS NULL) "+pin).Scan(&in.Figures.NullLessonIDs); err != nil {
		return fmt.Errorf("check manifest %s: %w", spec.Lessons, firstLine(err))
	}
	dupLessons, err := e.strings(ctx, `SELECT lesson_id `+pin+` AND lesson_id IS NOT NULL
		 GROUP BY lesson_id HAVING count(*) > 1 ORDER BY lesson_id LIMIT 20`)
	if err != nil {
		return fmt.Errorf("check manifest %s: %w", spec.Lessons, firstLine(err))
	}
	in.Figures.DuplicateLessonIDs = dupLessons
	titles, err := e.conn.QueryContext(ctx, `SELECT lesson_id, strlen(lesson_title) `+pin+`
		 AND lesson_title IS NOT NULL ORDER BY 2 DESC, 1 NULLS LAST LIMIT 1`)
	if err != nil {
		return fmt.Errorf("check manifest %s: %w", spec.Lessons, firstLine(err))
	}
	for titles.Next() {
		var lesson sql.NullString
		if err := titles.Scan(&lesson, &in.Figures.LongestTitleBytes); err != nil {
			titles.Close()
			return fmt.Errorf("check manifest %s: %w", spec.Lessons, err)
		}
		in.Figures.LongestTitleLesson = lesson.String
	}
	titles.Close()
	if err := titles.Err(); err != nil {
		return fmt.Errorf("check manifest %s: %w", spec.Lessons, firstLine(err))
	}
	return e.checkEnrollments(ctx, spec, enrollments, in)
}

// eventIdentity counts, before any join, the raw events that cannot be
// placed or counted once: a null event_time anywhere in the read window (its
// event date is unknown, so every requested date may be missing it), a
// null event_id among the events of the requested dates, and an event_id
// of one of them that the read window holds twice (an at-least-once
// producer's redelivery would otherwise be counted twice; a correction that
// moved the event across midnight, once on each date, when the two dates
// are published apart). A repeat among other dates' events alone is not
// this publish's to judge.
//
// The same scan counts each requested date's events (events): the
// silent-drop figures Stage audits its output against, so a publish reads
// raw twice in all, here and for the fact grain (three times where the
// ids' hashes outgrow memory). It groups the events (eventgroups.go).
func (e *Engine) eventIdentity(ctx context.Context, spec engine.Spec, rawFiles []string, in *engine.Inputs) error {
	if len(rawFiles) == 0 {
		return nil
	}
	f := &in.Figures
	rr, err := e.rawLayout(ctx, rawFiles)
	if err != nil {
		return fmt.Errorf("check raw event ids %s: %w", spec.Raw, err)
	}
	kept, err := e.keptFit(ctx, rawFiles)
	if err != nil {
		return fmt.Errorf("check raw event ids %s: %w", spec.Raw, err)
	}
	w := dayWindowOf(spec)
	raw := fmt.Sprintf("SELECT event_id, event_time, %s AS ingest_date FROM %s", ingestDateOf(sourceFileColumn), rawScan(rawFiles, rr))
	// src flags each event for the samples below, by the rules foldGroups
	// counts them by.
	inDays, own := utcDayRanges("epoch_us(ts)", spec.Dates), ownWindow("ts", "ingest_date", spec.LatenessDays)
	src := fmt.Sprintf(`SELECT event_id, event_time, ts, ingest_date, coalesce(%[1]s AND %[2]s, false) AS requested, coalesce(%[4]s, false) AS oor
		FROM (SELECT event_id, event_time, CAST(event_time AS TIMESTAMPTZ) AS ts, ingest_date FROM (%[3]s))`,
		inDays, own, raw, outOfRange("ts", "epoch_us(ts)"))
	// Repeated 64-bit hashes instead of repeated strings: equal ids hash
	// alike, so no hash repeat means no id repeat; a hash repeat may be a
	// collision, so the exact count below decides. Every id of the window
	// is hashed: a repeat whose copies are all other dates' is passed over
	// by the exact count.
	h := "CASE WHEN event_id IS NOT NULL THEN " + e.hashOf("event_id") + " END"
	var hashRepeats int64
	if kept {
		hashRepeats, err = e.handedRepeats(ctx, func() error {
			return e.foldGroups(ctx, spec, w, groupsQuery(w, raw, repeatsColumn(true, h)), in)
		})
	} else if err = e.foldGroups(ctx, spec, w, groupsQuery(w, raw, ""), in); err == nil {
		// DuckDB's distinct count cannot be taken a group at a time:
		// where the hashes outgrow memory (a backfill), the repeats
		// take a statement of their own.
		if err = e.conn.QueryRowContext(ctx, "SELECT "+repeatsColumn(false, h)+" FROM ("+raw+")").Scan(&hashRepeats); err != nil {
			err = firstLine(err)
		}
	}
	if err != nil {
		return fmt.Errorf("check raw event ids %s: %w", spec.Raw, err)
	}
	if f.NullEventTimes > 0 || f.OutOfRangeEventTimes > 0 {
		// Which: the read window may hold thousands of files.
		concat := func(parts ...string) string { return "(" + strings.Join(parts, " || ") + ")" }
		rows, err := e.strings(ctx, fmt.Sprintf("SELECT %s AS s FROM (%s) WHERE event_time IS NULL OR oor ORDER BY s LIMIT 5",
			engine.NullTimeSampleSQL(concat, "CAST(ingest_date AS VARCHAR)"), src))
		if err != nil {
			return fmt.Errorf("check raw event times %s: %w", spec.Raw, firstLine(err))
		}
		f.NullEventTimeSample = engine.NullTimeSample(rows)
	}
	if hashRepeats == 0 {
		return nil
	}
	// The extra copies of each id repeated in the window with a copy of a
	// requested date: the Spark engine's figure too.
	repeated := `SELECT event_id, count(*) AS n FROM (` + src + `) WHERE event_id IS NOT NULL
		GROUP BY event_id HAVING count(*) > 1 AND bool_or(requested)`
	if err := e.conn.QueryRowContext(ctx, `SELECT coalesce(sum(n - 1), 0)::BIGINT FROM (`+repeated+`)`).Scan(&f.DuplicateEventIDs); err != nil {
		return fmt.Errorf("check raw event ids %s: %w", spec.Raw, firstLine(err))
	}
	if f.DuplicateEventIDs == 0 {
		return nil
	}
	sample, err := e.strings(ctx, `SELECT event_id FROM (`+repeated+`) ORDER BY event_id LIMIT 5`)
	if err != nil {
		return fmt.Errorf("check raw event ids %s: %w", spec.Raw, firstLine(err))
	}
	f.DuplicateEventIDSample = sample
	return nil
}

// checkEnrollments counts the snapshot pin's rows and its duplicated
// (learner_key, course_id) pairs with a sample of them. On the design day the
// snapshot holds about 20M rows, and each GROUP BY over it costs seconds: the
// first pass counts the rows and the repeated 64-bit hashes of the pairs
// (equal pairs hash alike, so no repeated hash means no repeated pair); only
// a hash repeat, which may be a collision, runs the exact pass by the pair,
// which counts the repeated pairs and samples five.
func (e *Engine) checkEnrollments(ctx context.Context, spec engine.Spec, files []string, in *engine.Inputs) error {
	pin := fmt.Sprintf(`FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s`, FileList(files), pinFilter("snapshot_id", spec.EnrollmentSnapshotID))
	kept, err := e.keptFit(ctx, files)
	if err != nil {
		return fmt.Errorf("check enrollments %s: %w", spec.Enrollments, err)
	}
	// A pair with a null key joins no event, so its repeats are no
	// duplicate enrollment (as a null lesson_id is none in the manifest).
	h := "CASE WHEN learner_key IS NOT NULL AND course_id IS NOT NULL THEN " + e.hashOf("learner_key, course_id") + " END"
	q := `SELECT count(*), ` + repeatsColumn(kept, h) + ` ` + pin
	var hashRepeats int64
	scan := func() error {
		if err := e.conn.QueryRowContext(ctx, q).Scan(&in.Figures.EnrollmentRows, &hashRepeats); err != nil {
			return firstLine(err)
		}
		return nil
	}
	if kept {
		// The column counts the hashes handed over; their repeats are Go's.
		hashRepeats, err = e.handedRepeats(ctx, scan)
	} else {
		err = scan()
	}
	if err != nil {
		return fmt.Errorf("check enrollments %s: %w", spec.Enrollments, err)
	}
	if in.Figures.EnrollmentRows == 0 {
		_, err := e.pinRows(ctx, "enrollments", spec.Enrollments, files, "snapshot_id", spec.EnrollmentSnapshotID, "--enrollment-snapshot-id")
		return err
	}
	in.Figures.DuplicateEnrollCount, in.Figures.DuplicateEnrollments = 0, nil
	if hashRepeats == 0 {
		return nil
	}
	q = `SELECT count(*), coalesce(min(coalesce(learner_key, '<null>') || '|' || coalesce(course_id, '<null>'), 5), [])
		FROM (SELECT learner_key, course_id ` + pin + ` AND learner_key IS NOT NULL AND course_id IS NOT NULL GROUP BY learner_key, course_id HAVING count(*) > 1)`
	var sample any
	if err := e.conn.QueryRowContext(ctx, q).Scan(&in.Figures.DuplicateEnrollCount, &sample); err != nil {
		return fmt.Errorf("check enrollments %s: %w", spec.Enrollments, firstLine(err))
	}
	if l, ok := sample.([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				in.Figures.DuplicateEnrollments = append(in.Figures.DuplicateEnrollments, s)
			}
		}
	}
	return nil
}

// pinRows counts the rows of one pin. A pin with no rows is a wrong argument,
// not an empty input: the error lists the pins that do exist.
func (e *Engine) pinRows(ctx context.Context, what, path string, files []string, col, pin, flag string) (int64, error) {
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s", FileList(files), pinFilter(col, pin))
	if err := e.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("read %s %s: %w", what, path, firstLine(err))
	}
	if n > 0 {
		return n, nil
	}
	present, err := e.strings(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM read_parquet(%s, union_by_name=true, hive_partitioning=false) WHERE %s IS NOT NULL ORDER BY 1 DESC LIMIT %d", col, FileList(files), col, engine.PinsShown+1))
	if err != nil {
		return 0, fmt.Errorf("read %s %s: %w", what, path, firstLine(err))
	}
	return 0, engine.NoPinError(flag, pin, col, path, present)
}

func (e *Engine) strings(ctx context.Context, q string) ([]string, error) {
	rows, err := e.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// firstLine keeps DuckDB's error to its first line; the rest is usually a
// caret diagram of the generated SQL, which means nothing to the user.
func firstLine(err error) error {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return fmt.Errorf("%s", s)
}
