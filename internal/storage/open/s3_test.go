package open

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/testenv"
)

// fresh makes S3 resolve the configuration again under the test's
// environment, and again after it.
func fresh(t *testing.T, env map[string]string) {
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_DISABLED"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	// No instance metadata service here: the chain must not wait on it.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	for k, v := range env {
		t.Setenv(k, v)
	}
	reset := func() {
		clientMu.Lock()
		client, resolved = nil, S3Config{}
		clientMu.Unlock()
		checked = sync.Map{}
	}
	reset()
	t.Cleanup(reset)
}

// TestEndpointAsTheClientResolvesIt: DuckDB is handed the endpoint the
// tool's own S3 client uses, wherever it was configured, so the two never
// reach different servers.
func TestEndpointAsTheClientResolvesIt(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(profile, []byte("[profile p]\nendpoint_url = http://127.0.0.1:9911\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", nil, ""},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9901"}, "http://127.0.0.1:9901"},
		{"AWS_ENDPOINT_URL_S3 wins", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9901", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9902"}, "http://127.0.0.1:9902"},
		{"a profile's endpoint_url", map[string]string{"AWS_CONFIG_FILE": profile, "AWS_PROFILE": "p"}, "http://127.0.0.1:9911"},
		{"configured endpoints ignored", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9901", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fresh(t, c.env)
			got, _, err := S3(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != c.want {
				t.Errorf("endpoint %q, want %q", got.Endpoint, c.want)
			}
			if ip := c.want != ""; got.PathStyle != ip {
				t.Errorf("path style %v for endpoint %q", got.PathStyle, got.Endpoint)
			}
		})
	}
}

// TestBadEndpointSettingIsUsage: an endpoint that is no URL, or an IP
// address with virtual-hosted addressing forced, is the setting's fault
// (exit 2), not a failure to retry.
func TestBadEndpointSettingIsUsage(t *testing.T) {
	cases := []struct {
		name, endpoint, style string
	}{
		{"not a URL", "127.0.0.1:9000", "auto"},
		{"virtual-hosted on an IP", "http://127.0.0.1:9000", "false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := PathStyle
			PathStyle = c.style
			t.Cleanup(func() { PathStyle = old })
			fresh(t, map[string]string{"AWS_ENDPOINT_URL": c.endpoint})
			_, _, err := S3(t.Context())
			if err == nil || exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("S3: %v (exit %d), want a usage error", err, exitcode.Code(err))
			}
		})
	}
}

// TestSilentServerFails: a server that accepts and never answers fails
// the request (the SDK retries it first) instead of holding the command;
// so does a credentials endpoint that never answers, or refuses the
// connection, which is then a failure to retry (exit 1), not "no
// credentials" (exit 2). The minute is a guard against a hang, not a
// timing.
func TestSilentServerFails(t *testing.T) {
	old := ResponseTimeout
	ResponseTimeout = 200 * time.Millisecond
	t.Cleanup(func() { ResponseTimeout = old })
	silent := "http://" + testenv.Silent(t)
	cases := []struct {
		name string
		env  map[string]string
	}{
		{"S3 endpoint", map[string]string{"AWS_ENDPOINT_URL": silent, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}},
		{"credentials endpoint", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": silent + "/creds"}},
		{"credentials endpoint refusing", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:1/creds"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fresh(t, c.env)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := Input(ctx, storage.Location{Scheme: storage.S3, Bucket: "b", Path: "raw"})
			if err == nil {
				t.Fatal("opened a bucket on a server that never answers")
			}
			if ctx.Err() != nil {
				t.Fatalf("still waiting after a minute: %v", err)
			}
			if code := exitcode.Code(err); code != exitcode.Error {
				t.Errorf("exit %d (%v), want %d: the server may answer on a retry", code, err, exitcode.Error)
			}
		})
	}
}

// TestBackoffOutlastsABriefOutage: the waits between the SDK's 8 attempts
// grow to 2 s each, so the 7 retries can span up to 9 s: the SDK's own
// 50 ms base spent them in 1.4 s, and a server restarting for 1.5 s failed
// a publish. Each wait is random within its limit, never above it.
func TestBackoffOutlastsABriefOutage(t *testing.T) {
	var span time.Duration
	for attempt := 1; attempt <= 7; attempt++ {
		limit := min(2*time.Second, (100*time.Millisecond)<<attempt)
		var most time.Duration
		for range 200 {
			d, err := backoff{}.BackoffDelay(attempt, nil)
			if err != nil || d < 0 || d > limit {
				t.Fatalf("attempt %d: wait %v (%v), want within [0, %v]", attempt, d, err, limit)
			}
			most = max(most, d)
		}
		if most < limit/2 {
			t.Errorf("attempt %d: the longest of 200 waits %v, want it near %v", attempt, most, limit)
		}
		span += limit
	}
	if span < 9*time.Second {
		t.Errorf("the 7 retries span at most %v, want 9 s", span)
	}
}

// TestRetriesNotRationed: the retryer hands out a retry for every fault,
// however many came before; the SDK's default quota refused them once a
// few dozen had drained it, and every later fault failed at once.
func TestRetriesNotRationed(t *testing.T) {
	_, c, err := S3(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := c.Options().Retryer
	fault := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500}}, Err: errors.New("InternalError")}
	for i := range 200 {
		if _, err := r.GetRetryToken(t.Context(), fault); err != nil {
			t.Fatalf("retry %d refused: %v", i+1, err)
		}
	}
}
