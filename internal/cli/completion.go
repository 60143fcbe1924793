package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

// completionOptions: the shell is the argument; there are no flags.
type completionOptions struct{ shell string }

func newCompletionCmd(env *Env) *cobra.Command {
	o := &completionOptions{}
	c := &cobra.Command{
		Use:   "completion bash|zsh",
		Short: "Print the shell completion script for bash or zsh",
		Long: `completion prints a script that completes engagement's commands, flags, table
names and file arguments in bash or zsh. Load it in the current shell, or install it
where the shell looks for completions (docs/cli.md).`,
		Example: `  source <(engagement completion bash)
  engagement completion zsh > "${fpath[1]}/_engagement"`,
		ValidArgs: []cobra.Completion{"bash", "zsh"},
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && (args[0] == "bash" || args[0] == "zsh"):
			case len(args) == 1:
				// fish and PowerShell were told to "name the shell", as if
				// none had been named.
				return exitcode.UsageError(fmt.Errorf("completion: %q: a script is written for bash or zsh only: engagement completion bash|zsh", args[0]))
			default:
				return exitcode.UsageError(fmt.Errorf("completion: name the shell: engagement completion bash|zsh"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.shell = args[0]
			return runCompletion(*env, c.Root(), o)
		},
	}
	return c
}

func runCompletion(env Env, root *cobra.Command, o *completionOptions) error {
	if o.shell == "zsh" {
		return root.GenZshCompletion(env.Stdout)
	}
	return root.GenBashCompletionV2(env.Stdout, true)
}
