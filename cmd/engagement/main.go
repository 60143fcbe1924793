// Command engagement publishes curated learning-engagement tables. See the
// README for the two commands a newcomer needs.
package main

import (
	"context"
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
	ctx, stop := signals.Notify(context.Background(), os.Stderr)
	code := signals.ExitCode(ctx, cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(code)
}
