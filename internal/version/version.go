// Package version names the build of the tool, for what it records (every
// pointer generation and attempt record names its writer) and what it
// prints. It reads the build information Go embeds; it never reads a clock.
package version

import (
	"runtime/debug"
	"strings"
)

// String is the module version and, when the build recorded them, the
// VCS revision and whether the tree was modified: "v1.2.0", or
// "(devel) rev 9a4dede1c0de modified" for a build from a checkout.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return describe(bi.Main.Version, bi.Settings)
}

func describe(module string, settings []debug.BuildSetting) string {
	if module == "" {
		module = "(devel)"
	}
	parts := []string{module}
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	// A tagged module version already names its revision.
	if rev != "" && !strings.Contains(module, rev[:min(12, len(rev))]) {
		parts = append(parts, "rev "+rev[:min(12, len(rev))])
		if modified == "true" {
			parts = append(parts, "modified")
		}
	}
	return strings.Join(parts, " ")
}
