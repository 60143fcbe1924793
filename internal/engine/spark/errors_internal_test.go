package spark

import (
	"strings"
	"testing"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"google.golang.org/grpc/codes"
)

// TestWrapNamesS3: Spark's line names an object as the cluster reads it,
// s3a://; the error names it s3://, as the user gave it and every other
// line says, and the cause is still recognized from Spark's words.
func TestWrapNamesS3(t *testing.T) {
	for _, tc := range []struct {
		name, class, msg, want, cause string
	}{
		{"path", "PATH_NOT_FOUND", "[PATH_NOT_FOUND] Path does not exist: s3a://b/raw/ingest_date=2026-03-02.",
			"Path does not exist: s3://b/raw/ingest_date=2026-03-02.", ""},
		{"credentials", "AccessDeniedException", "s3a://b/wh/staging: getFileStatus on s3a://b/wh/staging: 403 Forbidden",
			"s3://b/wh/staging: getFileStatus on s3://b/wh/staging: 403 Forbidden", CauseS3ACreds},
		{"no connector", "SparkClassNotFoundException", `No FileSystem for scheme "s3a"`, `No FileSystem for scheme "s3a"`, CauseNoS3A},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := &sparkerrors.SparkError{Code: codes.Internal, Message: tc.msg}
			if strings.HasPrefix(tc.msg, "["+tc.class+"]") {
				se.ErrorClass = tc.class
			} else {
				se.Reason = "org.apache.hadoop." + tc.class
			}
			err := wrap("sc://h:15002", "read the schema of raw file s3a://b/raw/x.parquet", se)
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("wrap gave %T %v", err, err)
			}
			if e.Step != "read the schema of raw file s3://b/raw/x.parquet" {
				t.Errorf("wrap: step %q, want the object named s3://", e.Step)
			}
			if e.Msg != tc.want || e.Cause != tc.cause || e.Class != tc.class {
				t.Errorf("wrap: class %q, message %q, cause %q; want %q, %q, %q", e.Class, e.Msg, e.Cause, tc.class, tc.want, tc.cause)
			}
		})
	}
}
