// Command engagement publishes curated learning-engagement tables. See the
// README for the two commands a newcomer needs.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/signals"
)

func main() {
	// A write to a closed stdout returns an error the command handles
	// (a publish that moved the pointer still exits 0) instead of killing
	// the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	// The signal notices are log lines too, in the run's --log-format.
	con := cli.NewConsole(os.Stderr)
	notices := con.Lines(slog.LevelWarn)
	ctx, stop := signals.Notify(context.Background(), notices)
	code := signals.ExitCode(ctx, cli.MainEnv(ctx, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Console: con}, os.Args[1:]), notices)
	stop()
	os.Exit(code)
}
