package duckdb

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
)

// TestEnumTitles: a batch writes its titles as an ENUM only when the type
// was made and every date of it fills a row group.
func TestEnumTitles(t *testing.T) {
	big, small := dates.MustParse("2026-03-01"), dates.MustParse("2026-03-02")
	figs := map[dates.Date]engine.DateFigures{big: {FactRows: titleEnumMinRows}, small: {FactRows: titleEnumMinRows - 1}}
	for _, c := range []struct {
		name      string
		made      bool
		minRows   int64
		ds        []dates.Date
		wantEnums bool
	}{
		{"a date that fills a row group", true, 0, []dates.Date{big}, true},
		{"a smaller date", true, 0, []dates.Date{small}, false},
		{"a batch with one smaller date", true, 0, []dates.Date{big, small}, false},
		{"no type made (titles too large)", false, 0, []dates.Date{big}, false},
		{"the tests' threshold", true, 1, []dates.Date{big, small}, true},
		{"no dates", true, 0, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{e: &Engine{titleEnumMinRows: c.minRows}, figs: figs, titleEnum: c.made}
			if got := r.enumTitles(c.ds); got != c.wantEnums {
				t.Errorf("enumTitles(%v) = %v, want %v", c.ds, got, c.wantEnums)
			}
		})
	}
}
