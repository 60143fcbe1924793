package inputs

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
)

// timestampUnit reads a LogicalType union and returns a TIMESTAMP's
// (field 8) ticks per second from its unit (field 2: MILLIS 1, MICROS 2,
// NANOS 3); 0 for any other logical type.
func (r *thrift) timestampUnit() (int64, error) {
	var unit int64
	err := r.structFields(3, func(id int16, typ byte) (bool, error) {
		if id != 8 || typ != ctStruct {
			return false, nil
		}
		return true, r.structFields(4, func(id int16, typ byte) (bool, error) {
			if id != 2 || typ != ctStruct {
				return false, nil
			}
			return true, r.structFields(5, func(id int16, typ byte) (bool, error) {
				unit = map[int16]int64{1: 1e3, 2: 1e6, 3: 1e9}[id]
				return false, nil
			})
		})
	})
	return unit, err
}

// PartitionHolds reports, from the footers of the listed raw files of
// ingest date d, whether they hold a row (rows) and whether they may hold
// an event of date d (ofDate): a row group of event_time whose statistics
// put every value outside d's UTC day, with no null, holds none; a file
// whose event_time is not an INT64 timestamp, or a row group without
// statistics or with a null time, may. It stops at the first file that
// may.
func (s *Source) PartitionHolds(ctx context.Context, raw []RawFile, d dates.Date) (rows, ofDate bool, err error) {
	for _, f := range raw {
		if f.IngestDate != d {
			continue
		}
		name := "raw file " + f.Path
		b, key, err := s.object(ctx, f.Path)
		if err != nil {
			return rows, false, fmt.Errorf("%s: %w", name, err)
		}
		buf, err := footer(ctx, b, key, f.Bytes, name)
		if err != nil {
			return rows, false, err
		}
		n, err := numRows(buf)
		if err != nil {
			return rows, false, badFooter(name, "%v", err)
		}
		if n == 0 {
			continue
		}
		rows = true
		may, err := mayHoldDate(buf, f.Bytes, d)
		if err != nil || may {
			// A footer this reader cannot follow is the engine's to
			// judge: it may hold the date.
			return true, true, nil
		}
	}
	return rows, false, nil
}

// mayHoldDate reads event_time's type and its row groups' statistics.
func mayHoldDate(footer []byte, size int64, d dates.Date) (bool, error) {
	elems, err := schemaElements(footer)
	if err != nil {
		return true, err
	}
	var ts *element
	// Top columns only: element 0 is the root, and a group's children
	// follow it, so count down each group's descendants.
	skip := 0
	for i := 1; i < len(elems); i++ {
		e := elems[i]
		if skip > 0 {
			skip += int(e.children) - 1
			continue
		}
		if strings.EqualFold(e.name, "event_time") && e.children == 0 {
			ts = &elems[i]
		}
		skip = int(e.children)
	}
	if ts == nil || ts.physical != 2 || ts.perSecond == 0 {
		return true, nil
	}
	chunks, err := columnChunks(footer, size)
	if err != nil {
		return true, err
	}
	from := d.Time().Unix() * ts.perSecond
	to := from + 86400*ts.perSecond // exclusive
	found := false
	for _, c := range chunks {
		if !strings.EqualFold(c.column, ts.name) {
			continue
		}
		found = true
		switch {
		case c.values == 0:
			continue
		case !c.hasNulls || c.nulls > 0:
			// An event without a time may be of any date (the gate's
			// raw_event_time_present names it).
			return true, nil
		case len(c.min) != 8 || len(c.max) != 8:
			return true, nil
		}
		lo, hi := int64(binary.LittleEndian.Uint64(c.min)), int64(binary.LittleEndian.Uint64(c.max))
		if lo < to && hi >= from {
			return true, nil
		}
	}
	return !found, nil
}
