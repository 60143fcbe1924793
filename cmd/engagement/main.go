// Command engagement publishes curated learning-engagement tables. See the
// README for the two commands a newcomer needs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/techlearningpro/engagement/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
