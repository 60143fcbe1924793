package duckdb

import (
	"errors"
	"testing"
)

// TestReadFault: a store that did not answer, or answered with an HTTP
// error, is not the file's fault; a damaged file or one the engine ran out
// of memory reading is said as such.
func TestReadFault(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"IO Error: Server returned nothing (no headers, no data) error for HTTP HEAD to 'http://127.0.0.1:1/b/raw/part-0.parquet'", "could not be read from the store"},
		{"HTTP Error: HTTP GET error on 'http://x/raw/p.parquet' (HTTP 503)", "could not be read from the store"},
		{"IO Error: Could not connect to 127.0.0.1:1", "could not be read from the store"},
		{"Invalid Input Error: No magic bytes found at end of file 'raw/p.parquet'", "not a readable Parquet file"},
		{"Out of Memory Error: could not allocate block of size 256.0 KiB", "reading it ran out of memory"},
	} {
		if got := readFault(errors.New(tc.msg)); got != tc.want {
			t.Errorf("readFault(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
