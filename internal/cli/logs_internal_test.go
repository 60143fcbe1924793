package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
)

// The lines printed outside the logger (the signal notices main hands the
// console) pass through in text mode and become records of the run, at the
// writer's level and without the "engagement: " prefix, in json mode.
func TestConsoleLines(t *testing.T) {
	notice := "engagement: SIGTERM received: cancelling; a second signal exits at once\n"
	for _, tc := range []struct {
		format, want string
	}{
		{logText, notice},
		{logJSON, `{"level":"WARN","msg":"SIGTERM received: cancelling; a second signal exits at once","job_id":"j-1","command":"publish","version":"v9"}` + "\n"},
	} {
		var b bytes.Buffer
		c := &Console{w: &b}
		c.set(tc.format, []any{"job_id", "j-1", "command", "publish", "version", "v9"})
		w := c.Lines(slog.LevelWarn)
		// Written in two pieces: a record is made only of a whole line.
		if _, err := w.Write([]byte(notice[:20])); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(notice[20:])); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		if tc.format == logJSON {
			// Drop the time, which is the wall clock's.
			if i, j := bytes.Index(b.Bytes(), []byte(`"time":`)), bytes.Index(b.Bytes(), []byte(`"level"`)); i == 1 && j > i {
				got = "{" + got[j:]
			}
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.format, got, tc.want)
		}
	}
}

// TestOneLineKeepsTerminalSafe: the final error line may quote input bytes
// (an id in a gate's line, a DuckDB message): white space folds to one
// line, and control and format characters (ESC, a bidi override) are not
// passed to the terminal.
func TestOneLineKeepsTerminalSafe(t *testing.T) {
	got := oneLine(errors.New("rejected:\n  esc\x1b[31mred rtl\u202etxt\ttab"))
	if want := "rejected: esc?[31mred rtl?txt tab"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}

// TestOneLineKeepsQuotedSpaces: white space folds outside quotes only; a
// quoted value keeps its own (a pin "s1  " read as "s1 " on the line).
func TestOneLineKeepsQuotedSpaces(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"no rows of --enrollment-snapshot-id \"s1\"\n  (present: \"s1  \")", `no rows of --enrollment-snapshot-id "s1" (present: "s1  ")`},
		{"a \"quote \\\"  inside\"  then  out", `a "quote \"  inside" then out`},
		{"  lead\n\ntrail  ", "lead trail"},
	} {
		if got := oneLine(errors.New(tc.in)); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
