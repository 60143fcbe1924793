package spark

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/engine"
)

// maxDamageProbes bounds the files namedDamage reads one by one (each a
// statement on the server, a few hundred milliseconds): past it the
// error is returned as Spark gave it.
const maxDamageProbes = 200

// namedDamage names, after a statement over many input files failed with
// Spark's bare "Exception thrown in awaitResult:" (a damaged file read by
// a parallel step, the message of its cause lost), the first listed file
// that fails alone: each file's needed columns are read one file at a time,
// on this failed path only, where Spark's own error names the file. It
// returns err itself for any other error, when err names a listed file
// already, or when no single file fails.
func (e *Engine) namedDamage(ctx context.Context, spec engine.Spec, err error) error {
	var se *Error
	if ctx.Err() != nil || !errors.As(err, &se) || se.Class != "SparkException" || !strings.Contains(se.Msg, "awaitResult") {
		return err
	}
	inputs := []struct {
		what  string
		files []string
		cols  []string
	}{
		{"raw", spec.Inputs.RawPaths(), append(append([]string{}, rawStrings...), "event_time")},
		{"lessons", spec.Inputs.LessonPaths(), manifestStrings},
		{"enrollments", spec.Inputs.EnrollmentPaths(), enrollmentStrings},
	}
	n := 0
	for _, in := range inputs {
		n += len(in.files)
		for _, f := range in.files {
			if strings.Contains(err.Error(), f) {
				return err // named already (a footer Spark could not read)
			}
		}
	}
	if n > maxDamageProbes {
		return err
	}
	for _, in := range inputs {
		var mins []string
		for _, c := range in.cols {
			mins = append(mins, "min("+c+")")
		}
		for _, f := range in.files {
			_, perr := e.rows(ctx, "read "+in.what+" file "+f+" alone", fmt.Sprintf("SELECT count(*), %s FROM %s", strings.Join(mins, ", "), pathRef(f)))
			if ctx.Err() != nil {
				return err
			}
			if perr != nil {
				return fmt.Errorf("%s file %s: not a readable Parquet file: %w", in.what, f, perr)
			}
		}
	}
	return err
}
