// Package duckdb runs the job on embedded DuckDB. It reads and writes the
// local filesystem (httpfs is not available offline).
package duckdb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/redact"
)

// Engine is the DuckDB implementation of engine.Engine. It holds one
// connection because temporary tables and session settings are per
// connection; only the raw files' schemas are read on a few more, for the
// time of that check (readers).
type Engine struct {
	db   *sql.DB
	conn *sql.Conn
	// spill is this engine's own directory under temp_directory, removed
	// by Close; spillLock is the lock it holds in it (spillDir).
	spill     string
	spillLock *os.File
	progress  progress.Reporter
	// sink holds the hashes a uniqueness check hands to Go (keyset.go).
	sink *hashSink
	// keyHash is the 64-bit hash the uniqueness checks count distinct
	// values of before any exact comparison (DuckDB's hash when nil; a
	// test weakens it to make collisions, which the exact pass must then
	// see through).
	keyHash func(cols string) string
	// alwaysBatch makes Write take its spilled way whatever the memory, so
	// the tests, whose temp tables never spill, run it too.
	alwaysBatch bool
	// uniqueBy forces the uniqueness checks' way (uniqueness.go) when
	// not uniqueAuto, so the tests run both.
	uniqueBy uniqueBy
	// titleEnumMinRows replaces titleEnumMinRows (stage.go) when above
	// zero, so the tests' small dates write their titles as an ENUM too.
	titleEnumMinRows int64
	// memoryLimit and threads are the config's DuckDB settings (Open),
	// for outOfMemory.
	memoryLimit, threads string
	// openFiles is a config's partitioned_write_max_open_files (0 when not
	// given): a batched write keeps at least this many files open.
	openFiles int
	// eventTimeTypes are raw files' event_time types as Inspect read them,
	// by path, for rawScan.
	typesMu        sync.Mutex
	eventTimeTypes map[string]string
	// rawSchemas are raw files' schemas as Inspect described them (names
	// and types in order), by path, for rawLayout.
	rawSchemas map[string]string
	// extSettings are the config's settings of the httpfs extension, set
	// once EnableAWS has loaded it.
	extSettings [][2]string
	// sets are the SET statements run on conn (set), the last of each
	// setting by its lower-case name: a reader connection runs those of
	// the settings DuckDB keeps per connection (readers).
	sets map[string]string
}

// set runs q, a statement "SET name = value", on the engine's connection,
// and keeps it for the reader connections.
func (e *Engine) set(ctx context.Context, q string) error {
	if _, err := e.conn.ExecContext(ctx, q); err != nil {
		return err
	}
	if f := strings.Fields(q); len(f) > 1 {
		e.sets[strings.ToLower(f[1])] = q
	}
	return nil
}

// hashOf is the uniqueness checks' hash of cols (a comma-separated list).
func (e *Engine) hashOf(cols string) string {
	if e.keyHash != nil {
		return e.keyHash(cols)
	}
	return "hash(" + cols + ")"
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

// defaultSettings are DuckDB settings the engine sets unless the config
// sets the same key (duckdb.<key>).
var defaultSettings = map[string]string{
	// DuckDB's bundled jemalloc gives memory back to the kernel from
	// background threads; without them, memory a thread frees stays
	// resident until later allocations happen to purge it (a dropped 1.2
	// GiB table stayed resident until the process ended, and went in 3 s
	// with them). The ten-date backfill at memory_limit 4GB held about 2
	// GiB that DuckDB no longer used, for minutes at a time, in seven runs
	// of ten: 5.3 to 6.0 GiB against 4.3 to 4.7 GiB (benchmark.md, run 12).
	"allocator_background_threads": "true",
	// httpfs asks an object's size, modification time and ETag (a HEAD
	// request) in every statement that opens it, and the engine's reads
	// open every raw file four times or more (its schema, the identity
	// scan, the stage); kept for the engine's one database, they are asked
	// once. Nothing stale is read: a GET whose ETag is not the kept one
	// fails, and the job lists the inputs again before the gate. On 1,050
	// raw files on an S3 server on the same machine the identity scan took
	// 0.23 s instead of 0.97 (benchmark.md, run 39). Only S3 locations
	// use it.
	"enable_http_metadata_cache": "true",
}

// withDefaults is settings with defaultSettings added where absent.
func withDefaults(settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings)+len(defaultSettings))
	for k, v := range defaultSettings {
		out[k] = v
	}
	for k, v := range settings {
		out[k] = v
	}
	return out
}

var settingName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// refused are the DuckDB settings a config may not set, each with why:
// one changes what is published, the others keep the engine from running
// (and were blamed on a setting the engine applies after them).
var refused = map[string]string{
	"default_collation":            "keys would compare by it in the joins, groups and checks (nocase merges alice and ALICE, and passes a course conflict): the tables are defined on the keys' bytes",
	"lock_configuration":           "the engine applies its own settings (the UTC time zone, its spill directory) after the config's",
	"enable_external_access":       "the engine reads the inputs and writes the staging through it",
	"timezone":                     "the engine forces UTC, so that an event's date never depends on a zone (the value would be dropped in silence)",
	"s3_url_compatibility_mode":    "the engine reads every S3 URL literally: off, a key holding [ ] * ? is a glob, and another file than the one listed is read (a hidden one, with exit 0)",
	"calendar":                     "an event's date is the Gregorian UTC date; another calendar would move the dates the engine's casts compute",
	"binary_as_string":             "an unannotated binary key column would be read as a string and published, where the Spark engine refuses it: the keys are strings",
	"default_order":                "the engine breaks ties in its checks (the longest title's lesson, the sample of repeated event ids) by ascending order, as the Spark engine does",
	"default_null_order":           "the engine's orderings place nulls as the Spark engine does",
	"null_order":                   "the engine's orderings place nulls as the Spark engine does (null_order is default_null_order's other name)",
	"errors_as_json":               "the engine reads DuckDB's errors to name the file, column or setting at fault",
	"autoinstall_known_extensions": "httpfs comes from --duckdb-extensions (or its explicit install) alone: auto-install fetched it from the internet, past the directory a host pins",
	"autoload_known_extensions":    "httpfs comes from --duckdb-extensions (or its explicit install) alone: auto-load took another copy from ~/.duckdb and set its keys before the engine's",
	"max_memory":                   "it is memory_limit's other name: write duckdb.memory_limit, which the engine reads to explain an out-of-memory error",
	"worker_threads":               "it is threads' other name: write duckdb.threads, which the engine reads to explain an out-of-memory error",
	"allow_persistent_secrets":     "the engine's S3 secret must be the only one: a secret saved on the host (~/.duckdb/stored_secrets) with a narrower SCOPE won over it and sent the reads to another server, published with exit 0",
	"secret_directory":             "the engine's S3 secret must be the only one: a saved secret with a narrower SCOPE wins over it",
	"default_secret_storage":       "the engine's S3 secret must be the only one: a saved secret with a narrower SCOPE wins over it",
	"home_directory":               "it moves where DuckDB looks for saved secrets and extensions: the engine's S3 secret and --duckdb-extensions must be the only ones",
	"explain_output":               "explain prints the physical plan, the joins' build sides: another form printed the unoptimized plan under the same header",
	"disable_timestamptz_casts":    "the engine reads a zoneless event_time as UTC through that cast: on, the first zoneless raw file failed every run, blamed on raw",
	"disabled_filesystems":         "the engine reads the inputs and writes the staging through DuckDB's file systems: a disabled one read as a damaged input",
	"search_path":                  "the engine's temporary tables and types live in DuckDB's default catalog",
	"schema":                       "it sets search_path to one schema: the engine's temporary tables and types live in DuckDB's default catalog",
}

// sameSetting pairs names DuckDB reads as one setting (duckdb_settings()'s
// aliases) that the engine leaves settable: given both, one line would
// win by the keys' order, not the later line's.
var sameSetting = [][2]string{{"checkpoint_threshold", "wal_autocheckpoint"}, {"username", "user"}}

func init() {
	// Settings that write what the engine runs somewhere: its statements
	// carry the S3 secret, and stdout and stderr are documents (one JSON
	// result, JSON log lines). A file they name may be pointer.json.
	for _, k := range []string{"log_query_path", "enable_logging", "logging_storage", "logging_mode", "logging_level",
		"enabled_log_types", "disabled_log_types", "enable_http_logging", "http_logging_output", "allow_unredacted_secrets",
		"enable_profiling", "profiling_output", "profile_output", "profiling_mode", "custom_profiling_settings",
		"enable_progress_bar", "enable_progress_bar_print"} {
		refused[k] = "it writes the engine's statements, profile or progress to a file, stdout or stderr: the statements carry the S3 secret, stdout is the run's result and stderr its JSON log; profile a query with explain, or DuckDB's own shell"
	}
	// The S3 secret the engine makes from the AWS chain wins over these, so
	// the value would be dropped in silence (and a credential written into
	// the attempt record). s3_kms_key_id is not in the secret: DuckDB
	// applies it to the staged files.
	for _, k := range []string{"s3_access_key_id", "s3_secret_access_key", "s3_session_token", "s3_endpoint", "s3_region",
		"s3_url_style", "s3_use_ssl"} {
		refused[k] = "the engine's S3 secret, made from the AWS chain (AWS_* variables, ~/.aws, the instance role), wins over it: set the credentials, region and endpoint there (docs/s3.md)"
	}
}

// SettingError is a duckdb.* key the engine or DuckDB refuses; the caller
// may say where the key was set (In).
type SettingError struct {
	Key string // without the prefix
	Msg string // what follows the key: ": not settable: ..." or " = "v": ..."
}

func (e *SettingError) Error() string { return "duckdb." + e.Key + e.Msg }

// In is the error with where the key was set (a config file's FILE:LINE).
func (e *SettingError) In(where string) string {
	return "duckdb." + e.Key + " (" + where + ")" + e.Msg
}

// offSwitches are refused keys whose value false turns off what they are
// refused for: a config that pins them off writes nothing (or, for the
// extension switches, asks what the engine sets anyway).
var offSwitches = map[string]bool{"enable_logging": true, "enable_http_logging": true, "allow_unredacted_secrets": true,
	"autoinstall_known_extensions": true, "autoload_known_extensions": true, "allow_persistent_secrets": true,
	"disable_timestamptz_casts": true,
	"enable_progress_bar":       true, "enable_progress_bar_print": true}

// checkSetting refuses a name that is no DuckDB setting's, or a setting
// the engine must own (at value v).
func checkSetting(k, v string) error {
	if offSwitches[k] {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "false", "0":
			return nil
		}
	}
	if settingName.MatchString(k) {
		if why := refused[k]; why != "" {
			return &SettingError{Key: k, Msg: ": not settable: " + why}
		}
		return nil
	}
	if lower := strings.ToLower(k); settingName.MatchString(lower) {
		// DuckDB's own spelling (TimeZone) names a setting the engine may
		// refuse: say which, not only the case.
		if why := refused[lower]; why != "" {
			return &SettingError{Key: k, Msg: ": not settable: " + why}
		}
		return &SettingError{Key: k, Msg: ": not a DuckDB setting name: write it in lower case (duckdb." + lower + ")"}
	}
	return &SettingError{Key: k, Msg: ": not a DuckDB setting name"}
}

// CheckSettings refuses what checkSetting refuses in settings (the duckdb.*
// keys without the prefix), before any is applied, and without an engine:
// Open checks with it, and the Spark engine's runs too.
func CheckSettings(settings map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if err := checkSetting(k, settings[k]); err != nil {
			return err
		}
	}
	for _, p := range sameSetting {
		_, a := settings[p[0]]
		if _, b := settings[p[1]]; a && b {
			return &SettingError{Key: p[1], Msg: fmt.Sprintf(": one DuckDB setting with duckdb.%s, also given: keep one", p[0])}
		}
	}
	return nil
}

// Open starts an in-memory DuckDB and applies settings (the duckdb.* keys of
// the config, without the prefix). The session time zone is forced to UTC so
// that event dates never depend on the machine's zone.
func Open(ctx context.Context, settings map[string]string) (*Engine, error) {
	if err := CheckSettings(settings); err != nil {
		return nil, err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("open duckdb: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open duckdb connection: %w", err)
	}
	e := &Engine{db: db, conn: conn, sink: &hashSink{}, eventTimeTypes: map[string]string{}, rawSchemas: map[string]string{}, sets: map[string]string{}}
	if err := registerKeepHash(conn, e.sink); err != nil {
		e.Close()
		return nil, err
	}
	// httpfs comes only from the configured directory (EnableAWS) or its
	// explicit INSTALL: with DuckDB's defaults, setting one of its keys
	// loaded it from ~/.duckdb or fetched it from the internet, past
	// --duckdb-extensions, and set it before EnableS3's retries, which then
	// replaced the config's.
	// Nor a secret saved on the host: with a narrower SCOPE it won over the
	// engine's own S3 secret and sent the reads to its server.
	for _, q := range []string{"SET autoinstall_known_extensions = false", "SET autoload_known_extensions = false", "SET allow_persistent_secrets = false"} {
		if err := e.set(ctx, q); err != nil {
			e.Close()
			return nil, fmt.Errorf("duckdb: %s: %w", q, firstLine(err))
		}
	}
	settings = withDefaults(settings)
	if parent := settings["temp_directory"]; parent != "" {
		dir, lock := spillDir(parent)
		settings["temp_directory"], e.spill, e.spillLock = dir, dir, lock
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if err := e.set(ctx, fmt.Sprintf("SET %s = %s", k, quote(settings[k]))); err != nil {
			if strings.Contains(err.Error(), "exists in the httpfs extension") {
				// httpfs's own (http_timeout, s3_uploader_max_filesize):
				// set once the engine loads httpfs from the configured
				// directory (EnableAWS), after its own defaults, and of no
				// use before: only s3:// locations need httpfs.
				e.extSettings = append(e.extSettings, [2]string{k, settings[k]})
				continue
			}
			e.Close()
			// A secret-named key's value is never shown, nor quoted back
			// by DuckDB's refusal.
			return nil, &SettingError{Key: k, Msg: fmt.Sprintf(" = %q: %v", redact.Value(k, settings[k]), redact.SettingError(err, k, settings[k]))}
		}
	}
	if err := e.set(ctx, "SET TimeZone = 'UTC'"); err != nil {
		e.Close()
		return nil, fmt.Errorf("set duckdb time zone: %w", err)
	}
	// Not asked of DuckDB: at a limit of a few KB that query fails too.
	e.memoryLimit, e.threads = settings["memory_limit"], settings["threads"]
	e.openFiles, _ = strconv.Atoi(settings["partitioned_write_max_open_files"])
	return e, nil
}

// MemoryError is DuckDB running out of the memory its settings allow.
// DuckDB's own advice names SET statements a user of this tool never
// writes; the error names the config keys instead, with their values.
type MemoryError struct {
	Limit, Threads string // the config's values; empty when not set
	Spill          string // the engine's spill directory
	Err            error
}

func (m *MemoryError) Error() string {
	msg := m.Err.Error()
	// DuckDB's advice is SQL (SET, PRAGMA); the config's keys replace it.
	for _, cut := range []string{"Possible solutions:", "This limit was set by"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = strings.TrimSpace(msg[:i])
		}
	}
	limit, threads := "duckdb.memory_limit "+m.Limit, "duckdb.threads "+m.Threads
	if m.Limit == "" {
		limit = "duckdb.memory_limit not set, DuckDB's default of 80% of the RAM"
	}
	if m.Threads == "" {
		threads = "duckdb.threads not set, one a core"
	}
	if strings.Contains(m.Err.Error(), "max_temp_directory_size") {
		// Memory was full and so was the disk it spills to: the disk is
		// what to look at.
		return fmt.Sprintf("%s: DuckDB could not spill past its memory limit (%s) into %s: its disk is full or DuckDB's cap on it was reached: free space there, point duckdb.temp_directory at a larger disk, or raise duckdb.memory_limit",
			msg, limit, cmp.Or(m.Spill, "its temp directory"))
	}
	return fmt.Sprintf("%s: DuckDB reached its memory limit (%s; %s): raise duckdb.memory_limit or lower duckdb.threads in the config", msg, limit, threads)
}

func (m *MemoryError) Unwrap() error { return m.Err }

// outOfMemory makes DuckDB's out-of-memory error, wherever a method of the
// engine met it, a MemoryError.
func (e *Engine) outOfMemory(err error) error {
	var m *MemoryError
	if err == nil || !strings.Contains(err.Error(), "Out of Memory Error") || errors.As(err, &m) {
		return err
	}
	return &MemoryError{Limit: e.memoryLimit, Threads: e.threads, Spill: e.spill, Err: err}
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "duckdb" }

// UnreadableParquet implements engine.ParquetLimited: DuckDB reads
// LZ4_RAW, not the framed LZ4 Hadoop writes (Spark's "lz4" codec), and
// BYTE_STREAM_SPLIT only of FLOAT and DOUBLE values; it named no column
// when it failed on either.
func (e *Engine) UnreadableParquet() map[string]string {
	const split = "the duckdb engine reads it only for FLOAT and DOUBLE values, and the spark engine not at all; have the producer write the column without it (pyarrow: use_byte_stream_split=False)"
	return map[string]string{
		"LZ4":                                    "the duckdb engine cannot read Hadoop's framed LZ4 (Spark's lz4 codec; it reads LZ4_RAW); publish with --engine spark, or have the producer write snappy, zstd or lz4_raw",
		"BYTE_STREAM_SPLIT INT32":                split,
		"BYTE_STREAM_SPLIT INT64":                split,
		"BYTE_STREAM_SPLIT FIXED_LEN_BYTE_ARRAY": split,
	}
}

// Close releases the database.
func (e *Engine) Close() error {
	var errs []error
	if e.conn != nil {
		errs = append(errs, e.conn.Close())
	}
	if e.db != nil {
		errs = append(errs, e.db.Close())
	}
	if e.spill != "" {
		errs = append(errs, os.RemoveAll(e.spill))
	}
	if e.spillLock != nil {
		e.spillLock.Close()
	}
	return errors.Join(errs...)
}

// spillDir makes this engine's own directory under parent (the
// configured temp_directory) and locks it for the engine's life. DuckDB
// names its spill files by size class and index, not by process, and
// deletes every one of them in its directory when it closes: two
// publishes spilling into one directory at once overwrote and deleted
// each other's blocks, and one published wrong enrolled_event_count
// figures with exit 0. The name is random (os.MkdirTemp), not the pid: a
// pid is not unique among containers sharing a disk.
//
// A parent that cannot be written fails nothing here: a run that never
// spills needs no directory, and DuckDB reports a spill there as its own
// error. The directories of runs that are gone (killed while spilling)
// are swept first, so they do not pile up.
func spillDir(parent string) (dir string, lock *os.File) {
	_ = os.MkdirAll(parent, 0o755)
	sweepSpill(parent)
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return filepath.Join(parent, fmt.Sprintf("run-unmade-%d", os.Getpid())), nil
	}
	f, err := os.OpenFile(filepath.Join(dir, spillLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return dir, nil
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return dir, nil
	}
	return dir, f
}

// spillLock is the file in a spill directory whose lock its engine holds
// while it lives: the kernel lets go of it when the process ends, in any
// pid namespace.
const spillLock = "engagement.lock"

// spillSweepAge is how old a spill directory must be before it is swept:
// a new one may not hold its lock yet.
const spillSweepAge = time.Minute

// sweepSpill removes parent's run-* directories whose lock no process
// holds. One without the lock file (another user's, unreadable, or of an
// older build) is left alone.
func sweepSpill(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, en := range entries {
		if !en.IsDir() || !strings.HasPrefix(en.Name(), "run-") {
			continue
		}
		dir := filepath.Join(parent, en.Name())
		if info, err := en.Info(); err != nil || time.Since(info.ModTime()) < spillSweepAge {
			continue
		}
		f, err := os.Open(filepath.Join(dir, spillLock))
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(dir)
		}
		f.Close()
	}
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
// the file p, never as a pattern that could match a sibling. An s3:// URL
// is literal already: EnableS3 turns globs and query parameters off for
// S3 URLs (s3_url_compatibility_mode), where no escape would work.
func FileRef(p string) string {
	if strings.HasPrefix(p, "s3://") {
		return quote(p)
	}
	return quote(globEscaper.Replace(localPath(p)))
}

// localPath keeps DuckDB from reading a relative path that begins with "~"
// (a directory named ~w) as one under $HOME: it expands a leading ~ with no
// slash after it too ("~w" became "$HOMEw"), so read showed another
// directory's files while status showed the pointer's. "./" in front makes
// it the path it is.
func localPath(p string) string {
	if strings.HasPrefix(p, "~") {
		return "./" + p
	}
	return p
}

// FileList makes a SQL list of FileRef literals: ['a', 'b'].
func FileList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = FileRef(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
