// Package duckdb runs the job on embedded DuckDB. It reads and writes the
// local filesystem (httpfs is not available offline).
package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/progress"
)

// Engine is the DuckDB implementation of engine.Engine. It holds one
// connection because temporary tables and session settings are per
// connection.
type Engine struct {
	db       *sql.DB
	conn     *sql.Conn
	progress progress.Reporter
}

// SetProgress makes Stage report its steps (which statement runs, dates
// written, rows written) to r. DuckDB's own query progress is not reachable
// through duckdb-go, so a step is one SQL statement.
func (e *Engine) SetProgress(r progress.Reporter) { e.progress = r }

func (e *Engine) reporter() progress.Reporter {
	if e.progress == nil {
		return progress.Discard
	}
	return e.progress
}

var _ engine.Engine = (*Engine)(nil)

var settingName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Open starts an in-memory DuckDB and applies settings (the duckdb.* keys of
// the config, without the prefix). The session time zone is forced to UTC so
// that event dates never depend on the machine's zone.
func Open(ctx context.Context, settings map[string]string) (*Engine, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("open duckdb: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open duckdb connection: %w", err)
	}
	e := &Engine{db: db, conn: conn}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !settingName.MatchString(k) {
			e.Close()
			return nil, fmt.Errorf("duckdb.%s: not a DuckDB setting name", k)
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET %s = %s", k, quote(settings[k]))); err != nil {
			e.Close()
			return nil, fmt.Errorf("duckdb.%s = %q: %w", k, settings[k], err)
		}
	}
	if _, err := conn.ExecContext(ctx, "SET TimeZone = 'UTC'"); err != nil {
		e.Close()
		return nil, fmt.Errorf("set duckdb time zone: %w", err)
	}
	return e, nil
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "duckdb" }

// Close releases the database.
func (e *Engine) Close() error {
	var errs []error
	if e.conn != nil {
		errs = append(errs, e.conn.Close())
	}
	if e.db != nil {
		errs = append(errs, e.db.Close())
	}
	return errors.Join(errs...)
}

// DB exposes the connection for readers that share the engine's settings.
func (e *Engine) DB() *sql.Conn { return e.conn }

func (e *Engine) exec(ctx context.Context, what, q string) error {
	if _, err := e.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// quote makes a SQL string literal. DuckDB's COPY and table functions take
// literals, not parameters, so every value that reaches SQL goes through here.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// globEscaper escapes what DuckDB's file readers expand as a pattern: every
// path given to read_parquet (or parquet_file_metadata) is a glob, so a
// '[', '*' or '?' in a name becomes a one-character class matching itself.
// Braces and backslashes are literal to DuckDB.
var globEscaper = strings.NewReplacer("[", "[[]", "*", "[*]", "?", "[?]")

// FileRef makes a SQL literal that DuckDB's file readers take as exactly
// the file p, never as a pattern that could match a sibling.
func FileRef(p string) string { return quote(globEscaper.Replace(p)) }

// FileList makes a SQL list of FileRef literals: ['a', 'b'].
func FileList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = FileRef(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// S3 is what DuckDB's httpfs extension needs to read and write s3:// paths,
// resolved by the command from the standard AWS chain.
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

// EnableS3 loads httpfs and creates the S3 secret from s. The secret's
// values never reach an error, a log or a file: a DuckDB error is reported
// with them blanked out.
func (e *Engine) EnableS3(ctx context.Context, s S3) error {
	load := "INSTALL httpfs; LOAD httpfs"
	if s.ExtensionDirectory != "" {
		if err := e.exec(ctx, "set the extension directory", "SET extension_directory = "+quote(s.ExtensionDirectory)); err != nil {
			return err
		}
		load = "LOAD httpfs"
	}
	if _, err := e.conn.ExecContext(ctx, load); err != nil {
		return fmt.Errorf("duckdb: load the httpfs extension, which s3:// paths need (set engagement.duckdbExtensions to a directory holding v1.5.5/linux_amd64/httpfs.duckdb_extension; bash scripts/httpfs.sh install makes one): %w", firstLine(err))
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
	if _, err := e.conn.ExecContext(ctx, "CREATE OR REPLACE SECRET engagement_s3 ("+strings.Join(opts, ", ")+")"); err != nil {
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
