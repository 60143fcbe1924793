// Package cli implements the engagement commands. Each command is an options
// struct filled from flags and a run function; Main only maps the returned
// error to an exit code, so every command is testable in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/techlearningpro/engagement/internal/exitcode"
)

const usage = `engagement publishes fact_lesson_engagement and course_day for explicit event dates.

Commands:
  engagement publish  --config FILE --job-id ID --dates D1,D2 [inputs and overrides]
  engagement explain  --config FILE --dates D1,D2 [inputs and overrides]
  engagement status   --warehouse W [--format table|json]
  engagement read     TABLE --warehouse W [--date D] [--format table|csv|json]
  engagement gen      --out DIR [--events N] [--seed S] [--variant V]
  engagement gc       --warehouse W [--dry-run] [--min-age 24h]   delete unreferenced staging only

Exit codes: 0 published, 1 error (pointer unchanged, retry with a new job id is safe),
2 usage, 3 gate rejected, 4 job id already published.
Run "engagement COMMAND -h" for the flags of one command.
`

// Env is what a command may touch of the outside world.
type Env struct {
	Stdout, Stderr io.Writer
	Log            *slog.Logger
}

// Main runs args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env := Env{Stdout: stdout, Stderr: stderr, Log: slog.New(slog.NewJSONHandler(stderr, nil))}
	err := Run(ctx, env, args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "engagement: %s\n", oneLine(err))
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitcode.OK
	}
	return exitcode.Code(err)
}

// Run dispatches to one command.
func Run(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return exitcode.UsageError(errors.New("no command given"))
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "publish":
		return runPublish(ctx, env, rest)
	case "explain":
		return runExplain(ctx, env, rest)
	case "status":
		return runStatus(ctx, env, rest)
	case "read":
		return runRead(ctx, env, rest)
	case "gen":
		return runGen(ctx, env, rest)
	case "gc":
		return runGC(ctx, env, rest)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	}
	return exitcode.UsageError(fmt.Errorf("unknown command %q (want publish, explain, status, read, gen or gc)", cmd))
}

// newFlags makes a flag set whose parse errors are usage errors.
func newFlags(env Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitcode.UsageError(err)
	}
	if fs.NArg() > 0 {
		return exitcode.UsageError(fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0)))
	}
	return nil
}

// oneLine keeps an error to one line for the terminal; the JSON log has the rest.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}
