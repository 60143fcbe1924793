package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
	"github.com/techlearningpro/engagement/internal/gen"
	"github.com/techlearningpro/engagement/internal/job"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
	wh "github.com/techlearningpro/engagement/internal/warehouse"
)

// The hostile-input corpus: one directory per case under testdata/hostile,
// each with a case.json (what to break, what to run, the one outcome it must
// have and why) and any small broken file it needs. Large inputs (a 10 MB
// title, a 10 KB job id) are recipes in the case file, built at test time.
var hostileDir = filepath.Join("..", "..", "testdata", "hostile")

// hostileCase is the schema of case.json; unknown fields are refused so a
// misspelt expectation cannot silently assert nothing.
type hostileCase struct {
	// Why records the decision: what a data engineer expects and why.
	Why   string    `json:"why"`
	Setup []setupOp `json:"setup"`
	// Args are appended to the base publish of the workspace (config,
	// --job-id bad-1, the two fixture dates, the input and warehouse
	// flags); a flag named here replaces the base one.
	Args []string `json:"args"`
	// Command, when given, is the whole argument list run instead of the
	// base publish (a misspelt command, status on a warehouse), with the
	// same placeholders; Args must then be empty.
	Command []string `json:"command"`
	Exit    int      `json:"exit"`
	// Error is the whole "engagement: ..." line; '*' matches any run of
	// characters and stands only for parts that are not ours (a DuckDB
	// message). Placeholders: {dir} {raw} {lessons} {enrollments}
	// {warehouse} {conf} {case}, and {src} (the pristine fixture) in queries.
	Error string `json:"error"`
	// GateChecks are the failed checks the rejection record must list,
	// exactly, for exit 3.
	GateChecks []string `json:"gate_checks"`
	// Published are the dates an exit-0 case publishes; their entries and
	// course_day rows must equal the fixture's expected.json.
	Published []string `json:"published"`
	// CourseRename maps a published course_id to the fixture course whose
	// expected figures it must carry.
	CourseRename map[string]string `json:"course_rename"`
	// Log is a substring the stderr log must contain.
	Log string `json:"log"`
	// Staged: the run fails after it made its own staging prefix (a
	// failure while staging), which it may leave behind for gc as any
	// failed attempt does; the rest of the warehouse must be unchanged.
	Staged bool `json:"staged"`
	// Kept is a job id whose staging prefix existed before the run and
	// must be byte-identical after it.
	Kept string `json:"kept"`
	// Absent are workspace paths the run must not create.
	Absent []string `json:"absent"`
	// Engines are the engines the case runs on; none means DuckDB alone.
	// A case naming spark also runs on Spark (TestHostileInputSpark),
	// which must give the same outcome and the same failed checks, with
	// the same figures, as DuckDB.
	Engines []string `json:"engines"`
	// Backends: a case naming s3 also runs with its inputs and warehouse
	// on the test S3 server (TestHostileInputS3), after its setup has
	// broken the local copy, which is then uploaded. ErrorS3 is the error
	// line there when S3 words it differently (a missing prefix is not a
	// missing directory).
	Backends []string `json:"backends"`
	ErrorS3  string   `json:"error_s3"`
	// ErrorSpark is the error line on the Spark engine when Spark's own
	// words stand where the job's are on DuckDB (a check Spark makes
	// itself); the outcome must still be the same.
	ErrorSpark string `json:"error_spark"`
	// LogSpark is a substring the Spark run's stderr log must contain, in
	// place of Log (a step only the Spark engine reports).
	LogSpark string `json:"log_spark"`
	// ExitSpark, set, is the Spark engine's exit where an engine's own
	// limit makes it differ (a compression codec one engine cannot read):
	// error_spark is then its error line when not 0, published its dates
	// when 0, and the two engines' outcomes are not compared.
	ExitSpark *int `json:"exit_spark"`
}

// s3Ops are the setup ops a case on S3 may use: they change input files,
// which are then uploaded; a symlink, a directory or a setup publish has no
// S3 form.
var s3Ops = []string{"copy", "truncate", "patch", "sql", "text", "rename", "copytree"}

// setupOp breaks the workspace before the run. Paths are relative to the
// workspace copy of the fixture.
type setupOp struct {
	Op string `json:"op"` // copy, truncate, patch, sql, text, mkdir, publish, run, copytree, rename, symlink, split
	// copy: From (in the case directory) to Path. truncate: keep Keep
	// bytes of Path (negative: drop that many from the end). patch: write
	// Bytes at Offset (negative: from the end). sql: write the Parquet
	// file Path from Query over the pristine file at From (view src; From
	// defaults to Path). text: write Content repeated Repeat times (at
	// least once). publish: run a publish with Args appended to the base;
	// it must exit Exit. run: run the command Args (placeholders
	// expanded); it must exit Exit. copytree: copy the workspace tree From to Path.
	// rename: move Path to To (in the workspace). symlink: make Path a
	// symlink to To (placeholders expanded). split: replace the pristine
	// file Path by Repeat files of its rows (stem-0000.parquet, ...), each
	// row in one of them.
	Path    string   `json:"path"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	Keep    int64    `json:"keep"`
	Offset  int64    `json:"offset"`
	Bytes   string   `json:"bytes"`
	Query   string   `json:"query"`
	Content string   `json:"content"`
	Repeat  int      `json:"repeat"`
	Args    []string `json:"args"`
	Exit    int      `json:"exit"`
}

func readHostileCase(t *testing.T, dir string) hostileCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c hostileCase
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s/case.json: %v", dir, err)
	}
	switch {
	case strings.TrimSpace(c.Why) == "":
		t.Fatalf("%s/case.json: no why: every case documents its decision", dir)
	case c.Exit == 0 && len(c.Published) == 0:
		t.Fatalf("%s/case.json: an accepted case must name the dates it publishes", dir)
	case c.Exit != 0 && c.Error == "":
		t.Fatalf("%s/case.json: a refused case must give its error line", dir)
	case (c.Exit == 3) != (len(c.GateChecks) > 0):
		t.Fatalf("%s/case.json: gate_checks go with exit 3 and only with it", dir)
	case len(c.Command) > 0 && len(c.Args) > 0:
		t.Fatalf("%s/case.json: command replaces the base publish; args have nothing to append to", dir)
	case len(c.Command) > 0 && (c.Exit == 0 || c.Exit == 3):
		t.Fatalf("%s/case.json: a command case is a refusal; publishing and gating are the base publish's", dir)
	case c.Staged && (c.Exit == 0 || c.Exit == 3):
		t.Fatalf("%s/case.json: staged is for a failure while staging; a publish or a rejection keeps its staging anyway", dir)
	case len(c.Engines) > 0 && !slices.Contains(c.Engines, "duckdb"):
		t.Fatalf("%s/case.json: engines %v leave out duckdb, the engine every case runs on", dir, c.Engines)
	}
	for _, e := range c.Engines {
		if e != "duckdb" && e != "spark" {
			t.Fatalf("%s/case.json: unknown engine %q", dir, e)
		}
	}
	for _, b := range c.Backends {
		if b != "s3" {
			t.Fatalf("%s/case.json: unknown backend %q (local is always run; s3 adds the S3 run)", dir, b)
		}
	}
	if c.ErrorS3 != "" && !slices.Contains(c.Backends, "s3") {
		t.Fatalf("%s/case.json: error_s3 without the s3 backend", dir)
	}
	if c.ErrorSpark != "" && !slices.Contains(c.Engines, "spark") {
		t.Fatalf("%s/case.json: error_spark without the spark engine", dir)
	}
	if x := c.ExitSpark; x != nil {
		switch {
		case !slices.Contains(c.Engines, "spark"):
			t.Fatalf("%s/case.json: exit_spark without the spark engine", dir)
		case *x == c.Exit:
			t.Fatalf("%s/case.json: exit_spark equals exit: leave it out", dir)
		case *x == 3 || c.Exit == 3:
			t.Fatalf("%s/case.json: exit_spark is for an engine's limit, not a gate verdict", dir)
		case *x != 0 && c.ErrorSpark == "", *x == 0 && len(c.Published) == 0:
			t.Fatalf("%s/case.json: exit_spark needs error_spark (a refusal) or published (0)", dir)
		}
	}
	if slices.Contains(c.Backends, "s3") {
		for _, op := range c.Setup {
			if !slices.Contains(s3Ops, op.Op) {
				t.Fatalf("%s/case.json: setup op %q has no S3 form (allowed: %v)", dir, op.Op, s3Ops)
			}
		}
	}
	return c
}

var repeatPlaceholder = regexp.MustCompile(`\{repeat:(.):([0-9]+)\}`)

// expand fills the placeholders of s for workspace w and case directory dir.
func (w *biWS) expand(s, dir string) string {
	s = repeatPlaceholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := repeatPlaceholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		return strings.Repeat(sub[1], n)
	})
	return strings.NewReplacer("{dir}", w.root(), "{raw}", w.raw, "{lessons}", w.lessons,
		"{enrollments}", w.enrollments, "{warehouse}", w.warehouse, "{conf}", w.conf, "{case}", dir, "{src}", w.src).Replace(s)
}

func (w *biWS) expandAll(args []string, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = w.expand(a, dir)
	}
	return out
}

// apply runs one setup step.
func (w *biWS) apply(op setupOp, dir string) {
	w.t.Helper()
	p := filepath.Join(w.dir, filepath.FromSlash(op.Path))
	switch op.Op {
	case "copy":
		b, err := os.ReadFile(filepath.Join(dir, op.From))
		if err != nil {
			w.t.Fatal(err)
		}
		biWriteFile(w.t, p, b)
	case "truncate":
		b := w.read(p)
		keep := op.Keep
		if keep < 0 {
			keep += int64(len(b))
		}
		if keep < 0 || keep >= int64(len(b)) {
			w.t.Fatalf("truncate %s to %d of %d bytes", op.Path, keep, len(b))
		}
		biWriteFile(w.t, p, b[:keep])
	case "patch":
		b := w.read(p)
		off := op.Offset
		if off < 0 {
			off += int64(len(b))
		}
		if off < 0 || off+int64(len(op.Bytes)) > int64(len(b)) {
			w.t.Fatalf("patch %s at %d: out of range", op.Path, op.Offset)
		}
		copy(b[off:], op.Bytes)
		biWriteFile(w.t, p, b)
	case "sql":
		from := op.From
		if from == "" {
			from = op.Path
		}
		w.rewriteParquet(op.Path, from, w.expand(op.Query, dir))
	case "split":
		w.splitParquet(op.Path, op.Repeat)
	case "copytree":
		if err := os.CopyFS(p, os.DirFS(filepath.Join(w.dir, filepath.FromSlash(op.From)))); err != nil {
			w.t.Fatal(err)
		}
	case "rename":
		if err := os.Rename(p, filepath.Join(w.dir, filepath.FromSlash(op.To))); err != nil {
			w.t.Fatal(err)
		}
	case "symlink":
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.Symlink(w.expand(op.To, dir), p); err != nil {
			w.t.Fatal(err)
		}
	case "text":
		biWriteFile(w.t, p, []byte(strings.Repeat(w.expand(op.Content, dir), max(op.Repeat, 1))))
	case "mkdir":
		if err := os.MkdirAll(p, 0o755); err != nil {
			w.t.Fatal(err)
		}
	case "publish":
		args := w.publishArgs(biBadJob, biGoodDates, w.expandAll(op.Args, dir)...)
		if r := biRun(w.t, args...); r.code != op.Exit {
			w.t.Fatalf("setup publish %v: exit %d, want %d\n%s", op.Args, r.code, op.Exit, r.stderr)
		}
	case "run":
		if r := biRun(w.t, w.expandAll(op.Args, dir)...); r.code != op.Exit {
			w.t.Fatalf("setup run %v: exit %d, want %d\n%s", op.Args, r.code, op.Exit, r.stderr)
		}
	default:
		w.t.Fatalf("unknown setup op %q", op.Op)
	}
}

func (w *biWS) read(p string) []byte {
	w.t.Helper()
	if strings.HasPrefix(p, "s3://") {
		b := w.get(p)
		if b == nil {
			w.t.Fatalf("%s does not exist", p)
		}
		return b
	}
	b, err := os.ReadFile(p)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// globMatch reports whether line matches pattern, where '*' matches any run
// of characters and everything else matches itself.
func globMatch(pattern, line string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == line
	}
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	line = line[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(line, p)
		if i < 0 {
			return false
		}
		line = line[i+len(p):]
	}
	return strings.HasSuffix(line, parts[len(parts)-1])
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, line string
		want          bool
	}{
		{"a", "a", true}, {"a", "ab", false}, {"a*", "ab", true}, {"*b", "ab", true},
		{"a*c*e", "abcde", true}, {"a*c*e", "abcd", false}, {"a*a", "a", false}, {"*", "", true},
	} {
		if got := globMatch(tc.pattern, tc.line); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.line, got)
		}
	}
}

// lastFlag is the value of the last --name in args.
func lastFlag(args []string, name string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--"+name {
			v = args[i+1]
		}
	}
	return v
}

// hostileCaseDirs lists the corpus's case directories, absolute.
func hostileCaseDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(hostileDir)
	if err != nil {
		t.Fatalf("hostile corpus: %v", err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir, err := filepath.Abs(filepath.Join(hostileDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	if len(dirs) < 40 {
		t.Fatalf("hostile corpus has %d cases; the corpus went missing", len(dirs))
	}
	return dirs
}

func TestHostileInput(t *testing.T) {
	for _, dir := range hostileCaseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			runHostileCase(t, dir, readHostileCase(t, dir))
		})
	}
}

// TestHostileInputSpark runs the cases that name spark on the Spark engine
// too, on S3 when the case names s3. Each runs on DuckDB beside it, so the two rejection records can be
// compared whole: a figure Spark failed to compute (a zero where DuckDB
// counts) shows as a different detail or figure, or as a missing check. The
// setup (the good publish before the case) runs on DuckDB: the warehouse it
// leaves is the same for both engines, and the case's own publish is what is
// under test.
func TestHostileInputSpark(t *testing.T) {
	remote := sparktest.Remote(t)
	var n int
	for _, dir := range hostileCaseDirs(t) {
		tc := readHostileCase(t, dir)
		if !slices.Contains(tc.Engines, "spark") {
			continue
		}
		n++
		// A case with an S3 form runs there, the cluster reading the
		// bucket as s3a://; the others (symlinks, directories) on disk.
		onS3 := slices.Contains(tc.Backends, "s3")
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			sp := tc
			if tc.LogSpark != "" {
				sp.Log = tc.LogSpark
			}
			if tc.ExitSpark != nil {
				// An engine's limit: each engine against its own outcome.
				runHostileCaseOn(t, dir, tc, onS3)
				sp.Exit, sp.Error = *tc.ExitSpark, tc.ErrorSpark
				runHostileCaseOn(t, dir, sp, onS3, "--engine", "spark", "--spark-remote", remote)
				return
			}
			want := runHostileCaseOn(t, dir, tc, onS3)
			got := runHostileCaseOn(t, dir, sp, onS3, "--engine", "spark", "--spark-remote", remote)
			if !bytes.Equal(got, want) {
				t.Errorf("failed checks on Spark\n%s\non DuckDB\n%s", got, want)
			}
		})
	}
	// The event identity, title length and magic cases at least.
	if n < 4 {
		t.Fatalf("%d hostile cases name spark in their engines; the Spark subset went missing", n)
	}
}

// TestHostileInputS3 runs the cases that name s3 with their inputs and
// warehouse on the test S3 server: the same exit, the same error line (or
// the case's error_s3), nothing published and nothing changed.
func TestHostileInputS3(t *testing.T) {
	var n int
	for _, dir := range hostileCaseDirs(t) {
		tc := readHostileCase(t, dir)
		if !slices.Contains(tc.Backends, "s3") {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			runHostileCaseOn(t, dir, tc, true)
		})
	}
	if n < 15 {
		t.Fatalf("%d hostile cases name s3 in their backends; the S3 subset went missing", n)
	}
}

// runHostileCase runs one case in a fresh workspace, the case's publish
// with engineArgs appended, and returns the failed checks of its rejection
// record as written (nil unless the case expects exit 3).
func runHostileCase(t *testing.T, dir string, tc hostileCase, engineArgs ...string) json.RawMessage {
	t.Helper()
	return runHostileCaseOn(t, dir, tc, false, engineArgs...)
}

// runHostileCaseOn is runHostileCase, with the inputs and the warehouse on
// the test S3 server when onS3.
func runHostileCaseOn(t *testing.T, dir string, tc hostileCase, onS3 bool, engineArgs ...string) json.RawMessage {
	t.Helper()
	w := biNewWS(t)
	if onS3 {
		w.toS3(publishtest.S3.Root(t))
	}
	w.goodPublish()
	for _, op := range tc.Setup {
		w.apply(op, dir)
	}
	w.upload()
	args := w.publishArgs(biBadJob, biGoodDates, w.expandAll(tc.Args, dir)...)
	args = append(args, engineArgs...)
	if len(tc.Command) > 0 {
		args = w.expandAll(tc.Command, dir)
	}
	jobID := lastFlag(args, "job-id")

	pointerBefore := w.pointerBytes()
	inputsBefore := w.inputHashes()
	whBefore := w.hashTree(w.warehouse)
	stagingRoot := w.join(w.warehouse, "staging")
	var keptBefore map[string]string
	if tc.Kept != "" {
		keptBefore = w.hashTree(w.join(stagingRoot, "job_id="+tc.Kept))
	}
	// A setup gc may have deleted the good job's staging (its generation
	// expired); then it must stay gone.
	goodDir := w.join(stagingRoot, "job_id="+biGoodJob)
	var goodStaging map[string]string
	if w.exists(goodDir) {
		goodStaging = w.hashTree(goodDir)
	}

	r := biRun(t, args...)

	var failed json.RawMessage
	if r.code != tc.Exit {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.Exit, r.stdout, r.stderr)
	}
	if tc.Exit != 0 {
		line := r.errLine(t)
		pattern := tc.Error
		if onS3 && tc.ErrorS3 != "" {
			pattern = tc.ErrorS3
		}
		if slices.Contains(engineArgs, "spark") && tc.ErrorSpark != "" {
			pattern = tc.ErrorSpark
		}
		if want := w.expand(pattern, dir); !globMatch(want, line) {
			t.Errorf("error line\n got %q\nwant %q", line, want)
		}
		if strings.Contains(r.stdout, "published") {
			t.Errorf("stdout of a refused publish says published: %q", r.stdout)
		}
		if after := w.pointerBytes(); !bytes.Equal(after, pointerBefore) {
			t.Errorf("pointer.json changed:\nbefore %s\nafter  %s", pointerBefore, after)
		}
		whAfter := w.hashTree(w.warehouse)
		if tc.Exit == 3 {
			failed = checkRejection(t, w, jobID, tc.GateChecks, whAfter)
			// The workspace's paths as placeholders: a detail naming a
			// file (prohibited_columns' first_in) is compared across runs.
			failed = json.RawMessage(strings.ReplaceAll(string(failed), w.raw, "{raw}"))
		}
		if tc.Staged {
			staging := w.join(stagingRoot, "job_id="+jobID)
			for p := range whAfter {
				if p == staging+"/" || strings.HasPrefix(p, staging+"/") {
					delete(whAfter, p)
				}
			}
		}
		biDiffTrees(t, "warehouse", whBefore, whAfter)
	} else {
		checkPublished(t, w, tc, jobID, pointerBefore)
	}
	if tc.Log != "" && !strings.Contains(r.stderr, tc.Log) {
		t.Errorf("stderr does not log %q:\n%s", tc.Log, r.stderr)
	}
	biDiffTrees(t, "inputs", inputsBefore, w.inputHashes())
	if goodStaging != nil {
		biDiffTrees(t, "staging/job_id="+biGoodJob, goodStaging, w.hashTree(goodDir))
	} else if w.exists(goodDir) {
		t.Errorf("%s was created", goodDir)
	}
	if tc.Kept != "" {
		biDiffTrees(t, "staging/job_id="+tc.Kept, keptBefore, w.hashTree(w.join(stagingRoot, "job_id="+tc.Kept)))
	}
	for _, a := range tc.Absent {
		if p := w.expand(a, dir); w.exists(p) {
			t.Errorf("%s was created", p)
		}
	}
	return failed
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// checkRejection asserts a gate rejection left exactly its records: the
// rejection file naming the failed checks and the job's own staging prefix,
// which it then removes from after so the rest of the warehouse can be
// compared byte for byte. It returns the record's failed checks as written.
func checkRejection(t *testing.T, w *biWS, jobID string, want []string, after map[string]string) json.RawMessage {
	t.Helper()
	rel := w.join(w.warehouse, "rejections", "job_id="+jobID+".json")
	var rej struct {
		Failed json.RawMessage `json:"failed_checks"`
	}
	if err := json.Unmarshal(w.read(rel), &rej); err != nil {
		t.Fatalf("rejection record: %v", err)
	}
	var failed []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(rej.Failed, &failed); err != nil {
		t.Fatalf("rejection record failed_checks: %v", err)
	}
	var got []string
	for _, c := range failed {
		if !slices.Contains(got, c.Name) {
			got = append(got, c.Name)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("rejection record lists failed checks %v, want %v", got, want)
	}
	if !w.exists(w.join(w.warehouse, "staging", "job_id="+jobID, "_gate.json")) {
		t.Errorf("no _gate.json in the rejected job's staging prefix")
	}
	staging := w.join(w.warehouse, "staging", "job_id="+jobID)
	for p := range after {
		if p == rel || p == w.join(w.warehouse, "rejections")+"/" || p == staging+"/" || strings.HasPrefix(p, staging+"/") {
			delete(after, p)
		}
	}
	return rej.Failed
}

// checkPublished asserts an accepted case moved the pointer by one
// generation, for exactly its dates, with the fixture's ground truth.
func checkPublished(t *testing.T, w *biWS, tc hostileCase, jobID string, before []byte) {
	t.Helper()
	old, err := pointer.Decode(before)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := pointer.Decode(w.pointerBytes())
	if err != nil {
		t.Fatal(err)
	}
	if cur.Generation != old.Generation+1 {
		t.Errorf("generation %d after %d", cur.Generation, old.Generation)
	}
	exp := biReadExpected(t, w.src)
	published := map[dates.Date]bool{}
	for _, ds := range tc.Published {
		d := dates.MustParse(ds)
		published[d] = true
		e, ok := cur.Dates[d]
		if !ok || e.JobID != jobID {
			t.Fatalf("pointer entry for %s = %+v, want job %s", d, e, jobID)
		}
		want := exp.ByDate[d]
		if want.Events == 0 {
			t.Fatalf("expected.json has no events for %s", d)
		}
		if e.EventCount != want.Events || e.UnknownLessonCount != want.Unknown {
			t.Errorf("%s: pointer says %d events, %d unknown; expected.json %d, %d", d, e.EventCount, e.UnknownLessonCount, want.Events, want.Unknown)
		}
		checkCourseDay(t, w.warehouse, d, e, exp.ByDateCourse[d], tc.CourseRename)
		checkTitles(t, w.warehouse, jobID, d, e)
	}
	for d, e := range old.Dates {
		if !published[d] && !equalEntries(e, cur.Dates[d]) {
			t.Errorf("publishing %v changed the entry of %s", tc.Published, d)
		}
	}
}

// checkTitles compares each fact row's lesson_title for d with its pin
// row's in the manifest files the attempt read, loaded whole into a table
// first (a scan without a filter reads every row group, whatever a footer
// says): a matched row carries its lesson's title, an unknown one none.
// The counts alone miss a title lost to a join (published NULL, exit 0).
func checkTitles(t *testing.T, warehouse, jobID string, d dates.Date, e pointer.DateEntry) {
	t.Helper()
	var att job.Attempt
	if err := json.Unmarshal(publishtest.Get(t, warehouse, wh.AttemptPath(jobID)), &att); err != nil {
		t.Fatal(err)
	}
	var lessons, facts []string
	for _, p := range att.Inputs.LessonPaths() {
		lessons = append(lessons, biSQLQuote(p))
	}
	for _, f := range e.FactFiles {
		facts = append(facts, biSQLQuote(publishtest.Join(t, warehouse, f.Path)))
	}
	if len(facts) == 0 || len(lessons) == 0 {
		t.Fatalf("%s: %d fact files, %d manifest files", d, len(facts), len(lessons))
	}
	db := publishtest.DBFor(t, warehouse)
	if _, err := db.Exec(`CREATE OR REPLACE TEMP TABLE pin AS SELECT lesson_id, lesson_title, manifest_id FROM read_parquet([` +
		strings.Join(lessons, ", ") + `], union_by_name=true, hive_partitioning=false)`); err != nil {
		t.Fatal(err)
	}
	var matched, wrong, unknownTitled int64
	err := db.QueryRow(`SELECT count(*) FILTER (WHERE f.manifest_id IS NOT NULL),
		count(*) FILTER (WHERE f.manifest_id IS NOT NULL AND f.lesson_title IS DISTINCT FROM p.lesson_title),
		count(*) FILTER (WHERE f.manifest_id IS NULL AND f.lesson_title IS NOT NULL)
		FROM read_parquet([`+strings.Join(facts, ", ")+`]) f
		LEFT JOIN (SELECT * FROM pin WHERE manifest_id = ?) p ON f.lesson_id = p.lesson_id`, e.ManifestID).Scan(&matched, &wrong, &unknownTitled)
	if err != nil {
		t.Fatal(err)
	}
	if matched == 0 || wrong != 0 || unknownTitled != 0 {
		t.Errorf("%s: %d matched fact rows, %d of them without their pin row's title, %d unknown rows with a title", d, matched, wrong, unknownTitled)
	}
}

func equalEntries(a, b pointer.DateEntry) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// checkCourseDay compares the course_day rows the pointer names for d with
// the generator's per-course figures.
func checkCourseDay(t *testing.T, warehouse string, d dates.Date, e pointer.DateEntry, want map[string]gen.CourseFigures, rename map[string]string) {
	t.Helper()
	var files []string
	for _, f := range e.CourseDayFiles {
		files = append(files, biSQLQuote(publishtest.Join(t, warehouse, f.Path)))
	}
	if len(files) == 0 {
		t.Fatalf("%s: no course_day files", d)
	}
	db := publishtest.DBFor(t, warehouse)
	rows, err := db.Query(`SELECT course_id, event_count, unknown_lesson_count, matched_lesson_count, enrolled_event_count, learner_count
		FROM read_parquet([` + strings.Join(files, ", ") + `])`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]gen.CourseFigures{}
	for rows.Next() {
		var c string
		var f gen.CourseFigures
		if err := rows.Scan(&c, &f.Events, &f.Unknown, &f.Matched, &f.Enrolled, &f.Learners); err != nil {
			t.Fatal(err)
		}
		if orig, ok := rename[c]; ok {
			c = orig
		} else if len(rename) > 0 && slices.Contains(mapValues(rename), c) {
			t.Errorf("%s: course_day still has the renamed course %q", d, c)
		}
		got[c] = f
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: course_day\n got %v\nwant %v (expected.json)", d, got, want)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
