package pointer_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/pointer/objstore"
	"github.com/techlearningpro/engagement/internal/storage/open"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
)

// TestOutcomeReadBounded: the reply to the pointer.json PUT is lost (the
// server applied it), then the endpoint freezes. The re-reads that would
// learn the outcome go on after ctx is done but not for ever: the publish
// ends with ErrOutcomeUnknown, saying the bound ran out, instead of
// retrying each read for minutes (504 s with the product's 30 s answer
// wait, measured). This package's tests open no other S3 client, so the
// process's one client is made here, pointed at the fault proxy.
func TestOutcomeReadBounded(t *testing.T) {
	proxy := s3test.StartProxy(t)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	old := open.ResponseTimeout
	open.ResponseTimeout = 200 * time.Millisecond
	t.Cleanup(func() { open.ResponseTimeout = old })
	defer pointer.SetOutcomeReadBound(2 * time.Second)()

	b, err := open.Warehouse(t.Context(), s3test.Location(t), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _, err := open.S3(t.Context()); err != nil || cfg.Endpoint != proxy.URL {
		t.Fatalf("the S3 client reaches %q (%v), want the proxy %s: another test of this package made it first", cfg.Endpoint, err, proxy.URL)
	}
	s := objstore.New(b)
	d := dates.MustParse("2026-03-02")
	if _, err := pointer.Publish(t.Context(), s, commit("job-1", map[dates.Date]pointer.DateEntry{d: {JobID: "job-1"}})); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	landed := false
	proxy.SetRule(func(r s3test.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case landed:
			return s3test.Frozen
		case r.Method == "PUT" && strings.HasSuffix(r.Key, "/pointer.json"):
			landed = true
			return s3test.ReplyLost
		}
		return s3test.Pass
	})
	start := time.Now()
	_, err = pointer.PublishOutcome(t.Context(), s, commit("job-2", map[dates.Date]pointer.DateEntry{d: {JobID: "job-2"}}))
	took := time.Since(start)
	if !errors.Is(err, pointer.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "no answer within 2s") {
		t.Fatalf("PublishOutcome after a lost reply and a frozen endpoint: %v; want ErrOutcomeUnknown, the re-read's bound run out", err)
	}
	// A guard against a hang, not a timing: the Swap's own retries of the
	// frozen PUT take about 10 s here, the bounded re-read 2 s more.
	if took > time.Minute {
		t.Errorf("took %v", took)
	}
	if n := proxy.Injected()[s3test.Frozen]; n == 0 {
		t.Errorf("no request met the frozen endpoint: the test did not test it")
	}
}
