package inputs

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// footerOf is the thrift footer of the Parquet file at p.
func footerOf(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	return b[len(b)-8-n : len(b)-8]
}

// TestSchemaKey: files of one schema share a key whatever their rows, row
// groups or other key-value metadata; a difference in a column's name,
// case, order or type, or in the schema Spark stored beside it, is another
// key.
func TestSchemaKey(t *testing.T) {
	const cols = `'e1' AS event_id, 'l1' AS learner_key, TIMESTAMPTZ '2026-03-01 10:00:00+00' AS event_time`
	const spark = `, KV_METADATA {'org.apache.spark.sql.parquet.row.metadata': '{"type":"struct","fields":[]}'}`
	key := func(t *testing.T, query string, opts ...string) string {
		t.Helper()
		k, err := schemaKey(footerOf(t, writeParquet(t, query, opts...)))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(t, "SELECT "+cols)
	for _, c := range []struct {
		name  string
		query string
		opts  []string
		same  bool
	}{
		{"other rows", `SELECT 'e' || i AS event_id, 'l' || i AS learner_key, TIMESTAMPTZ '2026-03-02 00:00:00+00' + to_seconds(i) AS event_time FROM range(5000) t(i)`,
			[]string{", ROW_GROUP_SIZE 1024"}, true},
		{"other key-value metadata", "SELECT " + cols, []string{", KV_METADATA {pandas: '{\"index_columns\": []}'}"}, true},
		{"schema stored by Spark", "SELECT " + cols, []string{spark}, false},
		{"a column renamed", `SELECT 'e1' AS event_id, 'l1' AS learner, TIMESTAMPTZ '2026-03-01 10:00:00+00' AS event_time`, nil, false},
		{"a column's case", `SELECT 'e1' AS Event_ID, 'l1' AS learner_key, TIMESTAMPTZ '2026-03-01 10:00:00+00' AS event_time`, nil, false},
		{"columns reordered", `SELECT 'l1' AS learner_key, 'e1' AS event_id, TIMESTAMPTZ '2026-03-01 10:00:00+00' AS event_time`, nil, false},
		{"a column's type", `SELECT 'e1' AS event_id, 'l1' AS learner_key, TIMESTAMP '2026-03-01 10:00:00' AS event_time`, nil, false},
		{"a column more", "SELECT " + cols + ", 'c1' AS course_id", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := key(t, c.query, c.opts...); (got == base) != c.same {
				t.Errorf("same key as the base file: %v, want %v", got == base, c.same)
			}
		})
	}
	t.Run("one schema stored by Spark", func(t *testing.T) {
		a, b := key(t, "SELECT "+cols, spark), key(t, `SELECT 'e2' AS event_id, 'l2' AS learner_key, now() AS event_time`, spark)
		other := key(t, "SELECT "+cols, `, KV_METADATA {'org.apache.spark.sql.parquet.row.metadata': '{"type":"struct","fields":[{}]}'}`)
		if a != b || a == other {
			t.Errorf("equal stored schemas share a key: %v; other stored schemas do not: %v", a == b, a != other)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		f := footerOf(t, writeParquet(t, "SELECT "+cols))
		for _, cut := range []int{1, len(f) / 2, len(f) - 1} {
			if _, err := schemaKey(f[:cut]); !errors.Is(err, errFooter) {
				t.Errorf("footer cut to %d of %d bytes: %v, want a malformed footer", cut, len(f), err)
			}
		}
	})
}
