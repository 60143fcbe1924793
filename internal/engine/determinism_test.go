package engine_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// banned matches calls that mint identity or read the clock.
var banned = regexp.MustCompile(`(?i)\b(uuid|gen_random_uuid|rand|random|setseed|now|current_timestamp|current_date|current_time|get_current_timestamp|localtimestamp)\s*\(|time\.Now\(|math/rand|crypto/rand|google/uuid`)

// TestNoNondeterminismInTransform scans the transform's source (every engine
// and the job that drives it, SQL strings included) for calls that would
// make a retry compute different rows: uuid, rand, random, the clock. The
// job id is an argument, the clock is read once by the command, and the
// generator (which may use seeded randomness) is not transform code.
func TestNoNondeterminismInTransform(t *testing.T) {
	roots := []string{".", "../job"}
	scanned := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasSuffix(p, "publishtest")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			scanned++
			for i, line := range strings.Split(string(b), "\n") {
				if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "//") {
					continue
				}
				if m := banned.FindString(line); m != "" {
					t.Errorf("%s:%d: %q in transform code: %s", p, i+1, m, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned < 5 {
		t.Fatalf("scanned only %d files; the scan is not looking at the transform", scanned)
	}
}

// TestBannedPatternCatches keeps the scan honest: it must flag each form.
func TestBannedPatternCatches(t *testing.T) {
	for _, s := range []string{"SELECT uuid()", "random()", "F.rand(", "NOW()", "current_timestamp()", "time.Now()", `"math/rand/v2"`, "gen_random_uuid ()"} {
		if !banned.MatchString(s) {
			t.Errorf("pattern misses %q", s)
		}
	}
}
