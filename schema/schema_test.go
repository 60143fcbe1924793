package schema_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// compile loads pointer.schema.json with format assertions on (written_at
// must be an RFC 3339 date-time).
func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile("pointer.schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

func validate(s *jsonschema.Schema, b []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestPublishedPointers validates every pointer the tool writes in a real
// sequence (publish, a second publish, a rollback): pointer.json after each
// step and every pointer-history file.
func TestPublishedPointers(t *testing.T) {
	s := compile(t)
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "warehouse")
	run := func(args ...string) {
		t.Helper()
		var out, errb strings.Builder
		if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errb.String())
		}
		b, err := os.ReadFile(filepath.Join(wh, "pointer.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(s, b); err != nil {
			t.Fatalf("pointer.json after %s: %v\n%s", args[0], err, b)
		}
	}
	run(fx.Args(wh, "schema-1", "2026-03-02", "2026-03-03")...)
	run(fx.Args(wh, "schema-2", "2026-03-03")...)
	run("rollback", "--warehouse", wh, "--date", "2026-03-03", "--to-generation", "1", "--job-id", "schema-rb")
	hist, err := filepath.Glob(filepath.Join(wh, "pointer-history", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("pointer-history holds %d files, want 3 (publish, publish, rollback): %v", len(hist), hist)
	}
	sawRollback := false
	for _, h := range hist {
		b, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(s, b); err != nil {
			t.Errorf("%s: %v", h, err)
		}
		sawRollback = sawRollback || bytes.Contains(b, []byte(`"source_generation": 1`))
	}
	if !sawRollback {
		t.Error("no history file is the rollback (source_generation 1)")
	}
}

// TestFuzzSeeds: the decoder's committed valid_ seeds pass the schema, and
// the invalid ones whose fault the schema can state fail it.
func TestFuzzSeeds(t *testing.T) {
	s := compile(t)
	dir := filepath.Join(publishtest.Root(), "internal", "pointer", "testdata", "fuzz", "FuzzDecode")
	names, err := filepath.Glob(filepath.Join(dir, "valid_*"))
	if err != nil || len(names) < 5 {
		t.Fatalf("valid_ seeds: %v, %v", names, err)
	}
	for _, n := range names {
		if err := validate(s, seed(t, n)); err != nil {
			t.Errorf("%s: %v", filepath.Base(n), err)
		}
	}
	for _, n := range []string{"invalid_dotdot", "invalid_format1_with_parent", "invalid_format2_no_parent", "invalid_format_newer", "invalid_truncated"} {
		if err := validate(s, seed(t, filepath.Join(dir, n))); err == nil {
			t.Errorf("%s passes the schema", n)
		}
	}
	// Hand-made faults the schema states and no seed covers.
	for name, doc := range map[string]string{
		"unknown field":      `{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{},"extra":1}`,
		"absolute path":      `{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{"2026-03-02":{"job_id":"j","fact_files":[{"path":"/etc/x","bytes":1,"rows":1}]}}}`,
		"rate above 1":       `{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{"2026-03-02":{"job_id":"j","unknown_lesson_rate":1.5}}}`,
		"rollback no source": `{"format_version":3,"generation":2,"parent":{"generation":1,"sha256":"` + strings.Repeat("ab", 32) + `"},"written_at":"2026-03-04T06:00:00Z","writer_version":"v","operation":"rollback","updated_by_job_id":"j","dates":{}}`,
		"source on publish":  `{"format_version":3,"generation":2,"parent":{"generation":1,"sha256":"` + strings.Repeat("ab", 32) + `"},"written_at":"2026-03-04T06:00:00Z","writer_version":"v","operation":"publish","source_generation":1,"updated_by_job_id":"j","dates":{}}`,
		"bad written_at":     `{"format_version":2,"generation":1,"written_at":"yesterday","writer_version":"v","operation":"publish","updated_by_job_id":"j","dates":{}}`,
		// The decoder refuses a gate report as it refuses a file path.
		"absolute gate_report": `{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{"2026-03-02":{"job_id":"j","gate_report":"/etc/passwd"}}}`,
		"gate_report with ..":  `{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{"2026-03-02":{"job_id":"j","gate_report":"../../x/_gate.json"}}}`,
	} {
		if err := validate(s, []byte(doc)); err == nil {
			t.Errorf("%s passes the schema", name)
		}
	}
	// Validators leave format assertions off by default (readers.md tells
	// outside readers to validate with the schema): the pattern beside the
	// format still refuses a written_at that is no date-time.
	c := jsonschema.NewCompiler()
	loose, err := c.Compile("pointer.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(loose, []byte(`{"format_version":2,"generation":1,"written_at":"yesterday","writer_version":"v","operation":"publish","updated_by_job_id":"j","dates":{}}`)); err == nil {
		t.Error("without format assertions, written_at \"yesterday\" passes the schema")
	}
	if err := validate(loose, []byte(`{"format_version":1,"generation":1,"updated_by_job_id":"j","dates":{"2026-03-02":{"job_id":"j","gate_report":""}}}`)); err != nil {
		t.Errorf("an empty gate_report: %v", err)
	}
}

// seed extracts the bytes of a Go fuzz corpus file: a "go test fuzz v1"
// header, then one []byte("...") line holding a Go string literal.
func seed(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, body, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
	lit, found := strings.CutPrefix(strings.TrimSpace(body), "[]byte(")
	lit, closed := strings.CutSuffix(lit, ")")
	if !ok || header != "go test fuzz v1" || !found || !closed {
		t.Fatalf("%s: not a one-value []byte fuzz corpus file", path)
	}
	s, err := strconv.Unquote(lit)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
