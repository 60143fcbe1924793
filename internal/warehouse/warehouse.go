// Package warehouse names the places inside a warehouse and writes the small
// JSON records (attempt, gate report, rejection) through the storage seam.
// The pointer itself belongs to package pointer; this package never touches
// it.
package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/techlearningpro/engagement/internal/config"
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

// jobPrefix begins the name of every job's staging prefix and record.
const jobPrefix = "job_id="

// StagingJobID is the job id of a staging prefix's name (job_id=<id>, as
// StagingDir makes it); ok is false for any other name.
func StagingJobID(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, jobPrefix)
	if !ok || config.CheckJobID(id) != nil {
		return "", false
	}
	return id, true
}

// RecordJobID is the job id of a rejection or rollback record's file name
// (job_id=<id>.json, as RejectionPath and RollbackPath make it); ok is
// false for any other name.
func RecordJobID(name string) (string, bool) {
	base, isJSON := strings.CutSuffix(name, ".json")
	if !isJSON {
		return "", false
	}
	return StagingJobID(base)
}

// StagingDir is the staging prefix of one job.
func StagingDir(jobID string) string { return path.Join(StagingRoot, jobPrefix+jobID) }

// AttemptPath is written first by every attempt, and only if absent: it
// claims the staging prefix for one attempt.
func AttemptPath(jobID string) string { return path.Join(StagingDir(jobID), "_attempt.json") }

// GatePath is the gate report of an attempt.
func GatePath(jobID string) string { return path.Join(StagingDir(jobID), "_gate.json") }

// ProbePath is where a publish proves, before writing anything, that the
// store refuses a second create of one object (storage.Prober); outside
// staging/, so gc never mistakes it for an attempt. nonce is the process's
// own ("" leaves it out): two attempts of one job id probing one key
// deleted each other's object between the two creates, and the second
// create was accepted.
func ProbePath(jobID, nonce string) string {
	if nonce == "" {
		return path.Join(ProbeRoot, "job_id="+jobID)
	}
	return path.Join(ProbeRoot, "job_id="+jobID+"."+nonce)
}

// ProbeRoot holds the probes; a publish deletes its own, and gc those a
// killed one left.
const ProbeRoot = ".engagement-probe"

// RejectionPath is written when the gate rejects an attempt.
func RejectionPath(jobID string) string {
	return path.Join(RejectionsRoot, jobPrefix+jobID+".json")
}

// RollbackPath is the record of one rollback.
func RollbackPath(jobID string) string {
	return path.Join(RollbacksRoot, jobPrefix+jobID+".json")
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

// Place is a warehouse or an input with its name in an error (its flag, or
// its config key and where that was set).
type Place struct {
	Name string
	Loc  storage.Location
}

// Overlap refuses a warehouse (places[0]) that is, holds or lies inside one
// of the inputs (the other places): the job would write into its own
// input, and every later listing of that input would fail or read the
// job's files. Local paths are compared after resolving symlinks (of the
// longest existing prefix, since the warehouse may not exist yet); S3
// locations by bucket and key.
func Overlap(places []Place) error {
	w := places[0]
	wh, err := comparable(w.Loc)
	if err != nil {
		return fmt.Errorf("%s %s: %w", w.Name, w.Loc, err)
	}
	for _, in := range places[1:] {
		if in.Loc == (storage.Location{}) {
			continue
		}
		p, err := comparable(in.Loc)
		if err != nil {
			return fmt.Errorf("%s %s: %w", in.Name, in.Loc, err)
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
		return fmt.Errorf("%s %s %s the input %s %s: the job would write into its own input; put the warehouse beside the inputs", w.Name, w.Loc, how, in.Name, in.Loc)
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

// SamePath reports whether two local paths name one file as the kernel
// resolves them (realPath: ./x and x, a symlinked directory, ".."),
// whether or not it exists yet.
//
// Both there: one file by os.SameFile. A path that cannot be resolved
// (past the system's length limit, under a deep working directory) is
// compared by its cleaned text, as it would be opened: taken for another
// file, the --config file was overwritten by the metrics file (review CW).
func SamePath(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	ra, errA := realPath(a)
	rb, errB := realPath(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// within reports whether p lies strictly inside dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// realPath is p absolute with its symlinks resolved the way the kernel
// resolves them when the path is created or opened: element by element,
// ".." taken from the real directory reached so far, not from the text.
// (Cleaning first would take /link/../wh for a sibling of the link, while
// mkdir puts it beside the link's target.) An element that does not exist
// yet is kept as written, and "..", after it, goes back up the text, as
// mkdir -p does; one past the system's length limit is the error.
func realPath(p string) (string, error) {
	given := p
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p
	}
	cur := string(filepath.Separator)
	for _, elem := range strings.Split(p, string(filepath.Separator)) {
		switch elem {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, elem)
		real, err := filepath.EvalSymlinks(next)
		switch {
		case err == nil:
			next = real
		case errors.Is(err, syscall.ENAMETOOLONG):
			// Past the system's limit on a path from / (under a deep
			// working directory): kept as written, a link in the path
			// was not followed, and a warehouse inside raw written into
			// (review CV). Any other failure (a file where a directory
			// should be, no permission) is the later write's to name.
			if filepath.IsAbs(given) {
				return "", fmt.Errorf("resolve %s: %w", next, err)
			}
			return "", fmt.Errorf("%s cannot be resolved: from / it is past the system's limit on a path (the working directory is %d bytes): run from a shallower directory, or give it in full", given, len(p)-len(given)-1)
		}
		cur = next
	}
	return cur, nil
}
