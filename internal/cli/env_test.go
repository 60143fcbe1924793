package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// Names tests and scripts already use for something else: no flag may map
// to one of them.
var reservedEnv = []string{"ENGAGEMENT_FAILPOINT", "ENGAGEMENT_S3_BUCKET", "ENGAGEMENT_S3_PORT",
	"ENGAGEMENT_SKIP_SPARK", "ENGAGEMENT_SKIP_S3", "ENGAGEMENT_CRASH_SEED", "ENGAGEMENT_CRASH_KILLS",
	"ENGAGEMENT_SIGNAL_TRIALS", "ENGAGEMENT_RACE_TRIALS", "ENGAGEMENT_SPARK_PORT", "ENGAGEMENT_SPARK_MEMORY",
	"ENGAGEMENT_PUSHGATEWAY_URL", "ENGAGEMENT_PUSHGATEWAY_PORT"}

func TestEnvNames(t *testing.T) {
	env := Env{Stdout: io.Discard, Stderr: io.Discard}.withDefaults()
	seen := map[string]bool{}
	for _, c := range newRoot(&env).Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name := EnvName(f.Name)
			seen[name] = true
			for _, r := range reservedEnv {
				if name == r {
					t.Errorf("%s --%s maps to %s, which means something else", c.Name(), f.Name, r)
				}
			}
		})
	}
	// These two already meant exactly these flags before they were flags'.
	for _, want := range []string{"ENGAGEMENT_SPARK_REMOTE", "ENGAGEMENT_DUCKDB_EXTENSIONS", "ENGAGEMENT_JOB_ID", "ENGAGEMENT_MIN_AGE", "ENGAGEMENT_S3_PATH_STYLE"} {
		if !seen[want] {
			t.Errorf("no flag maps to %s", want)
		}
	}
}

// lookupOf serves vars as the environment.
func lookupOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// A flag beats its variable, which beats the config file, which beats the
// default.
func TestEnvPrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "job.conf")
	if err := os.WriteFile(conf, []byte("engagement.warehouse /file/wh\nengagement.raw /file/raw\nengagement.lessons /file/lessons\n"+
		"engagement.enrollments /file/enr\nengagement.manifestId m-file\nengagement.enrollmentSnapshotId s-file\nengagement.unknownCap 0.03\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", conf, "--job-id", "j-flag", "--dates", "2026-03-02"}
	for _, tc := range []struct {
		name     string
		vars     map[string]string
		args     []string
		manifest string
		cap      float64
		jobID    string
		dates    string
		lock     string
	}{
		{"file", nil, nil, "m-file", 0.03, "j-flag", "2026-03-02", "5m0s"},
		{"env beats file", map[string]string{"ENGAGEMENT_MANIFEST_ID": "m-env", "ENGAGEMENT_UNKNOWN_CAP": "0.04", "ENGAGEMENT_LOCK_TIMEOUT": "7m"}, nil, "m-env", 0.04, "j-flag", "2026-03-02", "7m0s"},
		{"flag beats env", map[string]string{"ENGAGEMENT_MANIFEST_ID": "m-env", "ENGAGEMENT_UNKNOWN_CAP": "0.04"}, []string{"--manifest-id", "m-flag", "--unknown-cap", "0.05"}, "m-flag", 0.05, "j-flag", "2026-03-02", "5m0s"},
		{"empty variable is unset", map[string]string{"ENGAGEMENT_MANIFEST_ID": ""}, nil, "m-file", 0.03, "j-flag", "2026-03-02", "5m0s"},
		{"flag beats env for job id and dates", map[string]string{"ENGAGEMENT_JOB_ID": "j-env", "ENGAGEMENT_DATES": "2026-03-03"}, nil, "m-file", 0.03, "j-flag", "2026-03-02", "5m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Stdout: io.Discard, Stderr: io.Discard, Lookup: lookupOf(tc.vars)}
			j, err := parseJob(env, "publish", append(append([]string{}, base...), tc.args...), config.Job.CheckPublish)
			if err != nil {
				t.Fatal(err)
			}
			if j.ManifestID != tc.manifest || j.UnknownCap != tc.cap || j.JobID != tc.jobID || j.Dates[0].String() != tc.dates || j.LockTimeout.String() != tc.lock {
				t.Errorf("manifest %q cap %v job %q dates %v lock %s, want %q %v %q %s %s",
					j.ManifestID, j.UnknownCap, j.JobID, j.Dates, j.LockTimeout, tc.manifest, tc.cap, tc.jobID, tc.dates, tc.lock)
			}
			if j.Warehouse != "/file/wh" {
				t.Errorf("warehouse %q, want the file's", j.Warehouse)
			}
		})
	}
	// The job id and dates from the environment alone, with the file.
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Lookup: lookupOf(map[string]string{
		"ENGAGEMENT_JOB_ID": "j-env", "ENGAGEMENT_DATES": "2026-03-03,2026-03-02", "ENGAGEMENT_CONFIG": conf})}
	j, err := parseJob(env, "publish", nil, config.Job.CheckPublish)
	if err != nil {
		t.Fatal(err)
	}
	if j.JobID != "j-env" || len(j.Dates) != 2 || j.Dates[0].String() != "2026-03-02" || j.ManifestID != "m-file" {
		t.Errorf("from the environment: %+v", j)
	}
}

// A value from the environment that a flag would refuse is a usage error
// naming the variable, for every kind of flag.
func TestEnvBadValueNamesVariable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{map[string]string{"ENGAGEMENT_UNKNOWN_CAP": "NaN"}, []string{"publish", "--job-id", "j", "--dates", "2026-03-02"}, `engagement: config: engagement.unknownCap (ENGAGEMENT_UNKNOWN_CAP): "NaN": want a fraction between 0 and 1`},
		{map[string]string{"ENGAGEMENT_DATES": "2026-02-30"}, []string{"explain"}, "ENGAGEMENT_DATES: "},
		{map[string]string{"ENGAGEMENT_JOB_ID": "../up"}, []string{"publish", "--dates", "2026-03-02"}, `engagement: ENGAGEMENT_JOB_ID: --job-id "../up": must not contain a path separator or '..'`},
		{map[string]string{"ENGAGEMENT_MIN_AGE": "soon"}, []string{"gc", "--warehouse", dir}, `engagement: ENGAGEMENT_MIN_AGE="soon": `},
		{map[string]string{"ENGAGEMENT_DRY_RUN": "maybe"}, []string{"gc", "--warehouse", dir}, `engagement: ENGAGEMENT_DRY_RUN="maybe": `},
		{map[string]string{"ENGAGEMENT_EVENTS": "many"}, []string{"gen", "--out", filepath.Join(dir, "g")}, `engagement: ENGAGEMENT_EVENTS="many": `},
		{map[string]string{"ENGAGEMENT_FORMAT": "xml"}, []string{"status", "--warehouse", dir}, `engagement: status: ENGAGEMENT_FORMAT "xml": want table or json`},
		{map[string]string{"ENGAGEMENT_S3_PATH_STYLE": "sideways"}, []string{"status", "--warehouse", dir}, `engagement: ENGAGEMENT_S3_PATH_STYLE "sideways": want auto, true or false`},
		{map[string]string{"ENGAGEMENT_WAREHOUSE": filepath.Join(dir, "none")}, []string{"status"}, "engagement: status: no warehouse at " + filepath.Join(dir, "none") + " (no pointer.json): nothing was published there; check ENGAGEMENT_WAREHOUSE"},
		{map[string]string{"ENGAGEMENT_CONFIG": filepath.Join(dir, "none.conf")}, []string{"explain", "--dates", "2026-03-02"}, "engagement: ENGAGEMENT_CONFIG: "},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			vars := maps.Clone(tc.vars)
			vars["ENGAGEMENT_LOG_FORMAT"] = "text" // the error line as a person reads it
			code := MainEnv(context.Background(), Env{Stdout: &out, Stderr: &errb, Lookup: lookupOf(vars),
				Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}, tc.args)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want 2\n%s", code, errb.String())
			}
			line := strings.TrimSuffix(errb.String(), "\n")
			if strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(line, tc.want) && !strings.Contains(line, tc.want) {
				t.Errorf("stderr\n got %q\nwant one line with %q", errb.String(), tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"job-idd", "job-id", 1}, {"dryrun", "dry-run", 1}, {"warehosue", "warehouse", 2}, {"kitten", "sitting", 3}} {
		if got := config.EditDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
