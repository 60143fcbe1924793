// Package warehouse names the places inside a warehouse and writes the small
// JSON records (attempt, gate report, rejection) durably. The pointer itself
// belongs to package pointer; this package never touches it.
//
// Nothing the tool creates or writes inside a warehouse is reached through a
// symlink: the warehouse root may be one, but every directory below it is
// checked with lstat as it is walked or created, and files are created
// exclusively, so a planted link can never send the job's bytes elsewhere.
package warehouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Relative, slash-separated locations inside a warehouse.
const (
	StagingRoot    = "staging"
	RejectionsRoot = "rejections"
)

// StagingDir is the staging prefix of one job.
func StagingDir(jobID string) string { return path.Join(StagingRoot, "job_id="+jobID) }

// AttemptPath is written first by every attempt: arguments, pins, inputs.
func AttemptPath(jobID string) string { return path.Join(StagingDir(jobID), "_attempt.json") }

// GatePath is the gate report of an attempt.
func GatePath(jobID string) string { return path.Join(StagingDir(jobID), "_gate.json") }

// RejectionPath is written when the gate rejects an attempt.
func RejectionPath(jobID string) string {
	return path.Join(RejectionsRoot, "job_id="+jobID+".json")
}

// Abs joins a relative warehouse location to the warehouse root.
func Abs(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// ErrSymlink: something the tool would create or write inside the
// warehouse is a symlink.
var ErrSymlink = errors.New("is a symlink: nothing the tool writes inside the warehouse is followed through a symlink; replace it with a real directory or file")

// symlinkError names the link and where it points.
func symlinkError(p string) error {
	if to, err := os.Readlink(p); err == nil {
		return fmt.Errorf("warehouse: %s (-> %s) %w", p, to, ErrSymlink)
	}
	return fmt.Errorf("warehouse: %s %w", p, ErrSymlink)
}

// NoSymlink fails with ErrSymlink when p exists and is a symlink.
func NoSymlink(p string) error {
	fi, err := os.Lstat(p)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return symlinkError(p)
	}
	return nil
}

// MkdirAll creates root/rel and its missing parents below root, refusing
// (ErrSymlink) any element below root that is a symlink, and fsyncs each
// parent after creating a child in it so a new directory survives a crash.
// root itself may be a symlink and is created when missing.
func MkdirAll(root, rel string) error {
	if err := mkdirRoot(root); err != nil {
		return err
	}
	dir := root
	for _, elem := range strings.Split(path.Clean(rel), "/") {
		if elem == "." || elem == "" {
			continue
		}
		parent := dir
		dir = filepath.Join(dir, elem)
		fi, err := os.Lstat(dir)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return symlinkError(dir)
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return fmt.Errorf("warehouse: %s exists and is not a directory", dir)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("warehouse: %w", err)
		}
		// Another writer may create it first; the lstat after decides.
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if fi, err := os.Lstat(dir); err != nil {
			return fmt.Errorf("warehouse: %w", err)
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			return symlinkError(dir)
		}
		if err := SyncDir(parent); err != nil {
			return err
		}
	}
	return nil
}

// mkdirRoot creates the warehouse root (and its parents) when missing,
// fsyncing each parent, so the first publish into a new warehouse survives
// a crash; an existing root may be a symlink to a directory.
func mkdirRoot(root string) error {
	fi, err := os.Stat(root)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("warehouse %s: exists and is not a directory", root)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("warehouse %s: %w", root, err)
	}
	parent := filepath.Dir(root)
	if parent != root {
		if err := mkdirRoot(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create warehouse %s: %w", root, err)
	}
	return SyncDir(parent)
}

// MkdirExclusive creates root/rel, whose parent must exist, and reports
// fs.ErrExist when it is already there (in any form): the way an attempt
// claims its staging prefix so two attempts never share one.
func MkdirExclusive(root, rel string) error {
	dir := Abs(root, rel)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", dir, fs.ErrExist)
		}
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return SyncDir(filepath.Dir(dir))
}

// CheckTree checks that nothing under root/rel is a symlink, for a tree an engine
// wrote (the job cannot watch each file an engine creates, so it proves
// the result before the pointer may name any of it).
func CheckTree(root, rel string) error {
	top := Abs(root, rel)
	return filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("warehouse: %w", err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return symlinkError(p)
		}
		return nil
	})
}

// WriteJSON writes v as indented JSON at root/rel durably: a temp file in the
// same directory, fsync, rename, fsync of the directory. A reader sees the
// old file or the whole new one, never a torn one.
func WriteJSON(root, rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", rel, err)
	}
	return WriteFile(root, rel, append(b, '\n'))
}

// WriteFile writes b at root/rel durably (see WriteJSON), creating missing
// directories without following a symlink, and refusing to replace a
// symlink.
func WriteFile(root, rel string, b []byte) error {
	dirRel := path.Dir(rel)
	if err := MkdirAll(root, dirRel); err != nil {
		return err
	}
	p := Abs(root, rel)
	if err := NoSymlink(p); err != nil {
		return err
	}
	dir := filepath.Dir(p)
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
// links it into place. The file is created exclusively (never through an
// existing name or link). It is readable by all: readers of the warehouse
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

// Overlap refuses a warehouse that is, holds or lies inside one of the
// inputs (flag name to path): the job would write into its own input, and
// every later listing of that input would fail or read the job's files.
// Paths are compared after resolving symlinks (of the longest existing
// prefix, since the warehouse may not exist yet).
func Overlap(warehouse string, inputs [][2]string) error {
	wh, err := realPath(warehouse)
	if err != nil {
		return fmt.Errorf("--warehouse %s: %w", warehouse, err)
	}
	for _, in := range inputs {
		if in[1] == "" {
			continue
		}
		p, err := realPath(in[1])
		if err != nil {
			return fmt.Errorf("%s %s: %w", in[0], in[1], err)
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
		return fmt.Errorf("--warehouse %s %s the input %s %s: the job would write into its own input; put the warehouse beside the inputs", warehouse, how, in[0], in[1])
	}
	return nil
}

// within reports whether p lies strictly inside dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
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
