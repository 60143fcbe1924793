package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"runtime/debug"
	"sync"

	duckdbdriver "github.com/duckdb/duckdb-go/v2"
)

// keepHashFunc is the scalar function through which a uniqueness check hands
// each checked key's 64-bit hash to Go: it keeps its argument in the
// engine's hashSink and returns true (NULL for a NULL argument, which is not
// kept). A check counts its rows with count(keepHashFunc(h)) in the same
// statement as its other counts, then asks the sink how many hashes repeat.
//
// Why not in SQL: DuckDB's ways (a sort, a hash table) are general-purpose;
// hashes partitioned by their top bits and counted in tables that fit the
// CPU's cache cost a fraction of either (uniqueness.go has the figures).
const keepHashFunc = "engagement_keep_hash"

// hashSink holds the hashes kept by one check. DuckDB calls keepHashFunc
// from its worker threads, a vector (at most 2,048 rows) at a time.
type hashSink struct {
	mu     sync.Mutex
	chunks [][]uint64
	// byRow reads every call row by row (tests: the two reads agree).
	byRow bool
}

func (s *hashSink) add(chunk []uint64) {
	s.mu.Lock()
	s.chunks = append(s.chunks, chunk)
	s.mu.Unlock()
}

// take empties the sink and returns what it held.
func (s *hashSink) take() [][]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chunks
	s.chunks = nil
	return c
}

func (s *hashSink) Config() duckdbdriver.ScalarFuncConfig {
	in, _ := duckdbdriver.NewTypeInfo(duckdbdriver.TYPE_UBIGINT)
	out, _ := duckdbdriver.NewTypeInfo(duckdbdriver.TYPE_BOOLEAN)
	// Volatile: a constant argument must not be folded into one call, and
	// no call may be skipped or shared between rows.
	return duckdbdriver.ScalarFuncConfig{InputTypeInfos: []duckdbdriver.TypeInfo{in}, ResultTypeInfo: out, Volatile: true}
}

func (s *hashSink) Executor() duckdbdriver.ScalarFuncExecutor {
	return duckdbdriver.ScalarFuncExecutor{
		// A binder of its own, though it changes nothing: without one,
		// duckdb-go stores the statement's context in the call's bind data
		// on the first call from each DuckDB thread, which the race
		// detector rightly reports; with one, it is stored once, at bind.
		ScalarBinder:         func(ctx context.Context, _ []duckdbdriver.ScalarUDFArg) (context.Context, error) { return ctx, nil },
		ChunkContextExecutor: s.keep,
	}
}

// keep is keepHashFunc on one vector of rows: read as a vector where the
// library's layout allows (vectors.go), else row by row.
func (s *hashSink) keep(_ context.Context, ch *duckdbdriver.ChunkIteratorState) error {
	if !s.byRow {
		if in, out, ok := callVectors(ch); ok {
			if kept := keepVector(in, out); len(kept) > 0 {
				s.add(kept)
			}
			return nil
		}
	}
	var kept []uint64
	for row, err := range ch.Rows() {
		if err != nil {
			return err
		}
		v, ok := (*row.GetValuePtr(0)).(uint64)
		if !ok {
			return fmt.Errorf("%s: argument %T, want UBIGINT", keepHashFunc, *row.GetValuePtr(0))
		}
		if kept == nil {
			kept = make([]uint64, 0, 2048)
		}
		kept = append(kept, v)
		if err := row.SetResult(true); err != nil {
			return err
		}
	}
	if len(kept) > 0 {
		s.add(kept)
	}
	return nil
}

func registerKeepHash(conn *sql.Conn, s *hashSink) error {
	if err := duckdbdriver.RegisterScalarUDF(conn, keepHashFunc, s); err != nil {
		return fmt.Errorf("register %s: %w", keepHashFunc, err)
	}
	return nil
}

// keptRepeats counts the kept hashes equal to an earlier kept hash
// (count(h) - count(DISTINCT h)) with workers goroutines, empties the sink
// and gives the memory back to the system before the stage needs it.
func (e *Engine) keptRepeats(ctx context.Context, workers int) (int64, error) {
	n, err := countRepeats(ctx, e.sink.take(), workers)
	debug.FreeOSMemory()
	return n, err
}

// bucketRows is about how many hashes one bucket's table holds: its table
// (twice as many 8-byte slots) then stays inside a core's L2 cache.
const bucketRows = 16384

// countRepeats counts the values of chunks equal to an earlier value. The
// values are partitioned by their top bits into buckets of about
// bucketRows, and each bucket counted in an open-addressing table of its
// own: equal values share a bucket, so the buckets' counts add up.
func countRepeats(ctx context.Context, chunks [][]uint64, workers int) (int64, error) {
	var n int
	for _, c := range chunks {
		n += len(c)
	}
	if n < 2 {
		return 0, nil
	}
	workers = max(1, min(workers, len(chunks)))
	shift := uint(64)
	for nb := 1; nb*bucketRows < n && shift > 48; nb <<= 1 {
		shift--
	}
	buckets := 1 << (64 - shift)
	// A shift of 64 (one bucket) gives 0: Go defines it so.
	bucket := func(v uint64) int { return int(v >> shift) }

	// Each worker partitions its own share of the chunks into its own
	// region of every bucket: counted first, then scattered.
	counts := make([][]int, workers)
	run := func(f func(w int)) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { f(w) })
		}
		wg.Wait()
	}
	share := func(w int) [][]uint64 { return chunks[w*len(chunks)/workers : (w+1)*len(chunks)/workers] }
	run(func(w int) {
		c := make([]int, buckets)
		for _, chunk := range share(w) {
			for _, v := range chunk {
				c[bucket(v)]++
			}
		}
		counts[w] = c
	})
	starts := make([]int, buckets+1)
	pos := make([][]int, workers)
	for w := range pos {
		pos[w] = make([]int, buckets)
	}
	at := 0
	for b := range buckets {
		starts[b] = at
		for w := range workers {
			pos[w][b] = at
			at += counts[w][b]
		}
	}
	starts[buckets] = at
	all := make([]uint64, n)
	run(func(w int) {
		p := pos[w]
		for _, chunk := range share(w) {
			for _, v := range chunk {
				b := bucket(v)
				all[p[b]] = v
				p[b]++
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}

	repeats := make([]int64, workers)
	errs := make([]error, workers)
	run(func(w int) {
		// Counted locally: workers' counters side by side in one slice
		// would share a cache line.
		var r int64
		defer func() { repeats[w] = r }()
		var table []uint64
		for b := w; b < buckets; b += workers {
			if b/workers%64 == 0 && ctx.Err() != nil {
				errs[w] = ctx.Err()
				return
			}
			vals := all[starts[b]:starts[b+1]]
			size := 1
			for size < 2*len(vals) {
				size <<= 1
			}
			if cap(table) < size {
				table = make([]uint64, size)
			}
			table = table[:size]
			clear(table)
			mask := uint64(size - 1)
			// 0 marks an empty slot, so the value 0 is counted aside.
			zero := false
			for _, v := range vals {
				if v == 0 {
					if zero {
						r++
					}
					zero = true
					continue
				}
				// The bucket shares its top bits; the slot comes from all
				// of them, mixed (a test's weakened hash has few bits).
				i := (v * 0x9E3779B97F4A7C15) >> 32 & mask
				for {
					t := table[i]
					if t == 0 {
						table[i] = v
						break
					}
					if t == v {
						r++
						break
					}
					i = (i + 1) & mask
				}
			}
		}
	})
	var total int64
	for w := range workers {
		if errs[w] != nil {
			return 0, errs[w]
		}
		total += repeats[w]
	}
	return total, nil
}
