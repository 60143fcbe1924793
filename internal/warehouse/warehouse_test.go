package warehouse

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/testenv"
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

// TestOverlapUnderADeepWorkingDirectory: under a working directory past
// the system's path limit, a link in a relative warehouse path could not
// be resolved from /, was taken as written, and a warehouse inside raw
// was written into (review CV). A path that cannot be resolved is
// refused instead.
func TestOverlapUnderADeepWorkingDirectory(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "raw")
	if err := os.MkdirAll(filepath.Join(raw, "ingest_date=2026-03-02"), 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.ChdirDeep(t)
	if err := os.Symlink(raw, "rawlink"); err != nil {
		t.Fatal(err)
	}
	wh, err := storage.Parse("rawlink/ingest_date=2026-03-02/wh")
	if err != nil {
		t.Fatal(err)
	}
	in, err := storage.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := Overlap([]Place{{Name: "--warehouse", Loc: wh}, {Name: "--raw", Loc: in}}); err == nil {
		t.Error("a warehouse inside raw, through a link under a deep working directory, was not refused")
	}
}

// TestSamePathUnderADeepWorkingDirectory: where a path cannot be resolved
// from /, one file is still one file (review CW: the --config file was
// taken for another and overwritten by the metrics file, exit 0).
func TestSamePathUnderADeepWorkingDirectory(t *testing.T) {
	testenv.ChdirDeep(t)
	if err := os.WriteFile("job.conf", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"job.conf", "job.conf", true}, {"./job.conf", "job.conf", true},
		{"out.prom", "out.prom", true}, {"./out.prom", "out.prom", true},
		{"job.conf", "out.prom", false}, {"a.prom", "b.prom", false},
	} {
		if got := SamePath(tc.a, tc.b); got != tc.same {
			t.Errorf("SamePath(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
