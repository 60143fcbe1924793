//go:build unix

package metrics

import (
	"runtime"
	"syscall"
)

// PeakRSSBytes is the process's peak resident set size (ru_maxrss), DuckDB's
// memory included since it runs in this process.
func PeakRSSBytes() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	n := int64(ru.Maxrss)
	// Linux and the BSDs report kilobytes; macOS reports bytes.
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		n *= 1024
	}
	return n, true
}
