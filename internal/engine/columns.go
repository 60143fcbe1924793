package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

// Column is a required input column and the type names an engine accepts
// for it, in that engine's own spelling.
type Column struct {
	Name  string
	Types []string
}

// Schema reads one file's column types by name and its column names in file
// order; an engine asks per file so that an error can name the file.
type Schema func(file string) (types map[string]string, names []string, err error)

// CheckColumns verifies the required columns of every file of one input
// (what: raw, lessons, enrollments) and returns the union of the column names
// seen, in first-seen order. accepts says whether a file's type name is one
// of a column's Types; engines spell and match types differently (DuckDB by
// family prefix, Spark exactly), the errors they give are the same.
func CheckColumns(what string, files []string, required []Column, schema Schema, accepts func(typ string, want []string) bool) ([]string, error) {
	seen := map[string]bool{}
	var union []string
	for _, f := range files {
		types, names, err := schema(f)
		if err != nil {
			return nil, err
		}
		// Both engines take column names case-insensitively: a name
		// repeated in any case makes which column is read a guess.
		first := map[string]string{}
		for _, n := range names {
			k := strings.ToLower(n)
			if prev, ok := first[k]; ok {
				return nil, fmt.Errorf("%s file %s: column %s appears twice (as %s and %s)", what, f, prev, prev, n)
			}
			first[k] = n
		}
		for _, c := range required {
			typ, ok := types[c.Name]
			if !ok {
				if other, ok := first[strings.ToLower(c.Name)]; ok {
					return nil, fmt.Errorf("%s file %s: missing required column %s (the file has %s: names must match exactly)", what, f, c.Name, other)
				}
				return nil, fmt.Errorf("%s file %s: missing required column %s", what, f, c.Name)
			}
			if !accepts(typ, c.Types) {
				return nil, &ColumnTypeError{What: what, File: f, Column: c.Name, Type: typ, Want: c.Types}
			}
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				union = append(union, n)
			}
		}
	}
	return union, nil
}

// ColumnTypeError is a required column of a type the engine does not take,
// in one file of one input (what: raw, lessons, enrollments). Typed so that
// the job can add what only the file's footer tells (it holds no rows).
type ColumnTypeError struct {
	What, File, Column, Type string
	Want                     []string
}

func (e *ColumnTypeError) Error() string {
	return fmt.Sprintf("%s file %s: column %s has type %s, want %s", e.What, e.File, e.Column, e.Type, strings.Join(e.Want, " or "))
}

// InputColumns are the required columns of the raw events, the lesson
// manifest and the enrollment snapshot (docs/contract.md, Inputs), given an engine's
// spelling of a string type and of a timestamp type.
func InputColumns(str, timestamp []string) (raw, manifest, enrollments []Column) {
	col := func(name string, types []string) Column { return Column{Name: name, Types: types} }
	raw = []Column{col("event_id", str), col("learner_key", str), col("lesson_id", str), col("course_id", str), col("event_time", timestamp)}
	manifest = []Column{col("manifest_id", str), col("lesson_id", str), col("course_id", str), col("lesson_title", str)}
	enrollments = []Column{col("learner_key", str), col("course_id", str), col("snapshot_id", str)}
	return raw, manifest, enrollments
}

// CheckPinInputs checks the required columns of the listed manifest and
// enrollment files through the engine's check (its CheckColumns with its
// own schema reader), manifest first, so both engines refuse a bad pin input
// in the same order with the same error.
func CheckPinInputs(spec Spec, manifest, enrollments []Column, check func(what string, files []string, required []Column) error) error {
	if err := check("lessons", spec.Inputs.LessonPaths(), manifest); err != nil {
		return err
	}
	return check("enrollments", spec.Inputs.EnrollmentPaths(), enrollments)
}

// NoPinError is the one wording, for every engine, of a pin with no rows:
// a wrong argument (exit 2), not an empty input, listing the pins that do
// exist in the input at path.
func NoPinError(flag, pin, col, path string, present []string) error {
	// Pins are named by date, so the newest are the likely meant ones:
	// the engines give the last PinsShown+1 in sort order, newest first.
	more := len(present) > PinsShown
	present = slices.Clone(present[:min(len(present), PinsShown)])
	slices.Reverse(present)
	// Quoted, non-ASCII escaped: a pin with a trailing space, or spelt
	// in NFD beside the NFC asked, must not read as the one asked.
	quoted := make([]string, len(present))
	for i, p := range present {
		quoted[i] = strconv.QuoteToASCII(p)
	}
	list := strings.Join(quoted, ", ")
	switch {
	case more:
		list = "the last " + fmt.Sprint(PinsShown) + " in sort order, after others: " + list
	case len(list) == 0:
		list = "none: the input holds no row with a " + col
	}
	return exitcode.UsageError(fmt.Errorf("%s %s: no rows with %s = %s in %s (present: %s)",
		flag, strconv.QuoteToASCII(pin), col, strconv.QuoteToASCII(pin), path, list))
}

// PinsShown is how many present pins a NoPinError lists; an engine asks
// for one more, newest first, to know whether there are others.
const PinsShown = 10

// NullTimeSampleSQL is the one string a row of the null-time sample is in
// both engines' SQL, from its ingest_date (a DATE) and event_id: the date,
// then " -" for a null id or " +" and the id. NullTimeSample reads them.
// One form, ordered as strings by both, so both engines name the same rows.
func NullTimeSampleSQL(concat func(parts ...string) string, castDate string) string {
	return concat(castDate, "CASE WHEN event_id IS NULL THEN ' -' ELSE "+concat("' +'", "event_id")+" END")
}

// NullTimeSample is the null-time sample as the gate shows it: each row's
// event_id (quoted as a key, or "no event_id") and its partition.
func NullTimeSample(rows []string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		date, rest, _ := strings.Cut(r, " ")
		id := "no event_id"
		if v, ok := strings.CutPrefix(rest, "+"); ok {
			id = "event_id " + strconv.QuoteToASCII(v)
		}
		out = append(out, fmt.Sprintf("%s in ingest_date=%s", id, date))
	}
	return out
}

// The instants an event_time may hold, in epoch microseconds: the years
// 0001 to 9999. Outside them it is no time a producer meant (a damaged page,
// or nanoseconds written as microseconds), and the gate refuses it as it
// refuses a null one (gate.InputFigures.OutOfRangeEventTimes).
const (
	firstEventMicros = -62135596800_000_000 // 0001-01-01T00:00:00Z
	endEventMicros   = 253402300800_000_000 // 10000-01-01T00:00:00Z
)

// EventTimeOutOfRange is both engines' predicate on an event's epoch
// microseconds us: true outside the years 0001 to 9999, null for a null us.
func EventTimeOutOfRange(us string) string {
	return fmt.Sprintf("(%[1]s < %[2]d OR %[1]s >= %[3]d)", us, int64(firstEventMicros), int64(endEventMicros))
}
