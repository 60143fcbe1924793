// Package warehouse names the places inside a warehouse and writes the small
// JSON records (attempt, gate report, rejection) durably. The pointer itself
// belongs to package pointer; this package never touches it.
package warehouse

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// Relative, slash-separated locations inside a warehouse.
const (
	StagingRoot    = "staging"
	RejectionsRoot = "rejections"
)

// StagingDir is the staging prefix of one job.
func StagingDir(jobID string) string { return path.Join(StagingRoot, "job_id="+jobID) }

// AttemptPath is written first by every attempt: arguments, pins, start time.
func AttemptPath(jobID string) string { return path.Join(StagingDir(jobID), "_attempt.json") }

// GatePath is the gate report of an attempt.
func GatePath(jobID string) string { return path.Join(StagingDir(jobID), "_gate.json") }

// RejectionPath is written when the gate rejects an attempt.
func RejectionPath(jobID string) string {
	return path.Join(RejectionsRoot, "job_id="+jobID+".json")
}

// Abs joins a relative warehouse location to the warehouse root.
func Abs(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// WriteJSON writes v as indented JSON at root/rel durably: a temp file in the
// same directory, fsync, rename, fsync of the directory. A reader sees the
// old file or the whole new one, never a torn one.
func WriteJSON(root, rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", rel, err)
	}
	return WriteFile(Abs(root, rel), append(b, '\n'))
}

// WriteFile writes b at p durably (see WriteJSON).
func WriteFile(p string, b []byte) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := WriteTemp(dir, "."+filepath.Base(p)+".tmp-", b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, p, err)
	}
	return SyncDir(dir)
}

// WriteTemp writes data to a new temp file in dir whose name starts with
// prefix, fsyncs and closes it, and returns its path; the caller renames or
// links it into place. The file is readable by all: readers of the warehouse
// may run as other users.
func WriteTemp(dir, prefix string, data []byte) (path string, err error) {
	f, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return "", fmt.Errorf("create temp in %s: %w", dir, err)
	}
	path = f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", fmt.Errorf("chmod %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", path, err)
	}
	return path, nil
}

// SyncDir fsyncs a directory so a rename or create inside it survives a crash.
func SyncDir(dir string) error { return SyncFile(dir) }

// SyncFile fsyncs a file (or directory) that was written by someone else,
// such as an engine's COPY, before anything may name it: the pointer must
// never point at bytes a power cut could take back.
func SyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p, err)
	}
	return nil
}
