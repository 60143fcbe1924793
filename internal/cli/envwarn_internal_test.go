package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStrayEnv: a variable that looks meant for engagement but that it
// does not read is named with what to do; the variables of flags, of the
// failpoints and of the repository's own scripts and tests are not.
func TestStrayEnv(t *testing.T) {
	root := newRoot(&Env{})
	for _, tc := range []struct {
		env, want string
	}{
		{"ENGAGEMENT_WAREHOSE=/tmp/w", "did you mean ENGAGEMENT_WAREHOUSE?"},
		{"ENGAGEMENT_JOBID=j", "did you mean ENGAGEMENT_JOB_ID?"},
		{"ENGAGEMENT_LATENESS_DAYS=0", "engagement.latenessDays has no variable"},
		{"ENGAGEMENT_RESTATEMENT_HORIZON_DAYS=9", "engagement.restatementHorizonDays has no variable"},
		// A key whose flag has another name: its variable is the flag's.
		{"ENGAGEMENT_AS_OF_DATE=2026-03-04", "engagement.asOfDate is set by --as-of: did you mean ENGAGEMENT_AS_OF?"},
		// Short names far from any flag's in proportion.
		{"ENGAGEMENT_TAG=x", ""},
		{"ENGAGEMENT_WAREHOUSE=/tmp/w", ""},
		{"ENGAGEMENT_FAILPOINT_DELAY=x:1s", ""},
		{"WAREHOSE=/tmp/w", ""},
		// A name is case-sensitive: these were ignored in silence.
		{"engagement_warehouse=/tmp/w", "did you mean ENGAGEMENT_WAREHOUSE? (a variable's name is case-sensitive)"},
		{"Engagement_Job_Id=j", "did you mean ENGAGEMENT_JOB_ID?"},
		{"engagement_tag=x", ""},
	} {
		got := strayEnv(root, []string{tc.env})
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: warned %v, want nothing", tc.env, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0][1], tc.want)):
			t.Errorf("%s: warned %v, want one saying %q", tc.env, got, tc.want)
		}
	}

	// Every ENGAGEMENT_ name the repository's scripts, examples and Go
	// code use (the examples of envwarn.go and this file aside) passes
	// without a word.
	name := regexp.MustCompile(`ENGAGEMENT_[A-Z0-9_]*[A-Z0-9]`)
	var environ []string
	for _, dir := range []string{"../../scripts", "../../examples", "../../internal", "../../cmd", "../../bench", "../../.ci"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, "envwarn_internal_test.go") || strings.HasSuffix(p, "envwarn.go") {
				return err
			}
			if ext := filepath.Ext(p); ext != ".go" && ext != ".sh" && ext != ".py" && ext != "" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, n := range name.FindAllString(string(b), -1) {
				environ = append(environ, n+"=1")
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if len(environ) < 50 {
		t.Fatalf("found %d variable names in the repository: the scan went wrong", len(environ))
	}
	if got := strayEnv(root, environ); len(got) > 0 {
		t.Errorf("variables of the repository warned of: %v", got)
	}
}
