package duckdb

import (
	"reflect"
	"unsafe"

	duckdbdriver "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// duckdb-go (v2.10505) hands a chunk function its arguments a row at a
// time, each read through a per-type callback and boxed in an interface (an
// allocation a row for a 64-bit value): on the 60M design day that was 2.0
// of the 3.1 CPU s the statement spent handing the event ids' hashes to Go
// (benchmark.md, run 37); read as a vector, 60M hashes take about 0.4 s
// where row by row took 3.3 s. The library keeps the chunk's DuckDB handles
// unexported, so they are found by reflection, once: two pointers read,
// nothing set. The handles are then used through DuckDB's C API, as the
// library itself reads a value (a flat vector; DuckDB flattens a C scalar
// function's input). Where the layout is not the one expected (another
// duckdb-go), callVectors reports so and the caller reads row by row;
// TestVectorsFound fails then, so an upgrade does not lose the fast path
// unseen.
var callLayout = findCallLayout()

type layout struct {
	ok bool
	// in: ChunkIteratorState.r.chunk (*DataChunk), then DataChunk.chunk.
	inChunk, dataChunk []int
	// out: ChunkIteratorState.output (*vector), then vector.vec.
	output, vec []int
}

func findCallLayout() layout {
	state := reflect.TypeFor[duckdbdriver.ChunkIteratorState]()
	inChunk, ok := fieldPath(state, reflect.TypeFor[*duckdbdriver.DataChunk](), "r", "chunk")
	if !ok {
		return layout{}
	}
	dataChunk, ok := fieldPath(reflect.TypeFor[duckdbdriver.DataChunk](), reflect.TypeFor[mapping.DataChunk](), "chunk")
	if !ok {
		return layout{}
	}
	out, ok := state.FieldByName("output")
	if !ok || out.Type.Kind() != reflect.Pointer || out.Type.Elem().Kind() != reflect.Struct {
		return layout{}
	}
	vec, ok := fieldPath(out.Type.Elem(), reflect.TypeFor[mapping.Vector](), "vec")
	if !ok {
		return layout{}
	}
	return layout{ok: true, inChunk: inChunk, dataChunk: dataChunk, output: out.Index, vec: vec}
}

// fieldPath is the index path of the field named by names, nested, in t,
// if the last one has type want.
func fieldPath(t, want reflect.Type, names ...string) ([]int, bool) {
	var path []int
	for _, name := range names {
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return nil, false
		}
		path = append(path, f.Index...)
		t = f.Type
	}
	return path, t == want
}

// callVectors returns a scalar function call's input chunk and result
// vector as DuckDB's own handles.
func callVectors(ch *duckdbdriver.ChunkIteratorState) (mapping.DataChunk, mapping.Vector, bool) {
	if !callLayout.ok || ch == nil {
		return mapping.DataChunk{}, mapping.Vector{}, false
	}
	state := reflect.ValueOf(ch).Elem()
	chunk := state.FieldByIndex(callLayout.inChunk)
	output := state.FieldByIndex(callLayout.output)
	if chunk.IsNil() || output.IsNil() {
		return mapping.DataChunk{}, mapping.Vector{}, false
	}
	in := chunk.Elem().FieldByIndex(callLayout.dataChunk).Field(0)
	out := output.Elem().FieldByIndex(callLayout.vec).Field(0)
	if in.Kind() != reflect.UnsafePointer || out.Kind() != reflect.UnsafePointer {
		return mapping.DataChunk{}, mapping.Vector{}, false
	}
	inPtr, outPtr := in.UnsafePointer(), out.UnsafePointer()
	if inPtr == nil || outPtr == nil || mapping.DataChunkGetColumnCount(mapping.DataChunk{Ptr: inPtr}) != 1 {
		return mapping.DataChunk{}, mapping.Vector{}, false
	}
	return mapping.DataChunk{Ptr: inPtr}, mapping.Vector{Ptr: outPtr}, true
}

// keepVector is keep on a call's vectors: the UBIGINT argument's valid
// rows kept, the result true where the argument is valid and NULL where it
// is not (what Rows() gives a function without special null handling).
func keepVector(in mapping.DataChunk, out mapping.Vector) []uint64 {
	n := int(mapping.DataChunkGetSize(in))
	if n == 0 {
		return nil
	}
	arg := mapping.DataChunkGetVector(in, 0)
	data := unsafe.Slice((*uint64)(mapping.VectorGetData(arg)), n)
	result := unsafe.Slice((*bool)(mapping.VectorGetData(out)), n)
	words := (n + 63) / 64
	argMask := mapping.VectorGetValidity(arg)
	if argMask == nil {
		// No validity mask: every row is valid. The result's mask, if it
		// has one, is made to say so.
		if m := mapping.VectorGetValidity(out); m != nil {
			mask := unsafe.Slice((*uint64)(m), words)
			for i := range mask {
				mask[i] = ^uint64(0)
			}
		}
		for i := range result {
			result[i] = true
		}
		return append(make([]uint64, 0, n), data...)
	}
	valid := unsafe.Slice((*uint64)(argMask), words)
	mapping.VectorEnsureValidityWritable(out)
	resultMask := unsafe.Slice((*uint64)(mapping.VectorGetValidity(out)), words)
	kept := make([]uint64, 0, n)
	for i := range n {
		bit := uint64(1) << (i % 64)
		if valid[i/64]&bit != 0 {
			kept = append(kept, data[i])
			result[i] = true
			resultMask[i/64] |= bit
		} else {
			resultMask[i/64] &^= bit
		}
	}
	return kept
}
