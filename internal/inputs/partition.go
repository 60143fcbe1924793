package inputs

import (
	"context"
	"fmt"

	"github.com/techlearningpro/engagement/internal/dates"
)

// PartitionRows reports, from the footers of the listed raw files of
// ingest date d, whether they hold a row: it words why a date's own
// partition holds none of its events (the engines count those exactly).
func (s *Source) PartitionRows(ctx context.Context, raw []RawFile, d dates.Date) (bool, error) {
	for _, f := range raw {
		if f.IngestDate != d {
			continue
		}
		n, err := s.FileRows(ctx, "raw", f.File)
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// FileRows is the row count the footer of the listed file f of one input
// (what: raw, lessons, enrollments) states; errors name the file so.
func (s *Source) FileRows(ctx context.Context, what string, f File) (int64, error) {
	name := what + " file " + f.Path
	b, key, err := s.object(ctx, f.Path)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	buf, err := s.footer(ctx, b, key, f, name)
	if err != nil {
		return 0, err
	}
	return rowsIn(buf, name)
}
