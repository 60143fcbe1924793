package gc

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

func keys(objs []storage.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	return out
}

func total(objs []storage.Object) int64 {
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return n
}

// markerOf returns the staging prefix a .gc-deleting- name marks: only a
// job_id=<valid id> prefix is ever marked, so any other name (an
// operator's file, ".gc-deleting-..") is no marker and marks nothing.
func markerOf(name string) (string, bool) {
	target, ok := strings.CutPrefix(name, deletingPrefix)
	if !ok {
		return "", false
	}
	if _, ok := warehouse.StagingJobID(target); !ok {
		return "", false
	}
	return target, true
}

// remove deletes one verdict's entry and reports whether it is gone, even
// when it then fails. A staging prefix is first marked (a staging/
// .gc-deleting-<name> object), then deleted, then unmarked, so a gc killed
// between leaves a marker the next gc recognises instead of a half-deleted
// prefix nobody does. A marker, or an older gc's renamed directory, is
// deleted itself only: the prefix it names is judged on its own.
func remove(ctx context.Context, b storage.Bucket, rel string) (gone, marked bool, err error) {
	name := path.Base(rel)
	if _, ok := markerOf(name); ok {
		if err := b.DeletePrefix(ctx, rel+"/"); err != nil {
			return false, false, fmt.Errorf("gc: %w", err)
		}
		if err := b.Delete(ctx, rel); err != nil {
			return false, false, fmt.Errorf("gc: %w", err)
		}
		return true, false, nil
	}
	marker := warehouse.StagingRoot + "/" + deletingPrefix + name
	if _, err := b.Put(ctx, marker, []byte(rel+"\n"), storage.Cond{}); err != nil {
		return false, false, fmt.Errorf("gc: mark %s: %w", rel, err)
	}
	if err := b.DeletePrefix(ctx, rel+"/"); err != nil {
		return false, true, fmt.Errorf("gc: delete %s: %w", rel, err)
	}
	// Deleted: a failure from here on (a signal) leaves only the marker,
	// which the next gc removes.
	if err := b.Delete(ctx, marker); err != nil {
		return true, true, fmt.Errorf("gc: unmark %s: %w", rel, err)
	}
	return true, true, nil
}
