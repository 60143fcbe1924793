package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/progress"
	"github.com/techlearningpro/engagement/internal/version"
)

// Log formats, the values of --log-format.
const (
	logJSON = "json"
	logText = "text"
)

// addLogFlag declares --log-format on the root, for every command.
func addLogFlag(fs *pflag.FlagSet) {
	fs.String("log-format", "", "log records on stderr: json or text (default json, or text when stderr is a terminal)")
}

// Console is the run's stderr: the log records and the few lines printed
// outside the logger (gen's steps, the signal notices, the final error).
// In json mode each such line becomes a record too, so that every stderr
// line is one JSON object. Once the command has parsed its flags every
// record carries job_id (when the command has one), command and version.
type Console struct {
	w io.Writer

	mu     sync.Mutex
	format string
	attrs  []any
}

// Text reports whether the console writes text, not JSON records.
func (c *Console) Text() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.format == logText
}

// NewConsole is stderr as the run's console, in the default format (json
// unless stderr is a terminal) until the command's flags say otherwise.
func NewConsole(stderr io.Writer) *Console {
	c := &Console{w: stderr, format: logJSON}
	if progress.IsTerminal(stderr) {
		c.format = logText
	}
	return c
}

func (c *Console) set(format string, attrs []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if format != "" {
		c.format = format
	}
	c.attrs = attrs
}

func (c *Console) get() (string, []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.format, c.attrs
}

func (c *Console) json() bool { f, _ := c.get(); return f == logJSON }

// Logger logs to the console. It reads the format and the run's attributes
// at each record, so a logger made before the flags were parsed follows them.
func (c *Console) Logger() *slog.Logger { return c.loggerTo(c.w) }

// loggerTo is Logger writing to w instead (a live progress line).
func (c *Console) loggerTo(w io.Writer) *slog.Logger {
	return slog.New(&consoleHandler{c: c, w: w})
}

// Lines is a writer for text printed outside the logger: in text mode it
// passes through; in json mode each line is a record at level, its message
// the line without the "engagement: " prefix.
func (c *Console) Lines(level slog.Level) io.Writer { return &lineWriter{c: c, level: level} }

// fail reports the run's error: "engagement: <error>" in text mode (as
// ever), an ERROR record carrying exit_code in json mode.
func (c *Console) fail(err error, code int) {
	if !c.json() {
		fmt.Fprintf(c.w, "engagement: %s\n", oneLine(err))
		return
	}
	c.Logger().Error(oneLine(err), "exit_code", code)
}

// consoleHandler builds the handler of the console's current format for
// each record; records are few, and a handler built per record still
// writes each one in a single Write.
type consoleHandler struct {
	c   *Console
	w   io.Writer
	ops []func(slog.Handler) slog.Handler // With and WithGroup, in order
}

func (h *consoleHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *consoleHandler) Handle(ctx context.Context, r slog.Record) error {
	// UTC whatever the machine's zone, as every time the tool records.
	r.Time = r.Time.UTC()
	format, attrs := h.c.get()
	var base slog.Handler = slog.NewJSONHandler(h.w, nil)
	if format == logText {
		base = slog.NewTextHandler(h.w, nil)
	}
	base = slog.New(base).With(attrs...).Handler()
	for _, op := range h.ops {
		base = op(base)
	}
	return base.Handle(ctx, r)
}

func (h *consoleHandler) with(op func(slog.Handler) slog.Handler) slog.Handler {
	return &consoleHandler{c: h.c, w: h.w, ops: append(h.ops[:len(h.ops):len(h.ops)], op)}
}

func (h *consoleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(b slog.Handler) slog.Handler { return b.WithAttrs(as) })
}

func (h *consoleHandler) WithGroup(name string) slog.Handler {
	return h.with(func(b slog.Handler) slog.Handler { return b.WithGroup(name) })
}

type lineWriter struct {
	c     *Console
	level slog.Level
	mu    sync.Mutex
	buf   []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	if !l.c.json() {
		return l.c.w.Write(b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := strings.TrimPrefix(string(l.buf[:i]), "engagement: ")
		l.buf = l.buf[i+1:]
		l.c.Logger().Log(context.Background(), l.level, line)
	}
}

// runAttrs are the attributes of every record of the command's run.
func runAttrs(c *cobra.Command) []any {
	var attrs []any
	if f := c.Flags().Lookup("job-id"); f != nil && f.Value.String() != "" {
		attrs = append(attrs, "job_id", f.Value.String())
	}
	return append(attrs, "command", c.Name(), "version", version.String())
}

// setupLog applies --log-format (or its variable) and the run's attributes
// to the console, once the command's flags are parsed.
func setupLog(c *cobra.Command, con *Console) error {
	f := c.Flags().Lookup("log-format")
	format := f.Value.String()
	if format != "" && format != logJSON && format != logText {
		return exitcode.UsageError(fmt.Errorf("%s: %s %q: want json or text", c.Name(), origin{c.Flags()}.ref("log-format"), format))
	}
	con.set(format, runAttrs(c))
	return nil
}

// preParse is what a command line says about logging and output, read
// before cobra parses it, so that a command line cobra refuses is still
// reported in the format it asked for, with its command and job id, and
// to publish's metrics sinks.
type preParse struct {
	command, logFormat, output, jobID string
	metricsFile, pushgateway          string
}

func readPreParse(args []string, lookup func(string) (string, bool)) preParse {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var p preParse
	fs.StringVar(&p.logFormat, "log-format", "", "")
	fs.StringVar(&p.output, "output", "", "")
	fs.StringVar(&p.jobID, "job-id", "", "")
	fs.StringVar(&p.metricsFile, "metrics-file", "", "")
	fs.StringVar(&p.pushgateway, "pushgateway", "", "")
	// pflag stops at an undefined -h, and reads a one-dash long flag
	// (-warehouse) as shorthands, one of them h: the --log-format after it
	// was never read, and the refusal came out as JSON on a terminal.
	fs.BoolP("help", "h", false, "")
	_ = fs.Parse(args)
	p.command = fs.Arg(0)
	for name, v := range map[string]*string{"log-format": &p.logFormat, "output": &p.output, "job-id": &p.jobID,
		"metrics-file": &p.metricsFile, "pushgateway": &p.pushgateway} {
		if *v == "" {
			*v, _ = lookup(EnvName(name))
		}
	}
	return p
}

// preset gives the console what the command line says, until the command
// parses it properly.
func (c *Console) preset(p preParse) {
	format := p.logFormat
	if format != logJSON && format != logText {
		format = ""
	}
	var attrs []any
	if p.jobID != "" {
		attrs = append(attrs, "job_id", p.jobID)
	}
	if p.command != "" {
		attrs = append(attrs, "command", p.command)
	}
	c.set(format, append(attrs, "version", version.String()))
}
