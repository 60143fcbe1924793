package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/inputs"
)

// inspect judges the listed files before any join: their magic bytes and
// the prohibited fields of the raw footers (read in Go, the same for every
// engine), their pages' and row groups' counts, and their page checksums
// for an engine that does not verify them, then the engine's schema, pin
// and event identity figures.
func (p *Publisher) inspect(ctx context.Context, spec engine.Spec) (engine.Inputs, error) {
	p.step(fmt.Sprintf("file heads: %d files", spec.Inputs.Files()))
	if err := p.Inputs.CheckMagic(ctx, spec.Inputs); err != nil {
		return engine.Inputs{}, err
	}
	p.step(fmt.Sprintf("raw footers: %d files", len(spec.Inputs.Raw)))
	found, firstIn, zoneless, err := p.Inputs.ProhibitedFields(ctx, spec.Inputs.Raw, spec.ProhibitedColumns)
	if err != nil {
		return engine.Inputs{}, err
	}
	if len(zoneless) > 0 {
		// Common and usually UTC (pandas' naive datetimes, Spark's
		// TIMESTAMP_NTZ): a warning, since only the producer knows.
		p.Log.Warn("raw event_time is a timestamp without time zone (isAdjustedToUTC false) in some files: read as UTC; if their producer wrote local wall-clock times, events land on the wrong dates",
			"files", len(zoneless), "first", zoneless[0])
	}
	// The counts for every engine (Spark too reads a row group short when
	// a count is damaged), the CRCs for one that does not verify them.
	v, ok := p.Engine.(engine.ChecksumVerifier)
	var unreadable map[string]string
	if l, ok := p.Engine.(engine.ParquetLimited); ok {
		unreadable = l.UnreadableParquet()
	}
	p.step(fmt.Sprintf("column pages: %d files", spec.Inputs.Files()))
	spec.SchemaKeys, err = checkPageChecksums(ctx, p.Inputs, spec.Inputs, !ok || !v.VerifiesPageChecksums(), unreadable)
	if err != nil {
		return engine.Inputs{}, err
	}
	// The engine reports its own statements; one that does not shows this.
	p.step(p.Engine.Name() + " inspect")
	in, err := p.Engine.Inspect(ctx, spec)
	if err != nil {
		return in, emptyFileTypes(ctx, p.Inputs, spec.Inputs, err)
	}
	in.Figures.ProhibitedFound, in.Figures.ProhibitedFirstIn, in.Figures.Prohibited = found, firstIn, spec.ProhibitedColumns
	return in, nil
}

// emptyFileTypes says, beside a column type the engine refused, that the
// file holds no rows when its footer says so: pandas types an empty frame's
// columns by guess (null, which DuckDB reads as INTEGER, or double), and
// the type named is then no sign of a producer writing the wrong column.
func emptyFileTypes(ctx context.Context, src *inputs.Source, l inputs.Listing, err error) error {
	var te *engine.ColumnTypeError
	if !errors.As(err, &te) {
		return err
	}
	f, ok := l.Find(te.File)
	if !ok {
		return err
	}
	if n, rerr := src.FileRows(ctx, te.What, f); rerr != nil || n != 0 {
		return err
	}
	return fmt.Errorf("%w (the file holds no rows: a writer such as pandas types an empty frame's columns by guess; "+
		"write it with the types docs/contract.md gives the %s input, as pyarrow's schema= argument does)", err, te.What)
}

// checkPageChecksums checks the counts of the columns the job reads from
// each input and, with crc, their stored page checksums, and returns the
// schema keys of the files whose footers it parsed whole.
func checkPageChecksums(ctx context.Context, src *inputs.Source, l inputs.Listing, crc bool, unreadable map[string]string) (map[string]string, error) {
	names := func(cols []engine.Column) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = c.Name
		}
		return out
	}
	raw, manifest, enrollments := engine.InputColumns(nil, nil)
	keys := map[string]string{}
	rawFiles := make([]inputs.File, len(l.Raw))
	for i, f := range l.Raw {
		rawFiles[i] = f.File
	}
	for _, in := range []struct {
		what  string
		files []inputs.File
		cols  []engine.Column
	}{{"raw", rawFiles, raw}, {"lessons", l.Lessons, manifest}, {"enrollments", l.Enrollments, enrollments}} {
		got, err := src.CheckPageChecksums(ctx, in.what, in.files, names(in.cols), crc, unreadable)
		if err != nil {
			return nil, err
		}
		for i, k := range got {
			if k != "" {
				keys[in.files[i].Path] = k
			}
		}
	}
	return keys, nil
}
