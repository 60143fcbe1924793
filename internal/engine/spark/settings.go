package spark

// The engine's Spark settings: those it forces, those it sets unless the
// config does, and how a setting is applied and checked on the session.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/redact"
)

// forced are settings the engine owns whatever the config says: event dates
// are UTC, and timestamps are written as UTC instants (TIMESTAMP_MICROS,
// isAdjustedToUTC, of the zoned type TIMESTAMP_LTZ: with TIMESTAMP_NTZ as
// the session's default the first and last event times were written
// without a zone) so readers see the same type the DuckDB engine writes
// instead of Spark's legacy INT96. A listed file that cannot be read, or is
// gone, fails the attempt as on DuckDB instead of being skipped with its
// events (the input counts skip it too, so no check would see them
// missing). The engine sizes its files itself (one write task a file), so a
// record limit per file would split them past the file count it checks.
var forced = [][2]string{
	{"spark.sql.session.timeZone", "UTC"},
	{"spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"},
	{"spark.sql.timestampType", "TIMESTAMP_LTZ"},
	{"spark.sql.files.ignoreCorruptFiles", "false"},
	{"spark.sql.files.ignoreMissingFiles", "false"},
	{"spark.sql.files.maxRecordsPerFile", "0"},
	// A page whose checksum fails is an unreadable file, not other values
	// (a flipped bit moved events to other dates); unannotated binary is no
	// string, as on DuckDB.
	{"parquet.page.verify-checksum.enabled", "true"},
	{"spark.sql.parquet.binaryAsString", "false"},
	// Row groups are never skipped by their footer statistics, which no
	// CRC covers: a raw file whose event_time statistics lied lost its
	// date (0 fact files), the pins' filters theirs likewise.
	{"spark.sql.parquet.filterPushdown", "false"},
	// The Go client cannot decode Arrow's LARGE_STRING: true failed every
	// publish, exit 1, naming no key.
	{"spark.sql.execution.arrow.useLargeVarTypes", "false"},
	// Names are matched as written, as DuckDB reads nested fields: a raw
	// struct column the job never reads, with two fields differing in case
	// (userId, userid: a producer's JSON), failed every Spark publish as
	// "a column name appears twice" while DuckDB published. Top-level
	// names are judged by the job itself on both engines.
	{"spark.sql.caseSensitive", "true"},
}

// mustBe are settings a config may only give the value Spark has by
// default, each with why: one another value lets through a setting the
// engine cannot check, or fails every run.
var mustBe = map[string][2]string{
	"spark.sql.legacy.setCommandRejectsSparkCoreConfs": {"true", "false lets a core setting (spark.task.*, spark.ui.*) be set on a session where it has no effect, so the engine cannot tell that the server runs with another value"},
	"spark.sql.execution.arrow.useLargeVarTypes":       {"false", "the Go client cannot decode the large Arrow strings it makes results of: every publish failed"},
}

// speculation is the one setting the engine needs from the server's start:
// a task run twice (a speculative copy) writes its staged files twice, and
// the job counts on one writer a file. Spark reads it when the server
// starts and will not change it on a session, so the engine can only
// refuse a config that asks for it and a server that runs with it.
const speculation = "spark.speculation"

// speculationOff reports whether v turns speculation off as Spark parses a
// boolean setting (trimmed, any case). Anything else, a value Spark would
// refuse included, is not off.
func speculationOff(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "false") }

// speculationConflict is what follows the key in the refusal of a config
// asking for speculation: ForcedConflict's, and Open's for a caller that
// did not check.
func speculationConflict(v string) string {
	return fmt.Sprintf(" = %q: not settable: the engine runs with speculation off (a task run twice writes its files twice) and refuses a server that has it on; remove the line or set false", v)
}

// serverSpeculation refuses a server whose spark.speculation (v, as the
// session reads it) is not false: restarting it is the fix, whatever the
// config says, so the advice always names false.
func serverSpeculation(remote, v string) error {
	if speculationOff(v) {
		return nil
	}
	return fmt.Errorf("spark %s: the server runs with %s = %s, and a task run twice writes its files twice: restart the Spark Connect server with --conf %[2]s=false",
		remote, speculation, v)
}

// checkSpeculation reads the server's spark.speculation whether or not the
// config names it: a config without the line ran unchecked on a server
// with speculation on. A server started without the key has Spark's
// default, off.
func (e *Engine) checkSpeculation(ctx context.Context) error {
	var v string
	if err := e.bounded(ctx, "get "+speculation, func(ctx context.Context) (err error) {
		v, err = e.session.Config().GetWithDefault(ctx, speculation, "false")
		return err
	}); err != nil {
		return wrap(e.remote, "get "+speculation, err)
	}
	return serverSpeculation(e.remote, v)
}

// ForcedConflict returns the first setting (in key order) that sets one of
// forced to another value, or asks for speculation, with what follows the
// key in its error: the engine applies its own value after the config's,
// so the config's was dropped in silence (DuckDB's engine refuses its time
// zone alike), and speculation it cannot run with.
func ForcedConflict(settings map[string]string) (key, msg string) {
	var keys []string
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == speculation && !speculationOff(settings[k]) {
			return k, speculationConflict(settings[k])
		}
		if strings.HasPrefix(k, "spark.hadoop.") {
			// Accepted, recorded in _attempt.json as applied, and of no
			// effect: a session cannot change the cluster's Hadoop
			// configuration (S3A's endpoint and credentials).
			return k, fmt.Sprintf(" = %q: not settable: Hadoop's settings are the cluster's, read when it starts; give the server --conf %s=… (docs/spark.md) and remove the line",
				redact.Value(k, settings[k]), k)
		}
		if m, ok := mustBe[k]; ok && !strings.EqualFold(strings.TrimSpace(settings[k]), m[0]) {
			return k, fmt.Sprintf(" = %q: not settable: %s; remove the line", settings[k], m[1])
		}
		for _, kv := range forced {
			if k == kv[0] && !strings.EqualFold(strings.TrimSpace(settings[k]), kv[1]) && !(k == "spark.sql.session.timeZone" && isUTC(settings[k])) {
				return k, fmt.Sprintf(" = %q: not settable: the engine forces %s (event dates are UTC dates, timestamps are written as UTC instants, an unreadable input fails the run, no row group is skipped by its footer statistics); remove the line", settings[k], kv[1])
			}
		}
	}
	return "", ""
}

// isUTC reports whether a time zone setting names UTC under another
// spelling (Etc/UTC, GMT, Z, +00:00): a config that ran when the value
// was silently replaced must not fail now that another value is refused.
func isUTC(v string) bool {
	v = strings.TrimSpace(v)
	switch strings.ToUpper(v) {
	case "Z", "+00:00", "-00:00", "+00", "UTC+0", "GMT+0":
		return true
	}
	loc, err := time.LoadLocation(v)
	if err != nil {
		return false
	}
	for _, m := range []time.Month{time.January, time.July} {
		if _, off := time.Date(2026, m, 1, 0, 0, 0, 0, loc).Zone(); off != 0 {
			return false
		}
	}
	return true
}

// defaults are settings the engine chooses unless the config names them.
// The fact grain is cached once and read by the figures and both writes;
// Spark keeps a cached plan's 200 shuffle partitions unless it may change
// them, and then every read of the cache ran 200 tasks (on the design day
// a count over it took 105 s of executor time on 2 cores). Allowed, AQE
// coalesces them as it does for any other query.
//
// The fact plan distributes events and enrollments by (learner_key, _salt)
// and joins them on (learner_key, course_id, _salt): Spark shuffles both
// again for the join unless it may accept a partitioning on some of the
// join keys (factQuery).
//
// The cache is kept uncompressed: it is read three times (the figures and
// both writes) and lives only for one publish, and on the design day
// compressing it cost more of the build than its reads saved.
//
// A partitioned write sorts each task's rows by the partition columns
// first, unless the writer may keep files open: every task of Write holds
// one (date, part), so the sort (of a whole date's fact rows, spilling on
// the design day) bought nothing. With planned writes off and concurrent
// writers allowed, a task writes its rows as they come, and sorts only if
// it meets more partitions than writers.
//
// A temporary view keeps its analyzed plan, not its SQL text. Kept as text,
// every statement naming a view analyzed it again, down to the raw view's
// scans, and Spark read each listed file's footer again for its schema, one
// job a file: a third of a fixture publish (the figures query alone ran 16
// such jobs), more the more files a backfill lists. A view keeping its plan
// is no longer uncached by DROP VIEW (BuildFacts uncaches first), and keeps
// the raw files' sizes from Inspect: a file changed since fails the read,
// and the job then names the change (job.Publisher).
//
// A scan lists its files again, as a job of one task a file once there are
// more than 32 (parallelPartitionDiscovery), each task a few milliseconds
// of scheduling for one file's status: the raw view of 1,050 files took 5.0
// s on 2 cores to register, and 1.0 to 1.2 s with at most 64 tasks a scan
// (0.55 s with 16; benchmark.md, run 38). 64 keeps a large cluster's
// listing of thousands of files on an object store spread wide.
var defaults = [][2]string{
	{"spark.sql.legacy.storeAnalyzedPlanForView", "true"},
	{"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true"},
	{"spark.sql.requireAllClusterKeysForCoPartition", "false"},
	{"spark.sql.inMemoryColumnarStorage.compressed", "false"},
	{"spark.sql.optimizer.plannedWrite.enabled", "false"},
	{"spark.sql.maxConcurrentOutputFileWriters", "4"},
	{"spark.sql.sources.parallelPartitionDiscovery.parallelism", "64"},
}

// findUnknown keeps the config's spark.sql.* keys the server does not know:
// Spark takes any key and nothing reads a misspelt one, so
// spark.sql.shuffle.partitons would leave the partitions at Spark's default
// in silence. Spark registers every SQL setting it reads, and a setting is
// modifiable only when registered and not static; a static one refused the
// set (e.static). Catalogs (spark.sql.catalog.NAME) are never registered.
func (e *Engine) findUnknown(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if !strings.HasPrefix(k, "spark.sql.") || strings.HasPrefix(k, "spark.sql.catalog.") || e.static[k] {
			continue
		}
		var known bool
		if err := e.bounded(ctx, "check "+k, func(ctx context.Context) (err error) {
			known, err = e.session.Config().IsModifiable(ctx, k)
			return err
		}); err != nil {
			return wrap(e.remote, "check "+k, err)
		}
		if !known {
			e.unknown = append(e.unknown, k)
		}
	}
	return nil
}

// UnknownSettings are the config's spark.sql.* keys this server does not
// know (a misspelling, or a setting of another Spark version): they were
// set, and nothing reads them.
func (e *Engine) UnknownSettings() []string { return e.unknown }

func (e *Engine) set(ctx context.Context, key, value string) error {
	// A secret-named setting's value (an S3A secret key) is never shown:
	// this error reaches the log, the result document and the lineage.
	shown := redact.Value(key, value)
	step := fmt.Sprintf("set %s = %s", key, shown)
	err := e.bounded(ctx, step, func(ctx context.Context) error { return e.session.Config().Set(ctx, key, value) })
	if err == nil {
		return nil
	}
	if se := sparkError(err); se == nil || !strings.HasPrefix(se.ErrorClass, "CANNOT_MODIFY_CONFIG") {
		return redact.SettingError(wrap(e.remote, step, err), key, value)
	}
	var got string
	gerr := e.bounded(ctx, "get "+key, func(ctx context.Context) (err error) { got, err = e.session.Config().Get(ctx, key); return err })
	if gerr == nil && got == value {
		if e.static == nil {
			e.static = map[string]bool{}
		}
		e.static[key] = true
		return nil
	}
	if gerr != nil {
		got = "unset"
	}
	return &SettingError{Key: key, Err: fmt.Errorf("spark %s: %s = %s cannot be set on a running session and the server has %s: start the server with --conf %s=%s",
		e.remote, key, shown, redact.Value(key, got), key, shown)}
}

// Setting returns the session's value of a Spark setting.
func (e *Engine) Setting(ctx context.Context, key string) (string, error) {
	var v string
	err := e.onServer(func() (err error) { v, err = e.session.Config().Get(ctx, key); return err })
	if err != nil {
		return "", wrap(e.remote, "get "+key, err)
	}
	return v, nil
}
