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

// TestTitleEnumFits: the pin's titles become an ENUM only while their
// dictionary is small beside the row groups it serves.
func TestTitleEnumFits(t *testing.T) {
	for _, c := range []struct {
		name    string
		n, size int64
		want    bool
	}{
		{"the design pin: 40,000 titles of about 30 bytes", 40000, 1_200_000, true},
		{"no titles", 0, 0, false},
		{"half a row group of titles", maxTitleEnumValues, maxTitleEnumValues * 16, true},
		{"one title more", maxTitleEnumValues + 1, (maxTitleEnumValues + 1) * 16, false},
		{"few but long titles", 200, 200 * (64 << 10), false},
		{"a dictionary page just at the bound", 1000, maxTitleEnumBytes - 4*1000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := titleEnumFits(c.n, c.size); got != c.want {
				t.Errorf("titleEnumFits(%d, %d) = %v, want %v", c.n, c.size, got, c.want)
			}
		})
	}
}
