package warehouse

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSamePath: one file however it is spelt (./x and x, through a
// symlinked directory, with ".."), existing or not: the metrics and lineage
// files, or a sink and the config, are compared so.
func TestSamePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", "sublink"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"x", "./x", true},
		{"x", filepath.Join(dir, "x"), true},
		{"sub/x", "sublink/x", true},
		{"sub/x", "sub/../sub/x", true},
		{"x", "y", false},
		{"sub/x", "x", false},
	} {
		if got := SamePath(tc.a, tc.b); got != tc.same {
			t.Errorf("SamePath(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
