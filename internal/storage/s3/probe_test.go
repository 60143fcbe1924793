package s3_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/s3"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestProbe runs the conditional-write probe through a proxy that makes
// the real server ignore If-None-Match on some of the probe's objects.
func TestProbe(t *testing.T) {
	const key = ".engagement-probe/job_id=probe"
	for _, tc := range []struct {
		name string
		// ignored reports whether the proxy strips the conditions of a PUT
		// of this object key.
		ignored func(objKey string) bool
		refused bool
	}{
		{"honoured", func(string) bool { return false }, false},
		{"ignored on the first object only", func(k string) bool { return strings.HasSuffix(k, key) }, false},
		{"ignored on all but the last object", func(k string) bool { return !strings.HasSuffix(k, key+".3") }, false},
		{"ignored always", func(string) bool { return true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := s3test.StartProxy(t)
			// The process's one client, pointed at the proxy.
			b := s3.New(client(t, proxy.URL), s3test.Location(t))
			proxy.SetRule(func(r s3test.Request) s3test.Fault {
				if r.Method == "PUT" && tc.ignored(r.Key) {
					return s3test.IgnoreConditions
				}
				return s3test.Pass
			})
			err := b.Probe(t.Context(), key)
			switch {
			case tc.refused && !errors.Is(err, storage.ErrRefused):
				t.Fatalf("probe: %v, want a refusal", err)
			case tc.refused && !strings.Contains(err.Error(), "ignores If-None-Match"):
				t.Errorf("refusal %q does not say the server ignores If-None-Match", err)
			case !tc.refused && err != nil:
				t.Fatalf("probe: %v, want nil", err)
			}
			if tc.name != "honoured" && proxy.Injected()[s3test.IgnoreConditions] == 0 {
				t.Errorf("the proxy stripped no conditions: the case tested nothing")
			}
			left, err := b.List(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("the probe left %d objects, first %s", len(left), left[0].Key)
			}
		})
	}
}
