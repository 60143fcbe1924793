package config

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/redact"
	"github.com/techlearningpro/engagement/internal/storage"
)

// Job is everything one run needs, after the config file and the flags have
// been merged and checked. Pins, dates and the job id are always explicit:
// nothing is looked up as "latest".
type Job struct {
	JobID string
	Dates []dates.Date

	Engine      string // duckdb or spark
	SparkRemote string
	SparkUI     string // the Spark driver's UI (http://host:port); "" asks the server
	Warehouse   string
	Raw         string
	Lessons     string
	Enrollments string

	ManifestID           string
	EnrollmentSnapshotID string

	UnknownCap             float64
	HotCourses             []string
	SaltBuckets            int
	RestatementHorizonDays int
	LatenessDays           int
	TargetFileBytes        int64
	ProhibitedColumns      []string // lower case; empty only when the config says "none"
	FreshnessMaxDays       int      // 0 turns the freshness check off
	LockTimeout            time.Duration
	DuckDBExtensions       string // directory of DuckDB extensions (httpfs, for s3://); empty: DuckDB's own
	S3PathStyle            string // auto, true or false
	AsOf                   dates.Date
	AsOfSet                bool // false: the command fills AsOf from the clock, outside the transform
	AllowOutsideHorizon    bool

	Spark  map[string]string // spark.* keys, passed to the Spark session as given
	DuckDB map[string]string // duckdb.* keys without the prefix, applied with SET
	// Where says where each key not left at its default was set
	// (FILE:LINE, the flag as --name, "flag" when unnamed, or the
	// variable's name), for an error to name it.
	Where map[string]string
}

// Shown names a key's value for an error as the user gave it: its flag
// when it came from one (or is the default), else the key with its file
// line or variable, so that the flag an error names was really typed.
func (j Job) Shown(key, flag string) string {
	if w := j.Where[key]; w != "" && w != "flag" && !strings.HasPrefix(w, "--") {
		return key + " (" + w + ")"
	}
	return flag
}

// Key names of the job's own settings. Every one of them can also be given as
// a flag, which wins over the file.
const (
	KeyEngine                 = "engagement.engine"
	KeySparkRemote            = "engagement.sparkRemote"
	KeySparkUI                = "engagement.sparkUI"
	KeyWarehouse              = "engagement.warehouse"
	KeyRaw                    = "engagement.raw"
	KeyLessons                = "engagement.lessons"
	KeyEnrollments            = "engagement.enrollments"
	KeyManifestID             = "engagement.manifestId"
	KeyEnrollmentSnapshotID   = "engagement.enrollmentSnapshotId"
	KeyUnknownCap             = "engagement.unknownCap"
	KeyHotCourses             = "engagement.hotCourses"
	KeySaltBuckets            = "engagement.saltBuckets"
	KeyRestatementHorizonDays = "engagement.restatementHorizonDays"
	KeyLatenessDays           = "engagement.latenessDays"
	KeyTargetFileBytes        = "engagement.targetFileBytes"
	KeyProhibitedColumns      = "engagement.prohibitedColumns"
	KeyFreshnessMaxDays       = "engagement.freshnessMaxDays"
	KeyAsOfDate               = "engagement.asOfDate"
	KeyLockTimeout            = "engagement.lockTimeout"
	KeyDuckDBExtensions       = "engagement.duckdbExtensions"
	KeyS3PathStyle            = "engagement.s3PathStyle"
)

// ProhibitedNone is the one value of engagement.prohibitedColumns that
// turns the prohibited-column check off; an empty value is refused, so the
// check can never be lost to a blank line.
const ProhibitedNone = "none"

// Defaults are the production values; the fixture config overrides what differs.
var defaults = map[string]string{
	KeyEngine:                 "duckdb",
	KeySparkRemote:            "sc://127.0.0.1:15002",
	KeyUnknownCap:             "0.02",
	KeySaltBuckets:            "8",
	KeyRestatementHorizonDays: "3",
	KeyLatenessDays:           "2",
	KeyTargetFileBytes:        "192MB",
	KeyProhibitedColumns:      "email,payment_token,card_number,raw_ip",
	KeyFreshnessMaxDays:       "2",
	KeyLockTimeout:            "5m",
	KeyS3PathStyle:            "auto",
}

var pathKeys = map[string]bool{KeyWarehouse: true, KeyRaw: true, KeyLessons: true, KeyEnrollments: true, KeyDuckDBExtensions: true}

// Default is a key's default value as the config takes it ("" when none).
func Default(key string) string { return defaults[key] }

// KnownKeys lists every engagement.* key, sorted.
func KnownKeys() []string {
	keys := []string{KeyEngine, KeySparkRemote, KeySparkUI, KeyWarehouse, KeyRaw, KeyLessons, KeyEnrollments,
		KeyManifestID, KeyEnrollmentSnapshotID, KeyUnknownCap, KeyHotCourses, KeySaltBuckets,
		KeyRestatementHorizonDays, KeyLatenessDays, KeyTargetFileBytes, KeyProhibitedColumns,
		KeyFreshnessMaxDays, KeyAsOfDate, KeyLockTimeout, KeyDuckDBExtensions, KeyS3PathStyle}
	sort.Strings(keys)
	return keys
}

// Override is one flag value for a config key. Paths given as flags are
// relative to the working directory; paths in the file are relative to the
// file, so a config works from any directory.
type Override struct {
	Key   string
	Value string
	// Source names where the value came from in an error ("flag" when
	// empty; the variable's name for one from the environment).
	Source string
}

// inlineComment is a `#` after white space, or opening the value (a key
// left in the file with only a comment): an inline comment, in formats
// that have them.
var inlineComment = regexp.MustCompile(`(^|\s)#`)

// Resolve merges the file (may be nil) and the flag overrides into a Job. It
// does not check the job id or dates; see CheckPublish.
func Resolve(p *Properties, overrides []Override) (Job, error) {
	values := map[string]string{}
	from := map[string]string{}
	for k, v := range defaults {
		values[k] = v
		from[k] = "default"
	}
	j := Job{Spark: map[string]string{}, DuckDB: map[string]string{}, Where: map[string]string{}}
	inFile := map[string]bool{}
	written := map[string]string{} // each value as given, before a path is joined to the file's directory
	for _, k := range p.Keys() {
		v, _ := p.Get(k)
		if err := classify(k, p.where(k)); err != nil {
			return Job{}, err
		}
		engineKey := strings.HasPrefix(k, "spark.") || strings.HasPrefix(k, "duckdb.")
		if engineKey && inlineComment.MatchString(v) {
			// Neither engine's own format has inline comments either: the
			// comment went to the engine as part of the value (a spill
			// directory "/tmp/x # spill here", exit 0).
			return Job{}, exitcode.UsageError(fmt.Errorf("%s (%s): %q holds a comment: the properties format has inline comments nowhere, so it would be part of the value; put the comment on a line of its own", k, p.where(k), redact.Value(k, v)))
		}
		if engineKey && quoted(v) {
			// Neither engine strips them: a quoted spill directory became
			// a directory named with its quotes, beside the config.
			return Job{}, exitcode.UsageError(fmt.Errorf("%s (%s): %q is quoted: the properties format takes quotes as part of the value; remove them", k, p.where(k), redact.Value(k, v)))
		}
		if engineKey {
			// A tab may separate an engine setting's words (JVM options).
			if err := invisible(strings.ReplaceAll(v, "\t", " "), redact.Value(k, v)); err != nil {
				return Job{}, exitcode.UsageError(fmt.Errorf("%s (%s): %w", k, p.where(k), err))
			}
		}
		switch {
		case strings.HasPrefix(k, "spark."):
			j.Spark[k] = v
			j.Where[k] = p.where(k)
		case strings.HasPrefix(k, "duckdb."):
			if k == "duckdb.temp_directory" && v != "" && !filepath.IsAbs(v) {
				// Relative to the file as every path in it is, not to
				// wherever the scheduler starts the command.
				if p.pipe {
					return Job{}, exitcode.UsageError(fmt.Errorf("%s (%s): %w", k, p.where(k), p.noDirectory(v)))
				}
				v = filepath.Join(filepath.Dir(p.File), v)
			}
			j.DuckDB[strings.TrimPrefix(k, "duckdb.")] = v
			j.Where[k] = p.where(k)
		default:
			raw := v
			// A relative path is relative to the config file; a URL
			// (s3://bucket/prefix) is where it says.
			// A mistyped URL (s3:/bucket) is left as it is, for the
			// location's parse to refuse: joined, it would be a local
			// directory beside the file.
			if pathKeys[k] && v != "" && !filepath.IsAbs(v) && !strings.Contains(v, "://") {
				if _, err := storage.Parse(v); err == nil {
					if p.pipe {
						return Job{}, exitcode.UsageError(fmt.Errorf("%s (%s): %w", k, p.where(k), p.noDirectory(v)))
					}
					// A config in ./s3:c keeps its "./": joined, the path
					// read as a mistyped URL, and no spelling in the file
					// could avoid it.
					v = storage.LocalName(filepath.Join(filepath.Dir(p.File), v))
				}
			}
			values[k] = v
			written[k] = raw
			from[k] = p.where(k)
			inFile[k] = true
		}
	}
	for _, o := range overrides {
		src := o.Source
		if src == "" {
			src = "flag"
		}
		if err := classify(o.Key, src); err != nil {
			return Job{}, err
		}
		values[o.Key] = o.Value
		written[o.Key] = o.Value
		from[o.Key] = src
		delete(inFile, o.Key)
	}
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s (%s): %s", key, from[key], fmt.Sprintf(format, args...)))
	}
	// A value's white space at an end (a flag, a variable with a newline)
	// or an inline comment would be part of a path, a pin or a course id:
	// a warehouse named "wh   # prod" publishes, exit 0, where no reader
	// looks. The prohibited list says so in its own words.
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if pathKeys[k] && inFile[k] && v != "" {
			// Named here with its file and line: the flag a command
			// names a bad location by was never given.
			if _, err := storage.Parse(v); err != nil {
				bad(k, "%v", err)
				continue
			}
		}
		w, given := written[k]
		// A URL (engagement.sparkRemote, sparkUI) may carry a token or a
		// password: the refusals quote the value with its secrets masked,
		// its quotes, spaces and comment kept.
		shown := w
		if strings.Contains(w, "://") {
			shown = redact.Text(w, w)
		}
		switch {
		case !given || !strings.HasPrefix(k, "engagement.") || k == KeyProhibitedColumns:
		case strings.TrimSpace(w) != w:
			bad(k, "%q has white space at an end: remove it (a path or id never ends in one)", shown)
		case invisible(w, shown) != nil:
			bad(k, "%v", invisible(w, shown))
		case pathKeys[k] && innerVariable.MatchString(w):
			// A leading one is the location's parse's to refuse.
			bad(k, "%s holds a shell variable (%s) that nothing expanded here: write the path in full; a directory of that name would be written",
				shown, variableIn(w))
		case inFile[k] && inlineComment.MatchString(w):
			// Only the file has comment lines; a flag or a variable may
			// name a directory "Project #2" as it is.
			hint := ""
			if pathKeys[k] {
				hint = " (a path that holds \" #\" can be given as a flag)"
			}
			bad(k, "%q holds a comment: the properties format has inline comments nowhere, so it would be part of the value; put the comment on a line of its own%s", shown, hint)
		case quoted(w):
			bad(k, "%s is quoted: the properties format takes quotes as part of the value; remove them", shown)
		}
	}
	j.Engine = values[KeyEngine]
	if j.Engine != "duckdb" && j.Engine != "spark" {
		bad(KeyEngine, "engine %q: want duckdb or spark", j.Engine)
	}
	j.SparkRemote = values[KeySparkRemote]
	if !strings.HasPrefix(j.SparkRemote, "sc://") {
		bad(KeySparkRemote, "%q: want sc://HOST:PORT", redact.URL(j.SparkRemote))
	}
	j.SparkUI = values[KeySparkUI]
	if j.SparkUI != "" && !strings.HasPrefix(j.SparkUI, "http://") && !strings.HasPrefix(j.SparkUI, "https://") {
		bad(KeySparkUI, "%q: want http://HOST:PORT (the Spark driver's UI)", redact.URL(j.SparkUI))
	}
	j.Warehouse, j.Raw, j.Lessons, j.Enrollments = values[KeyWarehouse], values[KeyRaw], values[KeyLessons], values[KeyEnrollments]
	j.ManifestID, j.EnrollmentSnapshotID = values[KeyManifestID], values[KeyEnrollmentSnapshotID]

	var err error
	if j.UnknownCap, err = strconv.ParseFloat(values[KeyUnknownCap], 64); err != nil || math.IsNaN(j.UnknownCap) || j.UnknownCap < 0 || j.UnknownCap > 1 {
		bad(KeyUnknownCap, "%q: want a fraction between 0 and 1", values[KeyUnknownCap])
	}
	j.HotCourses = splitList(values[KeyHotCourses])
	if j.ProhibitedColumns, err = prohibitedList(values[KeyProhibitedColumns]); err != nil {
		bad(KeyProhibitedColumns, "%v", err)
	}
	ints := []struct {
		key      string
		min, max int
		why      string
		dst      *int
	}{
		// Each hot course's enrollment rows are copied once per bucket: a
		// count past the shuffle's partitions spreads nothing further, and
		// tens of thousands multiply a course's enrollments past what any
		// engine holds, failing long after the start instead of at it.
		{KeySaltBuckets, 1, 1024, " (each hot course's enrollments are copied once per bucket)", &j.SaltBuckets},
		{KeyRestatementHorizonDays, 1, 100000, "", &j.RestatementHorizonDays},
		{KeyLatenessDays, 0, 100000, "", &j.LatenessDays},
		{KeyFreshnessMaxDays, 0, 100000, "", &j.FreshnessMaxDays},
	}
	for _, f := range ints {
		n, err := strconv.Atoi(values[f.key])
		if err != nil || n < f.min || n > f.max {
			bad(f.key, "%q: want a whole number from %d to %d%s", values[f.key], f.min, f.max, f.why)
			continue
		}
		*f.dst = n
	}
	if j.TargetFileBytes, err = ParseBytes(values[KeyTargetFileBytes]); err != nil || j.TargetFileBytes <= 0 {
		bad(KeyTargetFileBytes, "%q: want a positive size such as 192MB", values[KeyTargetFileBytes])
	}
	j.DuckDBExtensions = values[KeyDuckDBExtensions]
	switch j.S3PathStyle = values[KeyS3PathStyle]; j.S3PathStyle {
	case "auto", "true", "false":
	default:
		bad(KeyS3PathStyle, "%q: want auto, true or false", j.S3PathStyle)
	}
	if j.LockTimeout, err = time.ParseDuration(values[KeyLockTimeout]); err != nil || j.LockTimeout <= 0 {
		bad(KeyLockTimeout, "%q: want a positive duration such as 5m or 30s", values[KeyLockTimeout])
	}
	if v := values[KeyAsOfDate]; v != "" {
		if j.AsOf, err = dates.Parse(v); err != nil {
			bad(KeyAsOfDate, "%v", err)
		}
		j.AsOfSet = true
	} else if _, given := from[KeyAsOfDate]; given {
		// An empty flag (a scheduler's template that rendered nothing)
		// would silently replace a pinned run date with today's.
		bad(KeyAsOfDate, "empty: give the run date as YYYY-MM-DD, or leave it out for today's UTC date")
	}
	if len(errs) > 0 {
		return Job{}, exitcode.UsageError(fmt.Errorf("config: %s", strings.Join(errs, "; ")))
	}
	for k, w := range from {
		if w != "default" {
			j.Where[k] = w
		}
	}
	return j, nil
}

// classify accepts spark.*, duckdb.* and the known engagement.* keys; anything
// else is refused with the nearest known key, because a misspelt key that is
// silently ignored runs production with a default nobody chose.
func classify(key, where string) error {
	if strings.HasPrefix(key, "spark.") || (strings.HasPrefix(key, "duckdb.") && len(key) > len("duckdb.")) {
		return nil
	}
	for _, k := range KnownKeys() {
		if k == key {
			return nil
		}
	}
	msg := fmt.Sprintf("%s: unknown config key %q", where, key)
	if near := nearest(key, KnownKeys()); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return exitcode.UsageError(fmt.Errorf("%s", msg))
}

func nearest(key string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		d := EditDistance(strings.ToLower(key), strings.ToLower(k))
		if d < bestD {
			best, bestD = k, d
		}
	}
	if bestD > len(key)/2+2 {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes (keys
// and flag names are ASCII): how near a misspelt name is to a known one.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// plainColumn is what a prohibited-list item may be: a column name, so a
// stray word, a quote or an inline comment is caught instead of quietly
// matching nothing.
var plainColumn = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// prohibitedList reads engagement.prohibitedColumns: plain column names,
// lower-cased, or exactly "none" for no check at all.
func prohibitedList(v string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(v), ProhibitedNone) {
		return []string{}, nil
	}
	var out []string
	for _, part := range strings.Split(v, ",") {
		item := strings.TrimSpace(part)
		if item == "" && strings.TrimSpace(v) != "" {
			return nil, fmt.Errorf("empty item in %q", v)
		}
		if item == "" {
			continue
		}
		if !plainColumn.MatchString(item) {
			hint := ""
			if strings.Contains(item, "#") {
				hint = " (the properties format has no inline comments: put the comment on a line of its own)"
			}
			return nil, fmt.Errorf("item %q is not a plain column name (letters, digits, _ and -)%s", item, hint)
		}
		out = append(out, strings.ToLower(item))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty: the prohibited-column check would be off; list the columns, or write %q to turn the check off on purpose", ProhibitedNone)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ParseBytes reads a byte size: a whole number, optionally with a KB, MB, GB
// or TB suffix (powers of 1024, as Spark reads them).
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}
