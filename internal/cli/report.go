package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/inputs"
	"github.com/techlearningpro/engagement/internal/report"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/local"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// reportOptions are report's flags.
type reportOptions struct {
	origin
	warehouse, out string
	runs           int
	s3             s3Flags
}

func newReportCmd(env *Env) *cobra.Command {
	o := &reportOptions{}
	c := &cobra.Command{
		Use:   "report --warehouse W --out DIR [--runs N]",
		Short: "Write a static HTML page of the warehouse's history for a person to look at",
		Long: `report writes DIR/index.html, one self-contained page (no script, no network: the
charts are inline SVG) showing, per date, the events and the unknown-lesson rate
against the gate's cap in every retained generation, the current file sizes against
the 128-256 MB band, the gate checks of the last --runs attempts (published and
rejected) and the lineage of each date. It only reads the warehouse; the same
warehouse gives the same page. A warehouse with no pointer.json is refused (exit 2).`,
		Example: `  engagement report --warehouse warehouse --out /tmp/engagement-report
  engagement report --warehouse s3://curated/engagement --out report --runs 20`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runReport(c.Context(), *env, o) },
	}
	fs := c.Flags()
	o.origin = origin{fs}
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse directory or s3://bucket/prefix (required)")
	fs.StringVar(&o.out, "out", "", "local directory to write index.html into, created if absent (required)")
	decimalVar(fs, &o.runs, "runs", report.DefaultRuns, "how many of the last runs the gate table shows")
	o.s3 = addS3Flags(fs, false)
	return c
}

func runReport(ctx context.Context, env Env, o *reportOptions) error {
	if err := o.s3.apply(); err != nil {
		return err
	}
	switch {
	case o.warehouse == "":
		return exitcode.UsageError(fmt.Errorf("report: --warehouse is required"))
	case o.out == "":
		return exitcode.UsageError(fmt.Errorf("report: --out is required"))
	case o.runs < 1:
		return exitcode.UsageError(fmt.Errorf("report: %s %d: want at least 1", o.ref("runs"), o.runs))
	}
	if fi, err := os.Stat(o.out); err == nil && !fi.IsDir() {
		return exitcode.UsageError(fmt.Errorf("report: %s %s: not a directory", o.ref("out"), o.out))
	} else if errors.Is(err, fs.ErrNotExist) {
		if link, to := danglingLink(o.out); link != "" {
			return exitcode.UsageError(fmt.Errorf("report: %s %s: %s is a symbolic link to %s, which does not exist: make that directory or give another", o.ref("out"), o.out, link, to))
		}
	}
	// Every check and the write take the directory the kernel would make:
	// textual cleaning read pl/../rep (pl a link into raw) as ./rep, checked
	// it, and the write made raw/rep.
	out, err := resolveOut(o.out)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("report: %s %s: %w", o.ref("out"), o.out, err))
	}
	if err := outsideWarehouse(out, o.warehouse); err != nil {
		return exitcode.UsageError(fmt.Errorf("report: %s %s: %w", o.ref("out"), o.out, err))
	}
	b, store, err := warehouseStore(ctx, env, o.ref("warehouse"), o.warehouse, 0)
	if err != nil {
		return err
	}
	if _, err := loadPublished(ctx, "report", o.ref("warehouse"), o.warehouse, store); err != nil {
		return err
	}
	// After the warehouse, the command's main argument, is judged.
	// As given: a URL is refused, not resolved into a local path.
	if err := localDir(o.ref("out"), o.out); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := ownDir(out); err != nil {
		return exitcode.UsageError(fmt.Errorf("report: %s %s: %w", o.ref("out"), o.out, err))
	}
	m, err := report.Build(ctx, store, b, o.runs)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	if err := report.Render(&page, m); err != nil {
		return err
	}
	// The local store writes whole or not at all (temp, fsync, rename), so
	// a browser never loads half a page.
	if _, err := local.New(out, local.Options{}).Put(ctx, "index.html", page.Bytes(), storage.Cond{}); err != nil {
		return fmt.Errorf("write %s: %w", o.ref("out"), err)
	}
	path := filepath.Join(out, "index.html")
	fmt.Fprintf(env.Stdout, "wrote %s (generation %d, %d dates published, %d runs)\n", path, m.Generation, m.PublishedDates(), len(m.Runs))
	return nil
}

// danglingLink is the symbolic link to nothing at out or above it (dl/sub),
// through which its directory cannot be made, and its target; "" when the
// nearest existing path is no such link.
func danglingLink(out string) (link, to string) {
	for p := filepath.Clean(out); ; p = filepath.Dir(p) {
		if to, err := os.Readlink(p); err == nil {
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				return p, to
			}
			return "", ""
		}
		if _, err := os.Lstat(p); err == nil || filepath.Dir(p) == p {
			return "", ""
		}
	}
}

// dataParent refuses a new output directory that would be made in a
// directory holding data (ingest_date=… partitions, Parquet files, by name
// or by their PAR1 magic, as Hive names them 000000_0): inside raw or a
// manifest, the next publish's listing failed on it. Hidden names (_, .)
// are no input's data, as the listing passes them over.
func dataParent(out string) error {
	dir := filepath.Dir(filepath.Clean(out))
	for {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(dir) != dir {
			dir = filepath.Dir(dir)
			continue
		}
		if err != nil {
			return nil // made, or refused, by the write that follows
		}
		for _, e := range entries {
			name := e.Name()
			if inputs.Hidden(name) {
				continue
			}
			if strings.HasPrefix(name, "ingest_date=") || strings.HasSuffix(name, ".parquet") || e.Type().IsRegular() && string(fileHead(filepath.Join(dir, name), len(inputs.ParquetMagic))) == inputs.ParquetMagic {
				return fmt.Errorf("it would be made in %s, which holds data (%s): an input's next listing would fail on it; choose a directory of its own", dir, name)
			}
		}
		return nil
	}
}

// fileHead is the first n bytes of the file at p, fewer for a shorter
// one, none for one that cannot be read.
func fileHead(p string, n int) []byte {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, n)
	got, _ := io.ReadFull(f, head)
	return head[:got]
}

// ownDir refuses an output directory that holds anything but an earlier
// report: --out aimed at an input (raw's directory) put an index.html
// there, exit 0, and the next publish failed on the stray file; a user's
// own index.html was replaced without a word.
func ownDir(out string) error {
	// Whether it exists or not: an empty ingest_date=… directory in raw
	// took the page with exit 0, and the next publish failed on it (and
	// its date moved the restatement horizon).
	for p := out; ; p = filepath.Dir(p) {
		if strings.HasPrefix(filepath.Base(p), "ingest_date=") {
			return fmt.Errorf("%s is a raw partition: an input's next listing would fail on the page; choose a directory of its own", p)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	entries, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) {
		// An existing directory is judged by what it holds, below: a
		// report's own beside an export file was written for months.
		return dataParent(out)
	}
	if err != nil {
		return err
	}
	var other []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, ".tmp-"): // a write a crash left
		case name == "index.html" && e.Type().IsRegular() && isReport(filepath.Join(out, name)):
		default:
			other = append(other, name)
		}
	}
	if len(other) == 0 {
		return nil
	}
	if len(other) > 3 {
		other = append(other[:3], "…")
	}
	return fmt.Errorf("holds %s, which no report wrote: give an empty directory, or the one an earlier report was written to", strings.Join(other, ", "))
}

// isReport reports whether the page at p is one report wrote: its head
// names the generator (pages of earlier builds, their title).
func isReport(p string) bool {
	h := string(fileHead(p, 1024))
	return strings.Contains(h, `<meta name="generator" content="engagement report">`) || strings.Contains(h, "<title>engagement report: ")
}

// outsideWarehouse refuses an output directory inside a local warehouse:
// the report only reads the warehouse, and a page inside it would be a
// file no generation names.
func outsideWarehouse(out, wh string) error {
	loc, err := storage.Parse(wh)
	if err != nil {
		return nil // warehouseStore reports a bad location
	}
	inside, err := warehouse.Holds(loc, out)
	if err != nil {
		return fmt.Errorf("cannot tell whether it lies inside the warehouse %s: %w", wh, err)
	}
	if inside {
		return fmt.Errorf("lies inside the warehouse %s, which report only reads; write the page elsewhere", wh)
	}
	return nil
}

// resolveOut is out as the kernel resolves it: symbolic links followed
// before each "..", as opening the path does, for its longest existing
// prefix, with the rest joined on. Absolute. A ".." after a part that does
// not exist is refused, as the kernel refuses it: joined on as text, it
// cancelled the missing part, and missing/../link wrote through the link.
func resolveOut(out string) (string, error) {
	abs := out
	if !filepath.IsAbs(abs) {
		if wd, err := os.Getwd(); err == nil {
			abs = wd + string(filepath.Separator) + out
		}
	}
	var rest []string
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if slices.Contains(rest, "..") {
				return "", fmt.Errorf("'..' after %s, which does not exist", filepath.Join(r, rest[0]))
			}
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		i := strings.LastIndex(p, string(filepath.Separator))
		if i <= 0 {
			return filepath.Clean(abs), nil
		}
		rest = append([]string{p[i+1:]}, rest...)
		p = p[:i]
	}
}
