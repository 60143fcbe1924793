// Package crashtest is evidence, not product code: its tests run the real
// engagement binary and kill it with SIGKILL at every named failpoint and at
// random moments, race many publisher processes on one warehouse, and after
// each of these check the invariants readers rely on (the pointer is the old
// or the new generation, every file it names is whole, the visible sums are
// the generator's ground truth, raw is untouched, a rerun publishes).
package crashtest
