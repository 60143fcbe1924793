package pointer

import (
	"context"
	"time"
)

// SetSleep replaces the wait between conflict retries for one test and
// returns what restores it.
func SetSleep(f func(context.Context, time.Duration) error) (restore func()) {
	old := sleep
	sleep = f
	return func() { sleep = old }
}

// CheckKeys and IsPlainKey let the key check be held to its reference.
var (
	CheckKeys  = checkKeys
	IsPlainKey = isPlainKey
)

// SetOutcomeReadBound shortens the bound on the outcome re-reads for one
// test and returns what restores it.
func SetOutcomeReadBound(d time.Duration) (restore func()) {
	old := outcomeReadBound
	outcomeReadBound = d
	return func() { outcomeReadBound = old }
}
