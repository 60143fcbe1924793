package version

import (
	"runtime/debug"

	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Module paths whose versions a Build reports.
const (
	duckdbGoModule = "github.com/duckdb/duckdb-go/v2"
	sparkModule    = "github.com/apache/spark-connect-go"
)

// Build is what `engagement version` prints and every attempt record
// carries: enough to tell which code, which DuckDB and which Spark Connect
// client produced a staging prefix. Every field comes from the binary
// itself (build info and the linked DuckDB library): no server is asked.
type Build struct {
	// Version is String(): module version, revision, modified.
	Version  string `json:"version"`
	Module   string `json:"module"`
	Revision string `json:"revision"` // "" when the build recorded none
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	// DuckDB is the linked library's own version (duckdb_library_version);
	// DuckDBGo the Go binding's module version.
	DuckDB   string `json:"duckdb"`
	DuckDBGo string `json:"duckdb_go"`
	// SparkConnect is the spark-connect-go client's module version; the
	// server's version is only known once connected.
	SparkConnect string `json:"spark_connect_go"`
}

// Get reads the build of the running binary.
func Get() Build {
	b := Build{Version: String(), Module: "(unknown)", DuckDB: mapping.LibraryVersion(), DuckDBGo: "(unknown)", SparkConnect: "(not linked)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	return fill(b, bi)
}

func fill(b Build, bi *debug.BuildInfo) Build {
	b.Module, b.Go = bi.Main.Version, bi.GoVersion
	if b.Module == "" {
		b.Module = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		switch d.Path {
		case duckdbGoModule:
			b.DuckDBGo = d.Version
		case sparkModule:
			b.SparkConnect = d.Version
		}
	}
	return b
}
