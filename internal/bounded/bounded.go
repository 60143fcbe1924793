// Package bounded runs independent calls a few at a time: the reads of
// many files, where one at a time costs a request's latency each on an
// object store and all at once floods it.
package bounded

import "sync"

// Each calls fn(i) for each i in [0, n), at most workers at once, and
// returns when every call has. The calls write their results by index, so
// a caller reads them in order, whichever call ends first.
func Each(n, workers int, fn func(i int)) {
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
