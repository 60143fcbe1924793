package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/version"
)

// versionOptions are version's flags.
type versionOptions struct {
	origin
	format string
}

func newVersionCmd(env *Env) *cobra.Command {
	o := &versionOptions{}
	c := &cobra.Command{
		Use:   "version [--format text|json]",
		Short: "Print the build: module, revision, DuckDB and Spark Connect client versions",
		Long: `version prints the module version and VCS revision of this binary, the Go
toolchain, the linked DuckDB library and its Go binding, and the Spark Connect
client. Every attempt records the same in its _attempt.json ("build").
"engagement --version" prints the text form.`,
		Example: `  engagement version
  engagement version --format json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runVersion(*env, o) },
	}
	o.origin = origin{c.Flags()}
	c.Flags().StringVar(&o.format, "format", "text", "text or json")
	return c
}

func runVersion(env Env, o *versionOptions) error {
	b := version.Get()
	switch o.format {
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(b)
	case "text":
		_, err := io.WriteString(env.Stdout, versionText(b))
		return err
	}
	return exitcode.UsageError(fmt.Errorf("version: %s %q: want text or json", o.ref("format"), o.format))
}

// versionText is the text of `engagement version` and `--version`.
func versionText(b version.Build) string {
	var s strings.Builder
	rev := b.Revision
	if rev == "" {
		rev = "(not recorded)"
	} else if b.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(&s, "engagement %s\n", b.Version)
	fmt.Fprintf(&s, "  module:            %s\n", b.Module)
	fmt.Fprintf(&s, "  revision:          %s\n", rev)
	fmt.Fprintf(&s, "  go:                %s\n", b.Go)
	fmt.Fprintf(&s, "  duckdb:            %s (duckdb-go %s)\n", b.DuckDB, b.DuckDBGo)
	fmt.Fprintf(&s, "  spark-connect-go:  %s\n", b.SparkConnect)
	return s.String()
}
