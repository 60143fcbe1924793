package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlainFile: a metrics or lineage file that exists as anything but a
// regular file of its own is refused: a symlink or a device would be
// replaced by the textfile's rename, a FIFO without a reader blocks the
// append for ever, and a second hard link may be an input's other name.
func TestPlainFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular.prom")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.prom")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "part-0.parquet")
	if err := os.WriteFile(input, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "lineage.jsonl")
	if err := os.Link(input, hard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, says string
	}{
		{filepath.Join(dir, "new.prom"), ""},
		{regular, ""},
		{link, "is a symlink"},
		{fifo, "not a regular file"},
		{dir, "not a regular file"},
		{hard, "2 hard links"},
	} {
		err := plainFile(tc.path)
		if (tc.says == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s: %v, want %q", filepath.Base(tc.path), err, tc.says)
		}
	}
}
