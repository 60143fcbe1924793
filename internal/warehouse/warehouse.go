// Package warehouse names the places inside a warehouse and writes the small
// JSON records (attempt, gate report, rejection) through the storage seam.
// The pointer itself belongs to package pointer; this package never touches
// it.
package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/techlearningpro/engagement/internal/storage"
)

// Relative, slash-separated locations inside a warehouse.
const (
	StagingRoot    = "staging"
	RejectionsRoot = "rejections"
	// RollbacksRoot holds one record per rollback, written before it
	// checks the files it will name; gc keeps the prefixes a recent one
	// names, so the check cannot be overtaken by a delete.
	RollbacksRoot = "rollbacks"
	// ExpiryRoot holds one record per gc run that expired history
	// generations, so history can say where they went.
	ExpiryRoot = "pointer-expiry"
)

// StagingDir is the staging prefix of one job.
func StagingDir(jobID string) string { return path.Join(StagingRoot, "job_id="+jobID) }

// AttemptPath is written first by every attempt, and only if absent: it
// claims the staging prefix for one attempt.
func AttemptPath(jobID string) string { return path.Join(StagingDir(jobID), "_attempt.json") }

// GatePath is the gate report of an attempt.
func GatePath(jobID string) string { return path.Join(StagingDir(jobID), "_gate.json") }

// ProbePath is where a publish proves, before writing anything, that the
// store refuses a second create of one object (storage.Prober); outside
// staging/, so gc never mistakes it for an attempt.
func ProbePath(jobID string) string { return path.Join(".engagement-probe", "job_id="+jobID) }

// RejectionPath is written when the gate rejects an attempt.
func RejectionPath(jobID string) string {
	return path.Join(RejectionsRoot, "job_id="+jobID+".json")
}

// RollbackPath is the record of one rollback.
func RollbackPath(jobID string) string {
	return path.Join(RollbacksRoot, "job_id="+jobID+".json")
}

// Abs joins a relative warehouse location to a local warehouse root, for
// tests and tools that look at a local warehouse directly.
func Abs(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// WriteJSON writes v as indented JSON under key, whole or not at all,
// subject to c; a create-if-absent is storage.Create (a lost reply to our
// own create is not someone else's object).
func WriteJSON(ctx context.Context, b storage.Bucket, key string, v any, c storage.Cond) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	data = append(data, '\n')
	if c.IfAbsent {
		return storage.Create(ctx, b, key, data)
	}
	_, err = b.Put(ctx, key, data, c)
	return err
}

// Overlap refuses a warehouse that is, holds or lies inside one of the
// inputs (flag name to location): the job would write into its own input,
// and every later listing of that input would fail or read the job's
// files. Local paths are compared after resolving symlinks (of the longest
// existing prefix, since the warehouse may not exist yet); S3 locations by
// bucket and key.
func Overlap(warehouse storage.Location, inputs map[string]storage.Location) error {
	wh, err := comparable(warehouse)
	if err != nil {
		return fmt.Errorf("--warehouse %s: %w", warehouse, err)
	}
	for _, flag := range []string{"--raw", "--lessons", "--enrollments"} {
		in, ok := inputs[flag]
		if !ok {
			continue
		}
		p, err := comparable(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, in, err)
		}
		var how string
		switch {
		case wh == p:
			how = "is"
		case within(wh, p):
			how = "lies inside"
		case within(p, wh):
			how = "holds"
		default:
			continue
		}
		return fmt.Errorf("--warehouse %s %s the input %s %s: the job would write into its own input; put the warehouse beside the inputs", warehouse, how, flag, in)
	}
	return nil
}

// Holds reports whether the local directory dir is the warehouse or lies
// inside it, symlinks resolved as Overlap resolves them; a warehouse on S3
// holds no local directory.
func Holds(warehouse storage.Location, dir string) (bool, error) {
	if warehouse.IsS3() {
		return false, nil
	}
	wh, err := comparable(warehouse)
	if err != nil {
		return false, err
	}
	d, err := realPath(dir)
	if err != nil {
		return false, err
	}
	return d == wh || within(d, wh), nil
}

// comparable is a location as one string that shares a prefix with another
// exactly when one lies inside the other.
func comparable(l storage.Location) (string, error) {
	if l.IsS3() {
		return "s3://" + l.Bucket + "/" + l.Key, nil
	}
	return realPath(l.Path)
}

// within reports whether p lies strictly inside dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// realPath is p absolute with the symlinks of its longest existing prefix
// resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for cur := abs; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}
