// Package cli implements the engagement commands on spf13/cobra. Each
// command is one file: an options struct, newXCmd (its flags, help and two
// examples) and runX (the work, returning an error). Main only maps the
// returned error to an exit code, so every command is testable in-process.
//
// To add a command: write its file on the pattern of status.go and add its
// constructor to commands below. A flag is declared once, on the command's
// flag set; its ENGAGEMENT_<NAME> variable, help line and completion follow.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/signals"
	"github.com/techlearningpro/engagement/internal/version"
)

// commands are the subcommands, in the order help lists them.
var commands = []func(*Env) *cobra.Command{
	newPublishCmd, newExplainCmd, newStatusCmd, newReadCmd, newViewsCmd, newHistoryCmd, newRollbackCmd, newReportCmd,
	newGenCmd, newGCCmd, newVersionCmd, newCompletionCmd,
}

func init() {
	// Help lists the commands in the order above, not alphabetically.
	cobra.EnableCommandSorting = false
}

// Env is what a command may touch of the outside world.
type Env struct {
	Stdout, Stderr io.Writer
	// Console is Stderr as the run's log (--log-format); nil means
	// NewConsole(Stderr). Main shares it with the signal handler.
	Console *Console
	// Log is the run's logger; nil means the Console's. One given is used
	// as it is.
	Log *slog.Logger
	// Lookup reads an environment variable (ENGAGEMENT_<FLAG>); nil means
	// os.LookupEnv. Tests inject their own.
	Lookup func(name string) (string, bool)
	// Environ lists the environment, for the warning about ENGAGEMENT_*
	// variables nothing reads; nil means os.Environ, or none when Lookup
	// is given (a test's variables are its Lookup's).
	Environ func() []string

	// outcome is what publish --output json reports, shared by every copy.
	outcome *outcome
}

func (e Env) withDefaults() Env {
	if e.Console == nil {
		e.Console = NewConsole(e.Stderr)
	}
	if e.Log == nil {
		e.Log = e.Console.Logger()
	}
	if e.Environ == nil && e.Lookup == nil {
		e.Environ = os.Environ
	}
	if e.Environ == nil {
		e.Environ = func() []string { return nil }
	}
	if e.Lookup == nil {
		e.Lookup = os.LookupEnv
	}
	if e.outcome == nil {
		e.outcome = &outcome{}
	}
	return e
}

// Main runs args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainEnv(ctx, Env{Stdout: stdout, Stderr: stderr}, args)
}

// MainEnv is Main with the whole Env (an injected environment lookup).
// The error goes to stderr as the last log line; publish --output json
// also reports it on stdout.
func MainEnv(ctx context.Context, env Env, args []string) int {
	env = env.withDefaults()
	started := time.Now()
	pre := readPreParse(args, env.Lookup)
	env.Console.preset(pre)
	err := Run(ctx, env, args)
	if readerGone(err) {
		// status | head: the reader took what it wanted and went away, as
		// with any Unix filter; a publish handles this itself (exit 0 once
		// the pointer moved).
		err = nil
	}
	code := exitcode.Code(err)
	if err != nil && !env.outcome.ran {
		// A command line refused before any publish ran is decided here,
		// before its metrics are pushed: a signal during a slow push made
		// a usage error 143, which a scheduler retries.
		decide(ctx, err)
	}
	// The document first, as a publish prints it once decided, so a second
	// signal during the push keeps it; the error record last.
	env.outcome.print(ctx, env, pre, err)
	reportRefused(ctx, env, pre, started, err)
	if err != nil {
		// The record carries the code the process will exit with: a
		// signal's 128+signo, which main applies after this returns.
		env.Console.fail(err, signals.ExitCode(ctx, code, io.Discard))
	}
	return code
}

// Run runs one command. Help (--help, -h, help CMD) and --version print on
// stdout and return nil.
func Run(ctx context.Context, env Env, args []string) error {
	env = env.withDefaults()
	root := newRoot(&env)
	a, only := commandArg(args)
	if a == "" && only {
		// In json mode every stderr line is a record: the usage text
		// would break a log shipper's parse, so only the record says it.
		if env.Console.Text() {
			root.SetOut(env.Stderr)
			_ = root.Usage()
		}
		return exitcode.UsageError(errors.New("no command given (engagement --help lists them)"))
	}
	if a == "--" {
		return exitcode.UsageError(errors.New(`"--" before the command: name the command first (engagement publish ...)`))
	}
	if len(args) >= 2 && (args[0] == "--help" || args[0] == "-h") {
		// engagement --help publish printed the root's help, as if the
		// command had not been named: it is help publish, whatever follows.
		if c, _, err := root.Find(args[1:2]); err == nil && c != root {
			args = []string{"help", args[1]}
		}
	}
	// Cobra would print the root's help for an unknown command; name it
	// and the nearest command instead.
	if a != "" && !strings.HasPrefix(a, cobra.ShellCompRequestCmd) {
		if c, _, err := root.Find([]string{a}); err != nil || c == root {
			return unknownCommand(root, a)
		}
	}
	var ran bool
	for _, c := range root.Commands() {
		if run := c.RunE; run != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				ran = true
				return run(c, args)
			}
		}
	}
	setOnce(root)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !ran && exitcode.Code(err) == exitcode.Error && ctx.Err() == nil {
		// Whatever cobra refuses before a command runs is the command
		// line's fault.
		err = exitcode.UsageError(err)
	}
	return err
}

const envNote = `
Environment:
  Every flag is also read from ENGAGEMENT_<FLAG> (--job-id: ENGAGEMENT_JOB_ID).
  A flag given on the command line wins, then the environment, then the config file.
`

func newRoot(env *Env) *cobra.Command {
	b := version.Get()
	root := &cobra.Command{
		Use:   "engagement",
		Short: "Publish fact_lesson_engagement and course_day for explicit event dates",
		Long: `engagement publishes fact_lesson_engagement and course_day for explicit event dates.
Every attempt writes a staging prefix named by its job id; only a passing quality
gate moves the one pointer object readers follow.

Exit codes: 0 published, 1 error (pointer unchanged, a retry with a new job id is
safe), 2 usage, 3 gate rejected, 4 job id already published, 5 date not published
(status or read --date), 6 a rollback and a publish of one date raced and the other
came first (nothing written; not to be retried blindly), 130 / 143 / 129
interrupted by SIGINT / SIGTERM / SIGHUP.`,
		Example: `  engagement publish --config config/fixture.conf --job-id fixture-1 --dates 2026-03-02,2026-03-03
  engagement status --warehouse warehouse`,
		Version:       b.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		// The environment fills the flags the command line left unset,
		// after parsing and before the command runs.
		// Then the log takes its format and the run's attributes.
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			err := applyEnv(c.Flags(), env.Lookup)
			if lerr := setupLog(c, env.Console); err == nil {
				err = lerr
			}
			warnStrayEnv(c.Root(), env.Environ(), env.Log)
			return err
		},
	}
	addLogFlag(root.PersistentFlags())
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetVersionTemplate(versionText(b))
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		if c.Runnable() && c.HasAvailableLocalFlags() {
			fmt.Fprint(c.OutOrStdout(), envNote)
		}
	})
	for _, newCmd := range commands {
		root.AddCommand(newCmd(env))
	}
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd() // now, so that Run's check of the command finds it
	return root
}

func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the synopsis, flags and examples of a command on stdout.",
		Example: `  engagement help publish
  engagement help gc`,
		ValidArgsFunction: func(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, s := range c.Root().Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			if len(args) == 0 {
				return root.Help()
			}
			t, _, err := root.Find(args)
			if err != nil || t == root {
				return unknownCommand(root, args[0])
			}
			return t.Help()
		},
	}
}

// unknownCommand is a usage error naming the nearest command, if any.
func unknownCommand(root *cobra.Command, name string) error {
	if s := root.SuggestionsFor(name); len(s) > 0 {
		return exitcode.UsageError(fmt.Errorf("unknown command %q; did you mean %q?", name, s[0]))
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return exitcode.UsageError(fmt.Errorf("unknown command %q (want one of %s)", name, strings.Join(names, ", ")))
}

// commandArg finds the command in args past the root's own flag
// (--log-format and its value): the command's name, or "" with only true
// when args hold nothing else (no command given). Any other flag before a
// command (--help, --version, a mistake) is cobra's to answer.
func commandArg(args []string) (name string, only bool) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--log-format":
			i++
		case strings.HasPrefix(a, "--log-format="):
		case a == "--":
			// Cobra stops looking for a command at it, and the root
			// printed its help with exit 0: a scheduler read "published".
			return a, false
		case strings.HasPrefix(a, "-"):
			return "", false
		default:
			return a, false
		}
	}
	return "", true
}

// noArgs refuses positional arguments, naming the first.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exitcode.UsageError(fmt.Errorf("%s: unexpected argument %q", c.Name(), args[0]))
	}
	return nil
}

// oneLine keeps an error to one line for the terminal; the JSON log has the rest.
func oneLine(err error) string {
	line := squeeze(err.Error())
	// Whatever an engine or a store quotes from the input stays text: no
	// ESC sequence or bidi override reaches the operator's terminal.
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '?'
		}
		return r
	}, line)
}

// squeeze joins s's lines and runs of white space into single spaces,
// except inside a double-quoted value ("s1  " as %q quotes a pin), whose
// spaces are its own: a pin with two trailing spaces showed as one.
func squeeze(s string) string {
	var b strings.Builder
	quoted, escaped, space := false, false, false
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' || (r == ' ' && !quoted) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quoted:
			escaped = true
		case r == '"':
			quoted = !quoted
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readerGone reports a write to the process's stdout that failed because
// its reader closed the pipe; a broken pipe anywhere else (a store's
// connection) is a real failure.
func readerGone(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == os.Stdout.Name() && errors.Is(pe.Err, syscall.EPIPE)
}
