// Package dates holds the calendar date used for event and ingest dates.
//
// A Date is a count of days since 1970-01-01 in UTC, so arithmetic on the
// restatement horizon never touches a time zone or the wall clock.
package dates

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Layout is the only accepted text form of a date.
const Layout = "2006-01-02"

// Date is a UTC calendar date, as days since the Unix epoch.
type Date int32

// Parse reads a YYYY-MM-DD date.
func Parse(s string) (Date, error) {
	t, err := time.ParseInLocation(Layout, s, time.UTC)
	if err != nil {
		return 0, fmt.Errorf("invalid date %q: %s", s, noSuchDay(s))
	}
	return FromTime(t), nil
}

// noSuchDay says why a string that failed to parse is no date: a string of
// the right shape names a day the calendar lacks (a scheduler's month
// arithmetic gives 2026-02-29), which "want YYYY-MM-DD" sent one to check
// the format for.
func noSuchDay(s string) string {
	var y, m, d int
	if len(s) != len(Layout) || s[4] != '-' || s[7] != '-' {
		return "want YYYY-MM-DD"
	}
	if _, err := fmt.Sscanf(s, "%4d-%2d-%2d", &y, &m, &d); err != nil || !digits(s[:4]+s[5:7]+s[8:]) {
		return "want YYYY-MM-DD"
	}
	if m < 1 || m > 12 {
		return fmt.Sprintf("no month %d (YYYY-MM-DD)", m)
	}
	days := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	return fmt.Sprintf("no such day: %s %d has %d days", time.Month(m), y, days)
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// MustParse is Parse for constants in tests and fixtures; it panics on error.
func MustParse(s string) Date {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// FromTime returns the UTC date of t.
func FromTime(t time.Time) Date {
	t = t.UTC()
	return Date(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Time returns midnight UTC of d.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String formats d as YYYY-MM-DD.
func (d Date) String() string { return d.Time().Format(Layout) }

// AddDays returns d moved by n days.
func (d Date) AddDays(n int) Date { return d + Date(n) }

// MarshalText implements encoding.TextMarshaler so dates are JSON strings and map keys.
func (d Date) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Date) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseList reads a comma-separated date list as given to --dates (or
// rollback's --date; the caller names the flag in its error). The list
// must be non-empty, every item a valid date, and no date may repeat: a
// repeated date is almost always a typo in a backfill script, and silently
// collapsing it would hide which date the caller meant. The result is sorted.
func ParseList(s string) ([]Date, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty date list")
	}
	seen := map[Date]bool{}
	var out []Date
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, err := Parse(part)
		if err != nil {
			return nil, err
		}
		if seen[d] {
			return nil, fmt.Errorf("date %s is listed twice", d)
		}
		seen[d] = true
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Strings formats a list of dates.
func Strings(ds []Date) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
