package config

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

// FuzzConfig: a properties file of any content either parses and resolves
// into a job whose numbers are in range, or is refused with a message naming
// the file; resolve refusals are usage errors. Parsing never panics. Seeds
// live in testdata/fuzz/FuzzConfig.
func FuzzConfig(f *testing.F) {
	f.Add("engagement.unknownCap 0.02\nengagement.latenessDays 1\n")
	f.Fuzz(func(t *testing.T, content string) {
		p, err := Parse(strings.NewReader(content), "fuzz.conf")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.conf") {
				t.Fatalf("parse error %q does not name the file", err)
			}
			return
		}
		for _, k := range p.Keys() {
			if _, ok := p.Get(k); !ok || k == "" || strings.ContainsAny(k, " \t=:") {
				t.Fatalf("key %q: listed but not gettable, or holds a separator", k)
			}
		}
		j, err := Resolve(p, nil)
		if err != nil {
			if !errors.Is(err, exitcode.ErrUsage) || err.Error() == "" {
				t.Fatalf("resolve refusal %q is not a usage error with a message", err)
			}
			return
		}
		switch {
		case j.Engine != "duckdb" && j.Engine != "spark":
			t.Fatalf("accepted engine %q", j.Engine)
		case math.IsNaN(j.UnknownCap) || j.UnknownCap < 0 || j.UnknownCap > 1:
			t.Fatalf("accepted unknown cap %v", j.UnknownCap)
		case j.SaltBuckets < 1 || j.RestatementHorizonDays < 1 || j.LatenessDays < 0 || j.FreshnessMaxDays < 0:
			t.Fatalf("accepted out-of-range numbers: %+v", j)
		case j.TargetFileBytes <= 0:
			t.Fatalf("accepted target file bytes %d", j.TargetFileBytes)
		}
		for _, c := range j.ProhibitedColumns {
			if c != strings.ToLower(c) || c == "" {
				t.Fatalf("prohibited column %q not lower-case", c)
			}
		}
	})
}
