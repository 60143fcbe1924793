// Package lineagetest validates OpenLineage events against the vendored
// OpenLineage JSON Schemas (testdata/openlineage) and the project's own
// facet schema (schema/lineage-facets.schema.json), offline.
package lineagetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/techlearningpro/engagement/internal/lineage"
)

// root is the module root, found from this source file.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// AssertionFields are the fields of an assertion in
// DataQualityAssertionsDatasetFacet 1-1-0, as the generated class of
// openlineage-python 1.54.0 lists them; no reachable package ships that
// facet's JSON Schema (testdata/openlineage/README.md).
var AssertionFields = map[string]bool{"assertion": true, "success": true, "column": true, "severity": true,
	"name": true, "description": true, "expected": true, "actual": true, "content": true, "contentType": true, "params": true}

// Validator holds the compiled schemas.
type Validator struct {
	c     *jsonschema.Compiler
	cache map[string]*jsonschema.Schema
}

// New loads every vendored schema under its $id, so references between
// them resolve without a network.
func New(t testing.TB) *Validator {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob(filepath.Join(root(), "testdata", "openlineage", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	facets, err := filepath.Glob(filepath.Join(root(), "testdata", "openlineage", "facets", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(append(files, facets...), filepath.Join(root(), "schema", "lineage-facets.schema.json"))
	if len(files) < 7 {
		t.Fatalf("found %d schema files, want the core, 5 facets and the project's: %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			t.Fatalf("%s has no $id", f)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return &Validator{c: c, cache: map[string]*jsonschema.Schema{}}
}

func (v *Validator) schema(url string) (*jsonschema.Schema, error) {
	if s, ok := v.cache[url]; ok {
		return s, nil
	}
	s, err := v.c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", url, err)
	}
	v.cache[url] = s
	return s, nil
}

func (v *Validator) validate(url string, doc any) error {
	s, err := v.schema(url)
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// Validate checks one serialized event: the whole against the RunEvent
// schema its schemaURL names, then every facet against the schema its
// _schemaURL names. The data-quality facet, whose schema is not vendored,
// is checked against the facet base of its place and its assertions'
// fields against AssertionFields.
func (v *Validator) Validate(line []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("parse event: %w", err)
	}
	ev, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("event is not an object")
	}
	if got := ev["schemaURL"]; got != lineage.RunEventURL {
		return fmt.Errorf("schemaURL %v, want %s", got, lineage.RunEventURL)
	}
	if err := v.validate(lineage.RunEventURL, doc); err != nil {
		return err
	}
	type bag struct {
		where, base string
		facets      any
	}
	bags := []bag{
		{"run", "RunFacet", dig(ev, "run", "facets")},
		{"job", "JobFacet", dig(ev, "job", "facets")},
	}
	for i, in := range list(ev["inputs"]) {
		bags = append(bags, bag{fmt.Sprintf("inputs[%d]", i), "InputDatasetFacet", dig(in, "inputFacets")})
	}
	for i, out := range list(ev["outputs"]) {
		bags = append(bags, bag{fmt.Sprintf("outputs[%d]", i), "OutputDatasetFacet", dig(out, "outputFacets")})
	}
	n := 0
	for _, b := range bags {
		facets, _ := b.facets.(map[string]any)
		names := make([]string, 0, len(facets))
		for name := range facets {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			f, _ := facets[name].(map[string]any)
			url, _ := f["_schemaURL"].(string)
			if url == lineage.AssertionsURL {
				if err := v.validate(lineage.SpecURL+"#/$defs/"+b.base, f); err != nil {
					return fmt.Errorf("%s facet %s: %w", b.where, name, err)
				}
				if err := assertions(f); err != nil {
					return fmt.Errorf("%s facet %s: %w", b.where, name, err)
				}
				n++
				continue
			}
			if !strings.Contains(url, "#/$defs/") {
				return fmt.Errorf("%s facet %s: _schemaURL %q names no definition", b.where, name, url)
			}
			if err := v.validate(url, f); err != nil {
				return fmt.Errorf("%s facet %s: %w", b.where, name, err)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("the event has no facets")
	}
	return nil
}

func assertions(f map[string]any) error {
	as, ok := f["assertions"].([]any)
	if !ok || len(as) == 0 {
		return fmt.Errorf("no assertions")
	}
	for i, a := range as {
		m, ok := a.(map[string]any)
		if !ok {
			return fmt.Errorf("assertion %d is not an object", i)
		}
		for k := range m {
			if !AssertionFields[k] {
				return fmt.Errorf("assertion %d: field %q is not in DataQualityAssertionsDatasetFacet 1-1-0", i, k)
			}
		}
		if _, ok := m["assertion"].(string); !ok {
			return fmt.Errorf("assertion %d: no assertion string", i)
		}
		if _, ok := m["success"].(bool); !ok {
			return fmt.Errorf("assertion %d: no success boolean", i)
		}
	}
	return nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// Decode parses a validated event into the package's type.
func Decode(t testing.TB, line []byte) lineage.Event {
	t.Helper()
	var e lineage.Event
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatalf("decode event: %v\n%s", err, line)
	}
	return e
}
