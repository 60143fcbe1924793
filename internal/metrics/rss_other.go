//go:build !unix

package metrics

// PeakRSSBytes reports nothing where getrusage does not exist.
func PeakRSSBytes() (int64, bool) { return 0, false }
