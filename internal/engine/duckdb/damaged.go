package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/engine"
)

// namedDamage names, after a read of the inputs failed on a damaged file
// whose error names none ("Invalid Error: Variable-length int over 10
// bytes", "dictionary offset out of range"), the first listed file that
// fails alone: each file's needed columns are read in full, one file at a
// time, on this failed path only. It returns err itself when err names a
// listed file already, is not a read failure, or no single file fails.
func (e *Engine) namedDamage(ctx context.Context, spec engine.Spec, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if ctx.Err() != nil || !readFailure(msg) {
		return err
	}
	inputs := []struct {
		what  string
		files []string
		cols  []engine.Column
	}{
		{"raw", spec.Inputs.RawPaths(), rawColumns},
		{"lessons", spec.Inputs.LessonPaths(), manifestColumns},
		{"enrollments", spec.Inputs.EnrollmentPaths(), enrollmentColumns},
	}
	for _, in := range inputs {
		for _, f := range in.files {
			if strings.Contains(msg, f) {
				return err
			}
		}
	}
	for _, in := range inputs {
		var mins []string
		for _, c := range in.cols {
			mins = append(mins, "min("+c.Name+")")
		}
		for _, f := range in.files {
			q := fmt.Sprintf("SELECT count(*), %s FROM read_parquet(%s, hive_partitioning=false)", strings.Join(mins, ", "), FileRef(f))
			rows, qerr := e.conn.QueryContext(ctx, q)
			if qerr == nil {
				for rows.Next() {
				}
				qerr = rows.Err()
				rows.Close()
			}
			if ctx.Err() != nil {
				return err
			}
			if qerr != nil {
				why := readFault(qerr)
				if strings.Contains(qerr.Error(), "Conversion Error") {
					why = "holds a value out of range for its column's type"
				}
				return fmt.Errorf("%s file %s: %s: %w", in.what, f, why, firstLine(qerr))
			}
		}
	}
	return err
}

// readFailure reports whether a DuckDB error is one reading a file can
// raise (not a cancellation, a memory limit or a constraint of the query).
func readFailure(msg string) bool {
	for _, s := range []string{"Invalid Error", "IO Error", "Invalid Input Error", "Conversion Error", "corrupt"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
