package open

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/storage"
	s3b "github.com/techlearningpro/engagement/internal/storage/s3"
)

// PathStyle says how S3 requests address the bucket: "auto" (path style
// when the endpoint's host is an IP address or localhost, as S3-compatible
// servers on a private address need; virtual-hosted otherwise), "true" or
// "false". It is engagement.s3PathStyle.
var PathStyle = "auto"

var (
	clientMu sync.Mutex
	client   *awss3.Client
	resolved S3Config // what client was made with
)

// S3Config is the AWS configuration the tool resolved through the standard
// chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3), with the
// endpoint and path style in effect; engines that reach S3 themselves
// (DuckDB's httpfs) are handed the same.
type S3Config struct {
	Region    string
	Endpoint  string // empty: AWS's own
	PathStyle bool
	Creds     aws.CredentialsProvider
}

// S3 resolves the AWS configuration once per process.
func S3(ctx context.Context) (S3Config, *awss3.Client, error) {
	clientMu.Lock()
	defer clientMu.Unlock()
	if client == nil {
		// Many goroutines (the suites run 64 writers at once) share one
		// client: keep their connections open rather than redialing. A
		// server that accepts and never answers (a stalled proxy, a
		// credentials endpoint) must not hold a command for ever: every
		// answer the tool waits for is small, so its headers come in
		// seconds or the request fails and the SDK retries it.
		hc := awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = 10 * time.Second
		}).WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 64
			tr.MaxIdleConnsPerHost = 64
			tr.MaxConnsPerHost = 64
			tr.ResponseHeaderTimeout = ResponseTimeout
			tr.TLSHandshakeTimeout = 10 * time.Second
		})
		// The SDK's own log lines (an IMDS fallback, a retry) are not the
		// tool's JSON log; what matters reaches the error.
		c, err := config.LoadDefaultConfig(ctx, config.WithLogger(logging.Nop{}), config.WithHTTPClient(hc),
			// A container's credentials endpoint gets a client of its own
			// unless given one.
			config.WithEndpointCredentialOptions(func(o *endpointcreds.Options) { o.HTTPClient = hc }))
		if err != nil {
			// A profile that does not exist, a config file that does not
			// parse: the same on every retry (it was exit 1 but for
			// publish, and a sensor retried it for hours).
			return S3Config{}, nil, exitcode.UsageError(fmt.Errorf("AWS configuration: %w", err))
		}
		if c.Region == "" {
			// S3-compatible servers take any region; AWS's own endpoint
			// redirects, so a default is safe.
			c.Region = "us-east-1"
		}
		if !regionName.MatchString(c.Region) {
			// The SDK refuses it only when it signs the first request.
			return S3Config{}, nil, exitcode.UsageError(fmt.Errorf("AWS region %q (AWS_REGION, or the profile's region): not a region name such as us-east-1", c.Region))
		}
		// The endpoint as the S3 client resolves it (AWS_ENDPOINT_URL_S3,
		// AWS_ENDPOINT_URL, a profile's endpoint_url, none when
		// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is set): DuckDB is handed
		// this one, so both always reach the same server.
		endpoint := aws.ToString(awss3.NewFromConfig(c).Options().BaseEndpoint)
		pathStyle, err := pathStyle(endpoint)
		if err != nil {
			return S3Config{}, nil, err
		}
		resolved = S3Config{Region: c.Region, Endpoint: endpoint, PathStyle: pathStyle, Creds: c.Credentials}
		client = awss3.NewFromConfig(c, func(o *awss3.Options) {
			o.UsePathStyle = pathStyle
			// Checksums only where S3 requires them: S3-compatible servers
			// differ in what they accept, and nothing is logged about it.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
			o.DisableLogOutputChecksumValidationSkipped = true
			// A reset connection or a 5xx is retried by the SDK, with
			// backoff; a retried PUT whose first try landed comes back as
			// 412, which the pointer store resolves by re-reading. The
			// SDK's own 50 ms base spent 8 attempts in 1.4 s, so a server
			// restarting for 1.5 s failed a publish (backoff).
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = 8
				so.Backoff = backoff{}
				// Not the SDK's process-wide retry quota (500 tokens, 5
				// to 14 a retry): once a few dozen faults had drained it,
				// every later fault failed on its first attempt, and 11
				// of 12 concurrent writes through a 1.5 s restart failed.
				so.RateLimiter = ratelimit.None
			})
		})
	}
	return resolved, client, nil
}

// regionName is what the SDK's endpoint rules take as a region (a host
// label).
var regionName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)

// ResponseTimeout bounds the wait for an S3 answer's headers (tests
// shorten it).
var ResponseTimeout = 30 * time.Second

// backoff waits a random time up to 0.1 s·2^attempt, at most 2 s: about
// 4.5 s over the 7 retries (at most 9 s), past a restart of a few seconds,
// while a server that stays down still fails the command in seconds.
type backoff struct{}

func (backoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	limit := min(2*time.Second, (100*time.Millisecond)<<min(attempt, 8))
	return rand.N(limit + 1), nil
}

func pathStyle(endpoint string) (bool, error) {
	switch PathStyle {
	case "true":
		return true, nil
	case "false":
		if u, err := url.Parse(endpoint); err == nil && net.ParseIP(u.Hostname()) != nil {
			// bucket.10.0.0.5 is no host name: DuckDB could not resolve
			// it, while the SDK quietly falls back to path style.
			return false, exitcode.UsageError(fmt.Errorf("S3 path style false (--s3-path-style, ENGAGEMENT_S3_PATH_STYLE or engagement.s3PathStyle): the endpoint %s is an IP address, which virtual-hosted addressing (bucket.host) cannot use; use auto or true", endpoint))
		}
		return false, nil
	case "auto", "":
		if endpoint == "" {
			return false, nil
		}
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return false, exitcode.UsageError(fmt.Errorf("the S3 endpoint %q (AWS_ENDPOINT_URL): not a URL such as http://127.0.0.1:9000", endpoint))
		}
		host := u.Hostname()
		return host == "localhost" || net.ParseIP(host) != nil, nil
	}
	return false, exitcode.UsageError(fmt.Errorf("S3 path style %q (--s3-path-style, ENGAGEMENT_S3_PATH_STYLE or engagement.s3PathStyle): want auto, true or false", PathStyle))
}

func s3Bucket(ctx context.Context, loc storage.Location) (storage.Bucket, error) {
	_, c, err := S3(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	// Credentials first: without them every request fails with a chain
	// of provider errors instead of one line naming the URL.
	if _, err := Credentials(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	b := s3b.New(c, loc)
	// One HeadBucket per bucket and process: inputs open a bucket per
	// partition directory.
	if _, ok := checked.Load(loc.Bucket); !ok {
		if err := b.Check(ctx); err != nil {
			return nil, err
		}
		checked.Store(loc.Bucket, true)
	}
	return b, nil
}

var checked sync.Map

// ErrNoCredentials: the AWS chain found no usable credentials.
var ErrNoCredentials = errors.New("no usable AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE, or run with an instance role")

// Credentials retrieves the credentials in effect, for an engine that
// signs its own requests; a failure says which variables are read.
func Credentials(ctx context.Context) (aws.Credentials, error) {
	c, _, err := S3(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	if c.Creds == nil {
		return aws.Credentials{}, exitcode.UsageError(ErrNoCredentials)
	}
	creds, err := c.Creds.Retrieve(ctx)
	var ne net.Error
	if err != nil && errors.As(err, &ne) {
		// A role's or a container's credentials endpoint that did not
		// answer: configured, and a retry may find it up.
		return aws.Credentials{}, fmt.Errorf("AWS credentials: the provider did not answer: %v", firstLine(err))
	}
	if err != nil {
		return aws.Credentials{}, exitcode.UsageError(fmt.Errorf("%w (%v)", ErrNoCredentials, firstLine(err)))
	}
	return creds, nil
}

// firstLine keeps an SDK error to its first line: the credential chain's
// errors list every provider it tried.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
