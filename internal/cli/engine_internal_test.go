package cli

import (
	"errors"
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/exitcode"
)

// TestOpenErrorExitCodes: a setting the engine refuses is a usage error;
// anything else that stops DuckDB starting (an allocation failure on a busy
// worker) is exit 1, which a scheduler retries.
func TestOpenErrorExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"refused setting", &duckdb.SettingError{Key: "threads", Msg: ` = "x": not a number`}, exitcode.Usage},
		{"out of memory", errors.New("open duckdb: could not connect to database: Out of Memory Error: Allocation failure"), exitcode.Error},
	} {
		if got := exitcode.Code(openError(config.Job{}, tc.err)); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
