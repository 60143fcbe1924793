package cli_test

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// TestSecretsNeverWritten publishes to S3 with the test server's
// credentials, then runs every command (and a publish whose credentials the
// server refuses, and one whose DuckDB cannot load httpfs) and looks for the
// secret in every place it could leak: stdout, stderr (the logs and the
// error line), every object the runs left in the warehouse (_attempt.json
// above all), and the repository's golden files.
func TestSecretsNeverWritten(t *testing.T) {
	secret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	h := publishtest.Harness{Backend: publishtest.S3}
	fx := h.LoadFixture(t, "")
	wh := h.NewWarehouse(t)
	if secret == "" || len(secret) < 8 {
		t.Fatalf("AWS_SECRET_ACCESS_KEY %q is not a secret worth looking for", secret)
	}
	wrong := "wrong-" + secret + "-wrong"
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := publishtest.Harness{}.Run(t, env, args...)
		return code, stdout + stderr
	}
	var outputs []string
	for _, c := range []struct {
		env  []string
		args []string
		exit int
	}{
		{nil, fx.Args(wh, "secret-1", "2026-03-02", "2026-03-03"), 0},
		{nil, []string{"status", "--warehouse", wh}, 0},
		{nil, []string{"read", "course_day", "--warehouse", wh}, 0},
		{nil, []string{"gc", "--warehouse", wh, "--dry-run"}, 0},
		{nil, fx.Args(wh, "secret-1", "2026-03-02"), 4},
		{[]string{"AWS_SECRET_ACCESS_KEY=" + wrong}, fx.Args(wh, "secret-3", "2026-03-02"), 2},
		{[]string{"AWS_SECRET_ACCESS_KEY=" + wrong}, []string{"read", "course_day", "--warehouse", wh}, 2},
		{[]string{"ENGAGEMENT_DUCKDB_EXTENSIONS=" + t.TempDir()}, fx.Args(wh, "secret-4", "2026-03-02"), 2},
	} {
		code, out := run(c.env, c.args...)
		if code != c.exit {
			t.Errorf("%v: exit %d, want %d: %s", c.args[:2], code, c.exit, out)
		}
		outputs = append(outputs, out)
	}
	explainArgs := []string{"explain", "--config", filepath.Join(publishtest.Root(), "config", "fixture.conf"),
		"--raw", fx.Input("raw"), "--lessons", fx.Input("lessons"), "--enrollments", fx.Input("enrollments"), "--dates", "2026-03-02"}
	if code, out := run(nil, explainArgs...); code != 0 {
		t.Errorf("explain: exit %d: %s", code, out)
	} else {
		outputs = append(outputs, out)
	}
	for i, out := range outputs {
		for _, s := range []string{secret, wrong} {
			if strings.Contains(out, s) {
				t.Errorf("run %d printed the secret access key:\n%s", i, out)
			}
		}
	}

	b := publishtest.Bucket(t, wh)
	objs, err := b.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var sawAttempt bool
	for _, o := range objs {
		data, _, err := b.Get(context.Background(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		sawAttempt = sawAttempt || o.Key == warehouse.AttemptPath("secret-1")
		if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(wrong)) {
			t.Errorf("%s holds the secret access key", o.Key)
		}
	}
	if !sawAttempt {
		t.Fatalf("no %s among %d objects: the publish wrote nowhere this test looked", warehouse.AttemptPath("secret-1"), len(objs))
	}

	// Golden files: the hostile cases' expected lines, the fixtures, the docs.
	for _, dir := range []string{"testdata", "docs", "config"} {
		root := filepath.Join(publishtest.Root(), dir)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the test server's secret access key", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestURLSecretsNeverWritten: a password or an api_key in the lineage or
// Pushgateway URL and the token of a Spark Connect URL (the README's way to
// authenticate) are masked wherever the run writes: the log, the result
// document (an Airflow XCom) and the lineage events (OpenLineage's
// errorMessage). Each sink here fails, so each URL reaches an error.
func TestURLSecretsNeverWritten(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused", http.StatusInternalServerError)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	const lineagePass, apiKey, pushPass, token = "LINEAGEPASS", "APIKEYVALUE", "PUSHPASS", "SPARKTOKEN"
	w := biNewWS(t)
	lineageFile := filepath.Join(t.TempDir(), "lineage.jsonl")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"sinks", w.publishArgs("url-1", biGoodDates,
			"--lineage-url", "http://etl:"+lineagePass+"@"+host+"/api/v1/lineage?api_key="+apiKey,
			"--pushgateway", "http://etl:"+pushPass+"@"+host+"/", "--lineage-file", lineageFile, "--output", "json")},
		// Nothing answers on port 1: the connect error names the server.
		{"spark", w.publishArgs("url-2", biGoodDates, "--engine", "spark",
			"--spark-remote", "sc://127.0.0.1:1/;token="+token, "--lineage-file", lineageFile, "--output", "json")},
		// A mistyped scheme parses as a scheme and a path, with no user
		// info or query: the refusal printed the secret whole.
		{"mistyped spark", w.publishArgs("url-3", biGoodDates, "--engine", "spark",
			"--spark-remote", "sc:/127.0.0.1:1/;token="+token, "--output", "json")},
		{"mistyped sink", w.publishArgs("url-4", biGoodDates,
			"--pushgateway", "http:/etl:"+pushPass+"@"+host+"/", "--output", "json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := biRun(t, tc.args...)
			if tc.name == "spark" && r.code != exitcode.Error {
				t.Errorf("publish to no Spark server: exit %d, want 1\n%s", r.code, r.stderr)
			}
			if strings.HasPrefix(tc.name, "mistyped") && r.code != exitcode.Usage {
				t.Errorf("a mistyped URL: exit %d, want 2\n%s", r.code, r.stderr)
			}
			lin, _ := os.ReadFile(lineageFile)
			for where, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "lineage file": string(lin)} {
				for _, s := range []string{lineagePass, apiKey, pushPass, token} {
					if strings.Contains(text, s) {
						t.Errorf("%s holds the secret %s:\n%s", where, s, text)
					}
				}
			}
			// The failures were reported, with the URLs masked.
			want := map[string]string{"sinks": "etl:xxxxx@", "spark": "token=xxxxx", "mistyped spark": "token=xxxxx", "mistyped sink": "http:xxxxx@"}[tc.name]
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not name the masked URL (%s):\n%s", want, r.stderr)
			}
		})
	}
}
