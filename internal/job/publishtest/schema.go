package publishtest

import (
	"bytes"
	"context"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/techlearningpro/engagement/internal/pointer"
)

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// CheckSchema validates pointer.json and every pointer-history/<G>.json of
// warehouse against schema/pointer.schema.json, so every pointer the suite
// looks at also checks the published schema. A file the decoder refuses
// (a test's planted or torn copy) is the decoder's business and skipped;
// one it accepts must pass the schema too.
func CheckSchema(t *testing.T, warehouse string) {
	t.Helper()
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		schema, schemaErr = c.Compile(filepath.Join(Root(), "schema", "pointer.schema.json"))
	})
	if schemaErr != nil {
		t.Fatalf("compile pointer schema: %v", schemaErr)
	}
	b := Bucket(t, warehouse)
	keys := []string{"pointer.json"}
	objs, err := b.List(context.Background(), "pointer-history/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		name := path.Base(o.Key)
		if num, ok := strings.CutSuffix(name, ".json"); ok && num != "" && strings.Trim(num, "0123456789") == "" {
			keys = append(keys, o.Key)
		}
	}
	for _, k := range keys {
		data := Get(t, warehouse, k)
		if data == nil {
			continue
		}
		if _, err := pointer.Decode(data); err != nil {
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err == nil {
			err = schema.Validate(v)
		}
		if err != nil {
			t.Errorf("%s/%s: decodes but fails schema/pointer.schema.json: %v", warehouse, k, err)
		}
	}
}
