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

// First is Each for calls that may fail: it returns the error of the
// smallest i whose call failed, the one a loop in order would have met
// first, and nil when none did. Once a call has failed, calls of a larger
// i not yet begun are skipped: their errors could not be the first.
func First(n, workers int, fn func(i int) error) error {
	errs := make([]error, n)
	var mu sync.Mutex
	failed := n // the smallest i whose call failed so far
	Each(n, workers, func(i int) {
		mu.Lock()
		skip := i > failed
		mu.Unlock()
		if skip {
			return
		}
		if errs[i] = fn(i); errs[i] != nil {
			mu.Lock()
			failed = min(failed, i)
			mu.Unlock()
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
