package spark

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"google.golang.org/grpc/codes"
)

func asSpark(err error, target **sparkerrors.SparkError) bool { return errors.As(err, target) }

// Error is a failure reported by Spark or by the connection to it, reduced
// to what a user acts on: the remote, the step, Spark's error class and the
// first line of its message. spark-connect-go's own text repeats the whole
// generated SQL and a Go stack; neither helps the person on call.
type Error struct {
	Remote string
	Step   string
	Class  string // Spark's error class, or the gRPC status (UNAVAILABLE) when Spark never answered
	Msg    string
	cause  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("spark %s: %s: [%s] %s", e.Remote, e.Step, e.Class, e.Msg)
}

func (e *Error) Unwrap() error { return e.cause }

// wrap turns an error of spark-connect-go into an *Error.
func wrap(remote, step string, err error) error {
	if err == nil {
		return nil
	}
	out := &Error{Remote: remote, Step: step, cause: err}
	se := sparkError(err)
	switch {
	case se == nil:
		out.Class, out.Msg = "CLIENT", firstLine(err.Error())
	case se.Code == codes.Unavailable:
		out.Class = "UNAVAILABLE"
		out.Msg = "no Spark Connect server answers there (is it running, and is the sc:// URL right?): " + firstLine(se.Message)
	case se.ErrorClass != "":
		out.Class = se.ErrorClass
		out.Msg = strings.TrimSpace(strings.TrimPrefix(firstLine(se.Message), "["+se.ErrorClass+"]"))
	case se.Reason != "":
		// An exception without an error class (a failed task, say): its
		// Java class stands in, and the task-failure preamble goes.
		out.Class = se.Reason[strings.LastIndex(se.Reason, ".")+1:]
		out.Msg = taskFailure.ReplaceAllString(firstLine(se.Message), "")
	default:
		out.Class = strings.ToUpper(codeName(se.Code))
		out.Msg = firstLine(se.Message)
	}
	return out
}

// taskFailure is the preamble Spark puts before a failed task's exception.
var taskFailure = regexp.MustCompile(`^Job aborted due to stage failure: .*? most recent failure: Lost task [^:]*\): `)

func codeName(c codes.Code) string {
	// codes.Code.String gives "Unavailable"; Spark's own classes are upper snake case.
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// firstLine keeps a message to its first non-empty line; Spark follows it
// with the analyzed plan or a JVM stack.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return strings.TrimSpace(s)
}
