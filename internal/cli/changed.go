package cli

import (
	"context"
	"maps"
	"slices"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/pointer"
	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/warehouse"
)

// changedFile is a published file that is not as the pointer recorded it.
type changedFile struct {
	date       dates.Date
	where, why string // the file's location; how it differs
}

// firstChanged checks the files p names for date only (every date when nil)
// and table (both tables when "") and returns the first not as recorded,
// dates in order; ok is false when every one is. status --date, read and
// views say so naming the file, where readers' own errors named none.
func firstChanged(ctx context.Context, b storage.Bucket, p pointer.Pointer, only *dates.Date, table string) (c changedFile, ok bool, err error) {
	for _, d := range slices.Sorted(maps.Keys(p.Dates)) {
		if only != nil && d != *only {
			continue
		}
		e := p.Dates[d]
		files := slices.Concat(e.FactFiles, e.CourseDayFiles)
		switch table {
		case engine.FactTable:
			files = e.FactFiles
		case engine.CourseDayTable:
			files = e.CourseDayFiles
		}
		bad, err := warehouse.CheckFiles(ctx, b, files)
		if err != nil {
			return changedFile{}, false, err
		}
		if len(bad) > 0 {
			return changedFile{date: d, where: b.Location().Join(bad[0].File.Path).String(), why: bad[0].Why()}, true, nil
		}
	}
	return changedFile{}, false, nil
}
