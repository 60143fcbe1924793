package s3_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/s3"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestBodyFailureSentAgain: a GET whose body is cut or stalls after its
// headers (which the SDK never retries) is sent again, for Get and for
// ReadRange, and returns the whole object's right bytes; a body that
// always fails is an error naming the object, not a short read. Before, a
// single cut on the pointer's confirm read failed a publish that had
// published ("outcome unknown"), and a stall held any command for as long
// as it lasted.
func TestBodyFailureSentAgain(t *testing.T) {
	old := s3.BodyIdleTimeout
	s3.BodyIdleTimeout = 300 * time.Millisecond
	t.Cleanup(func() { s3.BodyIdleTimeout = old })
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	for _, tc := range []struct {
		name  string
		fault s3test.Fault
		times int // faults injected before the server's reply passes; < 0: always
	}{
		{"cut once", s3test.BodyCut, 1},
		{"cut three times", s3test.BodyCut, 3},
		{"stalled once", s3test.BodyStall, 1},
		{"cut always", s3test.BodyCut, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := s3test.StartProxy(t)
			loc := s3test.Location(t)
			b := s3.New(client(t, proxy.URL), loc)
			if _, err := b.Put(t.Context(), "obj", data, storage.Cond{}); err != nil {
				t.Fatal(err)
			}
			arm := func() {
				left := tc.times
				proxy.SetRule(func(r s3test.Request) s3test.Fault {
					if r.Method == "GET" && strings.HasSuffix(r.Key, "/obj") && left != 0 {
						left--
						return tc.fault
					}
					return s3test.Pass
				})
			}
			arm()
			got, _, err := b.Get(t.Context(), "obj")
			arm()
			tail, rerr := b.ReadRange(t.Context(), "obj", -100, 100)
			if tc.times < 0 {
				for _, e := range []error{err, rerr} {
					if e == nil || !strings.Contains(e.Error(), loc.Join("obj").String()) {
						t.Errorf("a body that always fails: %v, want an error naming %s", e, loc.Join("obj"))
					}
				}
				return
			}
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("Get: %d bytes, %v; want the %d bytes written", len(got), err, len(data))
			}
			if rerr != nil || !bytes.Equal(tail, data[len(data)-100:]) {
				t.Errorf("ReadRange: %q, %v; want the last 100 bytes", tail, rerr)
			}
			if n := proxy.Injected()[tc.fault]; n != 2*tc.times {
				t.Errorf("%d faults injected, want %d: the test did not test", n, 2*tc.times)
			}
		})
	}
}
