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
