package duckdb

import (
	"context"
	"errors"
	"testing"
)

// splitmix is a fixed sequence of well-mixed 64-bit values, as DuckDB's hash
// gives.
func splitmix(seed uint64) func() uint64 {
	return func() uint64 {
		seed += 0x9E3779B97F4A7C15
		z := seed
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		return z ^ (z >> 31)
	}
}

// chunked cuts values into vectors of at most size, as DuckDB hands them.
func chunked(values []uint64, size int) [][]uint64 {
	var out [][]uint64
	for len(values) > 0 {
		n := min(size, len(values))
		out = append(out, values[:n:n])
		values = values[n:]
	}
	return out
}

// TestCountRepeats holds countRepeats to a map's count(h) - count(DISTINCT h)
// over inputs whose repeats are known by construction: none, every value
// repeated, a value repeated many times, zeros (the table's empty mark), a
// hash of few values (the tests' weakened hash), and enough values to
// partition into many buckets.
func TestCountRepeats(t *testing.T) {
	next := splitmix(7)
	distinct := func(n int) []uint64 {
		v := make([]uint64, n)
		for i := range v {
			v[i] = next()
		}
		return v
	}
	big := distinct(300_000)
	withRepeats := append(append([]uint64(nil), big...), big[:1234]...)
	withRepeats = append(withRepeats, big[5], big[5], big[5])
	for _, tc := range []struct {
		name   string
		values []uint64
		want   int64
	}{
		{"empty", nil, 0},
		{"one", []uint64{42}, 0},
		{"a pair", []uint64{42, 42}, 1},
		{"zeros", []uint64{0, 0, 0, 1, 1}, 3},
		{"zero once", []uint64{0, 1, 2}, 0},
		{"few values", []uint64{0, 1, 2, 0, 1, 2, 0, 1, 2, 2}, 7},
		{"top bits equal", []uint64{1 << 63, 1<<63 | 1, 1<<63 | 2, 1<<63 | 1}, 1},
		{"many distinct", big, 0},
		{"many with repeats", withRepeats, 1234 + 3},
	} {
		for _, workers := range []int{1, 2, 3} {
			got, err := countRepeats(context.Background(), chunked(tc.values, 2048), workers)
			if err != nil || got != tc.want {
				t.Errorf("%s, %d workers: %d repeats (%v), want %d", tc.name, workers, got, err, tc.want)
			}
			seen := map[uint64]bool{}
			var byMap int64
			for _, v := range tc.values {
				if seen[v] {
					byMap++
				}
				seen[v] = true
			}
			if byMap != tc.want {
				t.Fatalf("%s: the case's own count is %d, the map's %d", tc.name, tc.want, byMap)
			}
		}
	}
}

func TestCountRepeatsStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	next := splitmix(1)
	values := make([]uint64, 100_000)
	for i := range values {
		values[i] = next()
	}
	if _, err := countRepeats(ctx, chunked(values, 2048), 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// BenchmarkCountRepeats counts the repeats of the 60M design day's worth of
// distinct hashes, as the event-id check hands them over.
func BenchmarkCountRepeats(b *testing.B) {
	next := splitmix(3)
	values := make([]uint64, 60_000_000)
	for i := range values {
		values[i] = next()
	}
	chunks := chunked(values, 2048)
	b.ResetTimer()
	for b.Loop() {
		if n, err := countRepeats(context.Background(), chunks, 2); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
}
