package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// runEnv runs args with the environment lookup given (nil: none at all).
func runEnv(t *testing.T, vars map[string]string, args ...string) biResult {
	t.Helper()
	var out, errb bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	code := cli.MainEnv(context.Background(), cli.Env{Stdout: &out, Stderr: &errb, Lookup: lookup}, args)
	return biResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// Every command's help: on stdout, exit 0, a synopsis, its flags by their
// -- names, and two examples; by --help, -h and help CMD alike.
func TestHelpEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		flags []string // flags the help must list, with defaults where they have one
	}{
		{"publish", []string{"--job-id string", "--dates string", "--config string", "--warehouse string", "--allow-outside-horizon"}},
		{"explain", []string{"--dates string", "--engine string"}},
		{"status", []string{"--warehouse string", "--date string", `--format string          table or json (default "table")`}},
		{"read", []string{"--warehouse string", "--date string", `(default "table")`}},
		{"gen", []string{"--out string", "--seed uint", "(default 7)"}},
		{"gc", []string{"--dry-run", "--min-age duration", "(default 24h0m0s)", "--lock-timeout duration", "(default 5m0s)"}},
		{"version", []string{`--format string   text or json (default "text")`}},
		{"completion", nil},
		{"help", nil},
	} {
		// --help before the command too: it printed the root's help.
		for _, args := range [][]string{{tc.cmd, "--help"}, {tc.cmd, "-h"}, {"help", tc.cmd}, {"--help", tc.cmd}, {"-h", tc.cmd}, {"-h", tc.cmd, "-h"}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				r := runEnv(t, nil, args...)
				if r.code != 0 || r.stderr != "" {
					t.Fatalf("exit %d, stderr %q, want 0 and nothing", r.code, r.stderr)
				}
				if !strings.Contains(r.stdout, "Usage:\n  engagement "+tc.cmd) {
					t.Errorf("no synopsis of %s:\n%s", tc.cmd, r.stdout)
				}
				_, ex, ok := strings.Cut(r.stdout, "Examples:\n")
				if !ok {
					t.Fatalf("no Examples section:\n%s", r.stdout)
				}
				ex, _, _ = strings.Cut(ex, "\n\n")
				if n := len(regexp.MustCompile(`(?m)^  (engagement|source) `).FindAllString(ex, -1)); n != 2 {
					t.Errorf("%d examples, want 2:\n%s", n, ex)
				}
				for _, f := range tc.flags {
					if !strings.Contains(r.stdout, f) {
						t.Errorf("help lacks %q:\n%s", f, r.stdout)
					}
				}
			})
		}
	}
}

// goModVersion is the version go.mod requires of module path.
func goModVersion(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(publishtest.Root(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(path) + `\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.mod does not require %s", path)
	}
	return string(m[1])
}

// The real binary (a test binary carries no module list) names its module,
// revision, DuckDB library and binding, and Spark Connect client, by
// `version`, `--version` and in every _attempt.json; the binding and client
// versions are the ones go.mod requires.
func TestVersion(t *testing.T) {
	spark := goModVersion(t, "github.com/apache/spark-connect-go")
	duckGo := goModVersion(t, "github.com/duckdb/duckdb-go/v2")
	h := publishtest.Harness{}
	code, text, stderr := h.Run(t, nil, "version")
	if code != 0 {
		t.Fatalf("version: exit %d\n%s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^engagement \S`),
		regexp.MustCompile(`(?m)^  module: +\S`),
		regexp.MustCompile(`(?m)^  revision: +\S`),
		regexp.MustCompile(`(?m)^  go: +go1\.`),
		regexp.MustCompile(`(?m)^  duckdb: +v1\.\d+\.\d+ \(duckdb-go ` + regexp.QuoteMeta(duckGo) + `\)$`),
		regexp.MustCompile(`(?m)^  spark-connect-go: +` + regexp.QuoteMeta(spark) + `$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("version output lacks %s:\n%s", want, text)
		}
	}
	if code, flag, _ := h.Run(t, nil, "--version"); code != 0 || flag != text {
		t.Errorf("--version: exit %d\n%s\nwant the text of version:\n%s", code, flag, text)
	}
	code, js, _ := h.Run(t, nil, "version", "--format", "json")
	var bin map[string]any
	if err := json.Unmarshal([]byte(js), &bin); err != nil || code != 0 {
		t.Fatalf("version --format json: exit %d, %v\n%s", code, err, js)
	}
	for k, want := range map[string]string{"spark_connect_go": spark, "duckdb_go": duckGo} {
		if bin[k] != want {
			t.Errorf("json %s = %v, want %s (go.mod)", k, bin[k], want)
		}
	}
	for _, k := range []string{"version", "module", "go", "duckdb"} {
		if s, _ := bin[k].(string); s == "" {
			t.Errorf("json %s is empty: %s", k, js)
		}
	}
	// Present whatever the build recorded, as the text form shows them.
	if _, ok := bin["revision"].(string); !ok {
		t.Errorf("json has no revision string: %s", js)
	}
	if _, ok := bin["modified"].(bool); !ok {
		t.Errorf("json has no modified boolean: %s", js)
	}

	// The attempt record carries the same build.
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	if code, _, stderr := h.Run(t, nil, fx.Args(wh, "build-1", "2026-03-02")...); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, stderr)
	}
	var att struct {
		Build      map[string]any `json:"build"`
		Lateness   int            `json:"lateness_days"`
		Horizon    int            `json:"restatement_horizon_days"`
		Freshness  int            `json:"freshness_max_days"`
		Prohibited []string       `json:"prohibited_columns"`
		AsOf       string         `json:"as_of_date"`
		WorkingDir string         `json:"working_directory"`
	}
	if err := json.Unmarshal(publishtest.Get(t, wh, warehouse.AttemptPath("build-1")), &att); err != nil {
		t.Fatal(err)
	}
	// And the settings that decided which events counted (config/fixture.conf).
	if att.Lateness != 1 || att.Horizon != 2 || att.Freshness != 2 || att.AsOf != "2026-03-04" || att.WorkingDir == "" ||
		strings.Join(att.Prohibited, ",") != "email,payment_token,card_number,raw_ip" {
		t.Errorf("_attempt.json settings %+v, want fixture.conf's", att)
	}
	for k, v := range bin {
		if att.Build[k] != v {
			t.Errorf("_attempt.json build.%s = %v, want %v (engagement version)", k, att.Build[k], v)
		}
	}
}

// A misspelt command or flag: exit 2 and one line naming the nearest.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"pubish", "--job-id", "x"}, `engagement: unknown command "pubish"; did you mean "publish"?`},
		{[]string{"stats", "--warehouse", "w"}, `engagement: unknown command "stats"; did you mean "status"?`},
		{[]string{"frobnicate"}, `engagement: unknown command "frobnicate" (want one of publish, explain, status, read, views, history, rollback, report, gen, gc, version, completion)`},
		{[]string{"help", "raed"}, `engagement: unknown command "raed"; did you mean "read"?`},
		{[]string{"publish", "--job-idd", "x"}, `engagement: publish: unknown flag --job-idd; did you mean --job-id?`},
		{[]string{"status", "--warehous", "w"}, `engagement: status: unknown flag --warehous; did you mean --warehouse?`},
		{[]string{"gc", "--dryrun"}, `engagement: gc: unknown flag --dryrun; did you mean --dry-run?`},
		{[]string{"gc", "-warehouse", "w"}, `engagement: gc: unknown flag -warehouse; did you mean --warehouse?`},
		{[]string{"publish", "--manifest", "m"}, `engagement: publish: unknown flag --manifest; did you mean --manifest-id?`},
		{[]string{"gen", "--zzzzzz"}, `engagement: gen: unknown flag --zzzzzz`},
		{[]string{"gc", "--min-age", "soon"}, `engagement: gc: --min-age "soon": time: invalid duration "soon"`},
		// The root's own flag before the command changes neither answer.
		{[]string{"--log-format", "text", "pubish"}, `engagement: unknown command "pubish"; did you mean "publish"?`},
		{[]string{"--log-format=json", "pubish"}, `engagement: unknown command "pubish"; did you mean "publish"?`},
		{[]string{}, `engagement: no command given (engagement --help lists them)`},
		{[]string{"--log-format", "json"}, `engagement: no command given (engagement --help lists them)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runEnv(t, nil, tc.args...)
			if r.code != exitcode.Usage {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			if line := r.errLine(t); line != tc.line {
				t.Errorf("error line\n got %q\nwant %q", line, tc.line)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			// In json mode (stderr is no terminal here) every line is a
			// record: no usage text around it.
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if !json.Valid([]byte(l)) && !slices.Contains(tc.args, "text") {
					t.Errorf("stderr line %q is not a JSON record", l)
				}
			}
		})
	}
}

// TestGenOutIsAFile: a file where gen's directory goes, or above it, is
// the command's mistake (exit 2), as for every other command; it was 1.
func TestGenOutIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{f, filepath.Join(f, "sub")} {
		if r := runEnv(t, nil, "gen", "--out", out, "--events", "200"); r.code != exitcode.Usage {
			t.Errorf("gen --out %s: exit %d, want 2\n%s", out, r.code, r.stderr)
		}
	}
}

// TestGenZeroRefused: 0 is gen's own "default"; given on the command line
// it is a mistake (--shape design --events 0 made the 60M-event day), so it
// is refused before anything is written.
func TestGenZeroRefused(t *testing.T) {
	for _, flags := range [][]string{{"--events", "0"}, {"--seed", "0"}, {"--shape", "design", "--dates", "0"}, {"--shape", "design", "--events", "0"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "g")
			r := runEnv(t, nil, append([]string{"gen", "--out", out}, flags...)...)
			if r.code != exitcode.Usage {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			name := flags[len(flags)-2]
			if want := "engagement: gen: " + name + " 0: give a positive number, or leave the flag out for its default"; r.errLine(t) != want {
				t.Errorf("error line %q, want %q", r.errLine(t), want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists after a refused gen (%v)", out, err)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	bash := runEnv(t, nil, "completion", "bash")
	if bash.code != 0 || !strings.Contains(bash.stdout, "__start_engagement") {
		t.Fatalf("completion bash: exit %d\n%.300s\n%s", bash.code, bash.stdout, bash.stderr)
	}
	script := filepath.Join(t.TempDir(), "engagement.bash")
	if err := os.WriteFile(script, []byte(bash.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s", err, out)
	}
	zsh := runEnv(t, nil, "completion", "zsh")
	if zsh.code != 0 || !strings.HasPrefix(zsh.stdout, "#compdef engagement") {
		t.Errorf("completion zsh: exit %d\n%.300s\n%s", zsh.code, zsh.stdout, zsh.stderr)
	}
	// What the scripts ask the binary: the table names for read, the
	// commands after engagement.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "read", ""}, []string{"fact_lesson_engagement", "course_day"}},
		{[]string{"__complete", "st"}, []string{"status"}},
		{[]string{"__complete", "gc", "--dr"}, []string{"--dry-run"}},
	} {
		r := runEnv(t, nil, tc.args...)
		for _, w := range tc.want {
			if r.code != 0 || !strings.Contains(r.stdout, w) {
				t.Errorf("%v: exit %d, stdout lacks %q:\n%s", tc.args, r.code, w, r.stdout)
			}
		}
	}
	if r := runEnv(t, nil, "completion", "fish"); r.code != exitcode.Usage || !strings.Contains(r.errLine(t), `"fish": a script is written for bash or zsh only`) {
		t.Errorf("completion fish: exit %d, want 2 saying fish has no script:\n%s", r.code, r.stderr)
	}
	if r := runEnv(t, nil, "completion"); r.code != exitcode.Usage || !strings.Contains(r.errLine(t), "name the shell") {
		t.Errorf("completion: exit %d, want 2 asking for the shell:\n%s", r.code, r.stderr)
	}
}

// status and read of a warehouse with no pointer.json (a path that does
// not exist, an empty directory, a fresh S3 prefix): exit 2 naming it.
func TestReadersRefuseMissingWarehouse(t *testing.T) {
	empty := t.TempDir()
	whs := []string{filepath.Join(t.TempDir(), "no-such-warehouse"), empty, publishtest.S3.Root(t) + "/no-such-warehouse"}
	for _, wh := range whs {
		for _, args := range [][]string{
			{"status", "--warehouse", wh},
			{"status", "--warehouse", wh, "--date", "2026-03-02"},
			{"read", "course_day", "--warehouse", wh},
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				r := biRun(t, args...)
				if r.code != exitcode.Usage {
					t.Fatalf("exit %d, want 2\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
				}
				want := "engagement: " + args[0] + ": no warehouse at " + wh + " (no pointer.json): nothing was published there; check --warehouse"
				if line := r.errLine(t); line != want {
					t.Errorf("error line\n got %q\nwant %q", line, want)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q, want nothing", r.stdout)
				}
			})
		}
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("the readers wrote into the empty directory: %v %v", entries, err)
	}
	if _, err := os.Stat(whs[0]); !os.IsNotExist(err) {
		t.Errorf("the readers created %s: %v", whs[0], err)
	}
}

// status --date prints that date alone (exit 0), or exits 5 when the
// warehouse does not hold it.
func TestStatusDate(t *testing.T) {
	w := biNewWS(t)
	w.goodPublish()
	exp := biReadExpected(t, w.src)
	for _, tc := range []struct {
		date string
		code int
	}{{"2026-03-02", 0}, {"2026-03-03", 0}, {"2026-03-04", exitcode.NotPublished}, {"2026-03-01", exitcode.NotPublished}} {
		t.Run(tc.date, func(t *testing.T) {
			r := biRun(t, "status", "--warehouse", w.warehouse, "--date", tc.date)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.code != 0 {
				want := "engagement: status: " + tc.date + " is not published in " + w.warehouse + " (generation 1)"
				if line := r.errLine(t); line != want {
					t.Errorf("error line\n got %q\nwant %q", line, want)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q, want nothing", r.stdout)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[2], tc.date+" ") {
				t.Fatalf("want a title, a header and the row of %s:\n%s", tc.date, r.stdout)
			}
			js := biRun(t, "status", "--warehouse", w.warehouse, "--date", tc.date, "--format", "json")
			var st struct {
				Dates []struct {
					Date       string `json:"date"`
					EventCount int64  `json:"event_count"`
				} `json:"dates"`
			}
			if err := json.Unmarshal([]byte(js.stdout), &st); err != nil || js.code != 0 {
				t.Fatalf("json: exit %d %v\n%s", js.code, err, js.stdout)
			}
			want := exp.ByDate[dates.MustParse(tc.date)].Events
			if len(st.Dates) != 1 || st.Dates[0].Date != tc.date || st.Dates[0].EventCount != want || want == 0 {
				t.Errorf("json dates = %+v, want one row of %s with %d events (expected.json)", st.Dates, tc.date, want)
			}
		})
	}
	if r := biRun(t, "status", "--warehouse", w.warehouse, "--date", "2026-02-30"); r.code != exitcode.Usage {
		t.Errorf("--date 2026-02-30: exit %d, want 2", r.code)
	}
}
