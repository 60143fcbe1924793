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
	"github.com/techlearningpro/engagement/internal/engine"
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
// returns the union of the column names seen. Spark is asked for the schema
// of one file of each schema key (keys, engine.Spec.SchemaKeys), and of
// every file without one.
func (e *Engine) checkColumns(ctx context.Context, what string, files []string, keys map[string]string, required []engine.Column) ([]string, error) {
	for _, f := range files {
		// Hadoop's local file system names a checksum file beside each
		// file it reads (.name.crc) and cannot parse that name when it
		// holds a colon; Spark then fails with no word of the file.
		if name := f[strings.LastIndex(f, "/")+1:]; !strings.Contains(f, "://") && strings.Contains(name, ":") {
			return nil, fmt.Errorf("%s file %s: Spark cannot read a local file whose name holds ':' (Hadoop takes it for a URI scheme): rename the file, or publish with --engine duckdb", what, f)
		}
	}
	from, asked := schemaReads(files, keys)
	step := fmt.Sprintf("read the schemas of %d %s files", len(files), what)
	if len(asked) < len(files) {
		step += fmt.Sprintf(" (%d distinct)", len(asked))
	}
	e.step(step)
	// Each schema is a round trip and a job on the cluster (about 30 to
	// 50 ms): a few at a time, read ahead of the checks, which then take
	// them in the files' order, so the first error is the one a reading
	// one by one would meet. A file read for others is the first of them
	// in that order, so its error comes first too, naming it.
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
		bounded.Each(len(asked), schemaReaders, func(j int) {
			i := asked[j]
			r := &reads[i]
			r.types, r.names, r.err = e.schema(ctx, what, files[i])
			e.schemasRead.Add(1)
		})
		return ctx.Err()
	})
	var se *Error
	if errors.As(err, &se) {
		se.Step = step
		return nil, se
	}
	schema := func(file string) (map[string]string, []string, error) {
		r := reads[from[at[file]]]
		return r.types, r.names, r.err
	}
	// Spark names types exactly (string, timestamp, timestampntz).
	exact := func(typ string, want []string) bool { return slices.Contains(want, typ) }
	return engine.CheckColumns(what, files, required, schema, exact)
}

// schemaReads says, for each of files, which file's schema stands for it
// (from: its own index, or the first earlier file of its schema key), and
// the files whose schemas are read (asked, in order): each without a key,
// and the first of each key.
func schemaReads(files []string, keys map[string]string) (from, asked []int) {
	first := map[string]int{}
	from = make([]int, len(files))
	for i, f := range files {
		k, ok := keys[f]
		if ok && k != "" {
			if j, seen := first[k]; seen {
				from[i] = j
				continue
			}
			first[k] = i
		}
		from[i] = i
		asked = append(asked, i)
	}
	return from, asked
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
	union, err := e.checkColumns(ctx, "raw", rawFiles, spec.SchemaKeys, rawColumns)
	if err != nil {
		return in, err
	}
	in.Figures.RawColumns = union
	check := func(what string, files []string, required []engine.Column) error {
		_, err := e.checkColumns(ctx, what, files, spec.SchemaKeys, required)
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
