package duckdb

import (
	"context"
	"fmt"
	"slices"
	"testing"

	duckdbdriver "github.com/duckdb/duckdb-go/v2"
)

// vectorProbe is a scalar function that reports whether callVectors found
// its call's vectors.
type vectorProbe struct{ found, missed chan struct{} }

func (p vectorProbe) Config() duckdbdriver.ScalarFuncConfig {
	in, _ := duckdbdriver.NewTypeInfo(duckdbdriver.TYPE_UBIGINT)
	out, _ := duckdbdriver.NewTypeInfo(duckdbdriver.TYPE_BOOLEAN)
	return duckdbdriver.ScalarFuncConfig{InputTypeInfos: []duckdbdriver.TypeInfo{in}, ResultTypeInfo: out, Volatile: true}
}

func (p vectorProbe) Executor() duckdbdriver.ScalarFuncExecutor {
	return duckdbdriver.ScalarFuncExecutor{ChunkContextExecutor: func(_ context.Context, ch *duckdbdriver.ChunkIteratorState) error {
		c := p.missed
		if _, _, ok := callVectors(ch); ok {
			c = p.found
		}
		select { // the first call is the one asked about
		case c <- struct{}{}:
		default:
		}
		for row := range ch.Rows() {
			if err := row.SetResult(true); err != nil {
				return err
			}
		}
		return nil
	}}
}

// TestVectorsFound holds the fast read of keepHashFunc's argument on: it
// fails where a duckdb-go upgrade changed the layout callVectors reads, which
// would otherwise only show as a slower publish.
func TestVectorsFound(t *testing.T) {
	if !callLayout.ok {
		t.Fatal("duckdb-go's chunk layout is not the one callVectors reads: the uniqueness checks read their hashes row by row (vectors.go)")
	}
	e, err := Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := vectorProbe{found: make(chan struct{}, 1), missed: make(chan struct{}, 1)}
	if err := duckdbdriver.RegisterScalarUDF(e.conn, "probe_vectors", p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conn.ExecContext(t.Context(), "SELECT probe_vectors(42::UBIGINT)"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.found:
	case <-p.missed:
		t.Fatal("callVectors found no vectors in a scalar function's call")
	}
}

// TestKeepReadsVectors holds keepHashFunc read as vectors to the rule it
// must keep, and to the row-by-row read: the non-null arguments kept, each
// once, the result true for them and NULL for the others. The values are
// known by construction (i*3 + offset near the top of UBIGINT, and 0); the
// nulls fall in every vector, in some only, or everywhere, so a result mask
// left from an earlier vector would show.
func TestKeepReadsVectors(t *testing.T) {
	const offset = uint64(18446744073709000000)
	for _, tc := range []struct {
		name  string
		n     int
		null  string // SQL over i
		isNul func(i int) bool
	}{
		{"no nulls", 10_000, "false", func(int) bool { return false }},
		{"every seventh null", 10_000, "i % 7 = 3", func(i int) bool { return i%7 == 3 }},
		{"nulls in the first vector only", 10_000, "i < 2048 AND i % 3 = 0", func(i int) bool { return i < 2048 && i%3 == 0 }},
		{"nulls from the third vector on", 10_000, "i >= 4096 AND i % 5 = 1", func(i int) bool { return i >= 4096 && i%5 == 1 }},
		{"all null", 5_000, "true", func(int) bool { return true }},
		{"one row", 1, "false", func(int) bool { return false }},
		{"a short last vector", 2049, "i = 2048", func(i int) bool { return i == 2048 }},
	} {
		var want []uint64
		for i := range tc.n {
			if !tc.isNul(i) {
				if i == 0 {
					want = append(want, 0)
				} else {
					want = append(want, uint64(i)*3+offset)
				}
			}
		}
		slices.Sort(want)
		for _, byRow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/byRow=%v", tc.name, byRow), func(t *testing.T) {
				e, err := Open(t.Context(), map[string]string{"threads": "2"})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				e.sink.byRow = byRow
				q := fmt.Sprintf(`SELECT count(k), count(*) - count(k), coalesce(bool_and(k), true)
FROM (SELECT %s(CASE WHEN %s THEN NULL WHEN i = 0 THEN 0::UBIGINT ELSE i::UBIGINT * 3 + %d::UBIGINT END) AS k FROM range(%d) t(i))`,
					keepHashFunc, tc.null, offset, tc.n)
				var kept, nulls int
				var allTrue bool
				if err := e.conn.QueryRowContext(t.Context(), q).Scan(&kept, &nulls, &allTrue); err != nil {
					t.Fatal(err)
				}
				var got []uint64
				for _, c := range e.sink.take() {
					got = append(got, c...)
				}
				slices.Sort(got)
				if kept != len(want) || nulls != tc.n-len(want) || !allTrue {
					t.Errorf("results: %d true, %d null, all true %v; want %d true, %d null", kept, nulls, allTrue, len(want), tc.n-len(want))
				}
				if !slices.Equal(got, want) {
					t.Errorf("kept %d values, want %d (equal: %v)", len(got), len(want), slices.Equal(got, want))
				}
			})
		}
	}
}
