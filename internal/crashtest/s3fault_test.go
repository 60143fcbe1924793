package crashtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestS3Faults runs real publish processes against the test S3 server
// through a fault proxy that answers 500 and 503, delays replies, resets
// connections and drops the reply of a request the server applied (the
// PUT landed, the client saw an error). Whatever the fault, a publish
// either lands whole (a new generation naming it, every file it lists
// present and the visible sums the ground truth) or leaves pointer.json
// byte-identical; it exits 0 only when it landed; and a retry with a new
// job id, without faults, then publishes.
func TestS3Faults(t *testing.T) {
	put := func(suffix string) func(s3test.Request) bool {
		return func(r s3test.Request) bool { return r.Method == "PUT" && strings.HasSuffix(r.Key, suffix) }
	}
	once := func(match func(s3test.Request) bool, f s3test.Fault) func(s3test.Request) s3test.Fault {
		var mu sync.Mutex
		done := false
		return func(r s3test.Request) s3test.Fault {
			mu.Lock()
			defer mu.Unlock()
			if !done && match(r) {
				done = true
				return f
			}
			return s3test.Pass
		}
	}
	always := func(match func(s3test.Request) bool, f s3test.Fault) func(s3test.Request) s3test.Fault {
		return func(r s3test.Request) s3test.Fault {
			if match(r) {
				return f
			}
			return s3test.Pass
		}
	}
	isParquetGet := func(r s3test.Request) bool {
		return r.Method == "GET" && strings.HasSuffix(r.Key, ".parquet")
	}
	// outage answers 503 to every request for d from the first that match
	// takes (a server restarting).
	outage := func(match func(s3test.Request) bool, d time.Duration) func(s3test.Request) s3test.Fault {
		var mu sync.Mutex
		var start time.Time
		return func(r s3test.Request) s3test.Fault {
			mu.Lock()
			defer mu.Unlock()
			if start.IsZero() && match(r) {
				start = time.Now()
			}
			if !start.IsZero() && time.Since(start) < d {
				return s3test.Status503
			}
			return s3test.Pass
		}
	}
	cases := []struct {
		name string
		rule func(s3test.Request) s3test.Fault
		// want: "landed" when the fault must not stop the publish (the
		// SDK's retries or a re-read absorb it), "unknown" when the pointer
		// moved but the writer cannot learn it (exit 1, "outcome unknown"),
		// "" when either a whole publish or none is right.
		want string
	}{
		{"503 on every fifth request", func(r s3test.Request) s3test.Fault {
			if r.N%5 == 4 {
				return s3test.Status503
			}
			return s3test.Pass
		}, ""},
		{"500 once on the history create", once(func(r s3test.Request) bool {
			return r.Method == "PUT" && strings.Contains(r.Key, "pointer-history/")
		}, s3test.Status500), "landed"},
		{"slow replies to every pointer request", always(func(r s3test.Request) bool { return strings.Contains(r.Key, "pointer") }, s3test.Slow), "landed"},
		{"reset on a Parquet read", once(isParquetGet, s3test.Reset), ""},
		{"reply lost after the attempt record landed", once(put("/_attempt.json"), s3test.ReplyLost), "landed"},
		{"reply lost after the history copy landed", once(func(r s3test.Request) bool {
			return r.Method == "PUT" && strings.Contains(r.Key, "pointer-history/")
		}, s3test.ReplyLost), "landed"},
		{"reply lost after pointer.json landed", once(put("/pointer.json"), s3test.ReplyLost), "landed"},
		{"every reply to a pointer.json PUT lost", always(put("/pointer.json"), s3test.ReplyLost), "landed"},
		{"pointer.json written, then the pointer unreachable", unreachableAfterPointer(), "unknown"},
		// DuckDB's own retries gave up after about half a second.
		{"a 1.5 s outage from the first staged write", outage(func(r s3test.Request) bool {
			return r.Method != "GET" && strings.Contains(r.Key, "/staging/") && strings.Contains(r.Key, ".parquet")
		}, 1500*time.Millisecond), "landed"},
		// The SDK retries until the headers only.
		{"the body of a pointer.json read cut", once(func(r s3test.Request) bool {
			return r.Method == "GET" && strings.HasSuffix(r.Key, "/pointer.json")
		}, s3test.BodyCut), "landed"},
		{"the body of every history read cut once", func() func(s3test.Request) s3test.Fault {
			var mu sync.Mutex
			cut := map[string]bool{}
			return func(r s3test.Request) s3test.Fault {
				mu.Lock()
				defer mu.Unlock()
				if r.Method == "GET" && strings.Contains(r.Key, "/pointer-history/") && !cut[r.Key] {
					cut[r.Key] = true
					return s3test.BodyCut
				}
				return s3test.Pass
			}
		}(), "landed"},
		{"every PUT reply lost", always(func(r s3test.Request) bool { return r.Method == "PUT" }, s3test.ReplyLost), ""},
	}
	seed := envUint(t, SeedEnv, uint64(time.Now().UnixNano()))
	rng := rand.New(rand.NewPCG(seed, seed^0x51))
	for i := range 4 {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		var mu sync.Mutex
		faults := []s3test.Fault{s3test.Status500, s3test.Status503, s3test.Slow, s3test.Reset, s3test.ReplyLost}
		cases = append(cases, struct {
			name string
			rule func(s3test.Request) s3test.Fault
			want string
		}{fmt.Sprintf("random faults %d (seed %d)", i, seed), func(s3test.Request) s3test.Fault {
			mu.Lock()
			defer mu.Unlock()
			if r.IntN(8) == 0 {
				return faults[r.IntN(len(faults))]
			}
			return s3test.Pass
		}, ""})
	}

	proxy := s3test.StartProxy(t)
	h := publishtest.Harness{Backend: publishtest.S3}
	fx := h.LoadFixture(t, "")
	db := publishtest.DBFor(t, h.NewWarehouse(t))
	both := []string{mon, tue}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOn(t, publishtest.S3, fx, db)
			if _, bad := w.publish("clean", both); len(bad) > 0 {
				t.Fatal(bad)
			}
			before := w.snapshot()
			id := w.newID("faulty")
			proxy.SetRule(tc.rule)
			injectedBefore := total(proxy.Injected())
			code, _, stderr, _ := w.run(proxy.Env(), id, both, 0)
			proxy.SetRule(func(s3test.Request) s3test.Fault { return s3test.Pass })
			injected := total(proxy.Injected()) - injectedBefore
			if injected == 0 {
				t.Fatalf("no fault was injected: the rule never matched; the test would prove nothing")
			}
			p, b, err := w.pointer()
			if err != nil {
				t.Fatalf("pointer.json after the faults: %v", err)
			}
			moved := p.Generation == before.ptr.Generation+1
			switch {
			case code == 0 && (!moved || p.UpdatedByJobID != id):
				t.Errorf("exit 0, but the pointer is generation %d by %s, not the new one by %s", p.Generation, p.UpdatedByJobID, id)
			case code != 0 && !moved && string(b) != string(before.bytes):
				t.Errorf("exit %d and pointer.json changed without a new generation", code)
			case code != 0 && moved && !strings.Contains(stderr, "outcome unknown"):
				// A write that landed while every reply was lost is
				// reported as unknown, never as a plain failure.
				t.Errorf("exit %d, the pointer moved to %s's generation, and the error does not say the outcome is unknown: %s", code, id, lastLine(stderr))
			case tc.want == "landed" && code != 0:
				t.Errorf("exit %d: the fault should have been absorbed: %s", code, lastLine(stderr))
			case tc.want == "unknown" && (code != 1 || !moved):
				t.Errorf("exit %d, pointer moved %v: want exit 1 with the write landed and reported unknown", code, moved)
			}
			if tc.want == "unknown" {
				// The monitor says what readers see is unknown, never
				// generation 0 and no dates (readers see nothing).
				var line string
				for _, l := range strings.Split(stderr, "\n") {
					if strings.Contains(l, `"signal":"job_result"`) {
						line = l
					}
				}
				if !strings.Contains(line, `"pointer_unread"`) || strings.Contains(line, `"generation":0`) || strings.Contains(line, `"pointer_job_ids"`) {
					t.Errorf("job_result with the pointer unreachable: %s, want pointer_unread and no generation or job ids", line)
				}
			}
			_, bad := w.checkAfterKill(before, id, both)
			for _, v := range bad {
				t.Errorf("after the faulty publish (exit %d): %s", code, v)
			}
			if _, bad := w.publish("retry", both); len(bad) > 0 {
				t.Errorf("the retry without faults: %v", bad)
			}
			t.Logf("exit %d, %d faults injected, pointer moved: %v", code, injected, moved)
		})
	}
	t.Logf("faults injected by kind: %v (seed %d; rerun with %s=%d)", proxy.Injected(), seed, SeedEnv, seed)
}

// unreachableAfterPointer lets the first pointer.json PUT land and then
// drops every reply about the pointer (the PUT's retries and the re-reads):
// the writer cannot learn whether it published, which it must say.
func unreachableAfterPointer() func(s3test.Request) s3test.Fault {
	var mu sync.Mutex
	landed := false
	return func(r s3test.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		pointerKey := strings.HasSuffix(r.Key, "/pointer.json") || strings.Contains(r.Key, "pointer-history")
		switch {
		case landed && pointerKey:
			return s3test.ReplyLost
		case r.Method == "PUT" && strings.HasSuffix(r.Key, "/pointer.json"):
			landed = true
			return s3test.ReplyLost
		}
		return s3test.Pass
	}
}

func total(m map[s3test.Fault]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
