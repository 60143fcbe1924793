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
	// Cause names, for the failures a cluster adds (no S3A connector, an
	// S3A credential refused, the session gone, every executor lost or none
	// granted), what
	// the person on call must fix; "" when Spark's own line says it.
	Cause string
	cause error
}

func (e *Error) Error() string {
	if e.Cause != "" {
		return fmt.Sprintf("spark %s: %s: %s: [%s] %s", e.Remote, e.Step, e.Cause, e.Class, e.Msg)
	}
	return fmt.Sprintf("spark %s: %s: [%s] %s", e.Remote, e.Step, e.Class, e.Msg)
}

// Causes of the cluster's own failures, as Error.Cause names them.
const (
	CauseNoS3A        = "the Spark cluster has no S3A connector (start it with hadoop-aws and the AWS SDK v2 bundle on its classpath, docs/spark.md)"
	CauseS3ACreds     = "the Spark cluster's S3A credentials were refused (its fs.s3a.access.key and fs.s3a.secret.key, or credential provider)"
	CauseSessionGone  = "the Spark Connect session is gone on the server (it timed out idle, or the server restarted)"
	CauseExecutorLost = "the Spark cluster lost every executor of the application (a worker died) and granted no other"
	CauseNoExecutor   = "the Spark cluster never granted the application an executor (no live worker with the free cores and memory it asks for)"
)

// causeOf recognizes the cluster failures of Cause from Spark's class and
// first line.
func causeOf(class, msg string) string {
	switch {
	case strings.Contains(msg, `No FileSystem for scheme "s3a"`), strings.Contains(msg, "S3AFileSystem not found"),
		strings.Contains(msg, "org/apache/hadoop/fs/s3a/"), strings.Contains(msg, "software/amazon/awssdk/"):
		return CauseNoS3A
	case strings.Contains(msg, "s3a://") && (class == "AccessDeniedException" || strings.Contains(msg, "403") ||
		strings.Contains(msg, "InvalidAccessKeyId") || strings.Contains(msg, "SignatureDoesNotMatch") ||
		strings.Contains(msg, "NoAuthWithAWSException")):
		return CauseS3ACreds
	case strings.HasPrefix(class, "INVALID_HANDLE.SESSION"), class == "INVALID_HANDLE.OPERATION_ABANDONED",
		class == "INVALID_CURSOR.DISCONNECTED":
		// A statement running when the session ends loses its cursor.
		return CauseSessionGone
	}
	return ""
}

func (e *Error) Unwrap() error { return e.cause }

// wrap turns an error of spark-connect-go into an *Error.
func wrap(remote, step string, err error) error {
	if err == nil {
		return nil
	}
	var silent *silentError
	if errors.As(err, &silent) {
		return err // bounded's own line already names the server and the step
	}
	// The step names what it read as the cluster reads it (s3a://): said
	// as the user gave it, as the message is below.
	out := &Error{Remote: remote, Step: strings.ReplaceAll(step, "s3a://", "s3://"), cause: err}
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
	out.Cause = causeOf(out.Class, out.Msg)
	// The cluster reads s3:// as s3a:// (Hadoop has no s3:// filesystem);
	// the user gave, and every other line names, s3://: an s3a:// URL sent
	// the person on call looking for a second copy of the data.
	out.Msg = strings.ReplaceAll(out.Msg, "s3a://", "s3://")
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

// silentError is a small request the server did not answer within
// RequestTimeout (bounded); wrap passes it on as it is.
type silentError struct{ msg string }

func (e *silentError) Error() string { return e.msg }
