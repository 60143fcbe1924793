package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job"
)

// printRejection puts a gate rejection's failed checks, with their figures
// and the top unknown lessons, on stdout, where a person running the
// command looks; the one-line reason stays on stderr. The exit code is the
// rejection's (3), so a closed stdout only costs the table, which the log says.
func printRejection(env Env, res job.Result, err error) {
	if !errors.Is(err, exitcode.ErrGateRejected) || res.Rejection == nil {
		return
	}
	if werr := res.Rejection.WriteTable(env.Stdout); werr != nil {
		env.Log.Warn("rejected, but the table of failed checks could not be printed to stdout", "error", werr.Error())
		return
	}
	// Other dates than the rejected run's: as its summary would say them.
	_, _ = io.WriteString(env.Stdout, unsettledLine(res))
}

// unsettledLine is the text output's line for res.Unsettled, "" without.
func unsettledLine(res job.Result) string {
	if len(res.Unsettled) == 0 {
		return ""
	}
	return fmt.Sprintf("  unsettled_dates=%s: they left the restatement horizon before a publish read every partition of their lateness window, or one it read changed since (the log names which); restate each with --allow-outside-horizon\n",
		strings.Join(dates.Strings(res.Unsettled), ","))
}
