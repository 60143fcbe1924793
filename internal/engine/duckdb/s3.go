package duckdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/techlearningpro/engagement/internal/redact"
	"github.com/techlearningpro/engagement/internal/storage/open"
)

// ExtensionsEnv names the extension directory when engagement.duckdbExtensions
// is not set (scripts/httpfs.sh prints one; the test command exports it).
const ExtensionsEnv = "ENGAGEMENT_DUCKDB_EXTENSIONS"

// S3 is what DuckDB's httpfs extension needs to read and write s3:// paths.
type S3 struct {
	KeyID, Secret, SessionToken string
	Region                      string
	Endpoint                    string // host[:port] of an S3-compatible server; empty for AWS
	PathStyle                   bool
	UseSSL                      bool
	// ExtensionDirectory holds v<version>/<platform>/httpfs.duckdb_extension
	// (an air-gapped host's own copy, or the one scripts/httpfs.sh unpacks);
	// empty leaves DuckDB to find or download the extension itself.
	ExtensionDirectory string
}

// AWS resolves S3 from the same AWS chain and settings the tool's own S3
// client uses (storage/open), so DuckDB reads and writes exactly where the
// pointer store does. extDir empty falls back to $ENGAGEMENT_DUCKDB_EXTENSIONS.
func AWS(ctx context.Context, extDir string) (S3, error) {
	cfg, _, err := open.S3(ctx)
	if err != nil {
		return S3{}, err
	}
	creds, err := open.Credentials(ctx)
	if err != nil {
		return S3{}, err
	}
	if extDir == "" {
		extDir = os.Getenv(ExtensionsEnv)
	}
	s := S3{KeyID: creds.AccessKeyID, Secret: creds.SecretAccessKey, SessionToken: creds.SessionToken,
		Region: cfg.Region, PathStyle: cfg.PathStyle, UseSSL: true, ExtensionDirectory: extDir}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" {
			return S3{}, fmt.Errorf("AWS_ENDPOINT_URL %q: not a URL such as http://127.0.0.1:9000", cfg.Endpoint)
		}
		s.Endpoint, s.UseSSL = u.Host, u.Scheme != "http"
	}
	return s, nil
}

// EnableAWS loads httpfs into the connection exec runs on and creates the
// S3 secret from the AWS chain (AWS): every DuckDB that reads or writes
// s3:// is set up this one way.
func EnableAWS(ctx context.Context, exec func(q string) error, extDir string) error {
	s, err := AWS(ctx, extDir)
	if err != nil {
		return err
	}
	return EnableS3(ctx, exec, s)
}

// EnableAWS is EnableAWS on the engine's connection, then the config's
// httpfs settings Open had to leave (a *SettingError when one is refused).
func (e *Engine) EnableAWS(ctx context.Context, extDir string) error {
	exec := func(q string) error {
		if strings.HasPrefix(q, "SET ") {
			return e.set(ctx, q)
		}
		_, err := e.conn.ExecContext(ctx, q)
		return err
	}
	if err := EnableAWS(ctx, exec, extDir); err != nil {
		return err
	}
	for _, kv := range e.extSettings {
		if err := e.set(ctx, fmt.Sprintf("SET %s = %s", kv[0], quote(kv[1]))); err != nil {
			return &SettingError{Key: kv[0], Msg: fmt.Sprintf(" = %q: %v", redact.Value(kv[0], kv[1]), redact.SettingError(firstLine(err), kv[0], kv[1]))}
		}
	}
	return nil
}

// EnableS3 loads httpfs and creates the S3 secret from s through exec (one
// connection's ExecContext). The secret lives only in the process: its
// values never reach an error, a log or a file, and a DuckDB error is
// reported with them blanked out.
func EnableS3(ctx context.Context, exec func(q string) error, s S3) error {
	// The secret made below must be the only one (Open sets this too): a
	// saved secret with a narrower SCOPE would win over it.
	if err := exec("SET allow_persistent_secrets = false"); err != nil {
		return fmt.Errorf("duckdb: turn off saved secrets: %w", firstLine(err))
	}
	load := "INSTALL httpfs; LOAD httpfs"
	if s.ExtensionDirectory != "" {
		if err := exec("SET extension_directory = " + quote(s.ExtensionDirectory)); err != nil {
			return fmt.Errorf("duckdb: set the extension directory %s: %w", s.ExtensionDirectory, firstLine(err))
		}
		load = "LOAD httpfs"
	}
	if err := exec(load); err != nil {
		return fmt.Errorf("duckdb: load the httpfs extension, which s3:// paths need (set --duckdb-extensions, $%s or engagement.duckdbExtensions to a directory holding v1.5.5/linux_amd64/httpfs.duckdb_extension; bash scripts/httpfs.sh install makes one): %w",
			ExtensionsEnv, firstLine(err))
	}
	// An S3 URL names one object, literally: a key may hold '?', '[' or
	// '*', which httpfs would otherwise read as query parameters or a glob
	// (and no escape exists for them there). The tool never globs.
	if err := exec("SET s3_url_compatibility_mode = true"); err != nil {
		return fmt.Errorf("duckdb: turn off globs in S3 URLs: %w", firstLine(err))
	}
	// DuckDB's own retries gave up in about half a second (3 retries, the
	// first at once): a 1.5 s outage during staging, the longest phase,
	// failed a publish the SDK's requests would have waited out. These are
	// 8 retries, the first at once, then waits of 100 ms doubling: 12.7 s
	// in all. A request that gets no answer is given up after 10 s, not
	// DuckDB's 30: with its 9 attempts a frozen server held one request
	// 4.7 minutes, a stage 9, and a SIGTERM as long (DuckDB does not cut a
	// request in flight). The config's duckdb.http_* keys, set after, win.
	for _, set := range []string{"SET http_retries = 8", "SET http_retry_wait_ms = 100", "SET http_retry_backoff = 2", "SET http_timeout = 10"} {
		if err := exec(set); err != nil {
			return fmt.Errorf("duckdb: %s: %w", set, firstLine(err))
		}
	}
	style := "vhost"
	if s.PathStyle {
		style = "path"
	}
	opts := []string{"TYPE s3", "PROVIDER config", "KEY_ID " + quote(s.KeyID), "SECRET " + quote(s.Secret), "REGION " + quote(s.Region),
		"URL_STYLE " + quote(style), fmt.Sprintf("USE_SSL %t", s.UseSSL)}
	if s.SessionToken != "" {
		opts = append(opts, "SESSION_TOKEN "+quote(s.SessionToken))
	}
	if s.Endpoint != "" {
		opts = append(opts, "ENDPOINT "+quote(s.Endpoint))
	}
	if err := exec("CREATE OR REPLACE TEMPORARY SECRET engagement_s3 (" + strings.Join(opts, ", ") + ")"); err != nil {
		msg := firstLine(err).Error()
		for _, v := range []string{s.Secret, s.SessionToken, s.KeyID} {
			if v != "" {
				msg = strings.ReplaceAll(msg, v, "***")
			}
		}
		return fmt.Errorf("duckdb: create the S3 secret: %s", msg)
	}
	return nil
}
