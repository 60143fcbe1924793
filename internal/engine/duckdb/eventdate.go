package duckdb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/techlearningpro/engagement/internal/dates"
)

// The SQL that places an event on its date: which UTC date an instant is
// on, which requested dates it belongs to, and which ingest partitions
// count for a date. Stage and Inspect build their queries from these, so
// the figures the gate compares are counted by one definition.

func dateList(ds []dates.Date) string {
	q := make([]string, len(ds))
	for i, d := range ds {
		q[i] = "DATE " + quote(d.String())
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// utcDayRanges is a predicate equal to "the UTC date of the instant is one
// of ds", on us, the instant's epoch microseconds, written as half-open
// ranges, one per run of consecutive dates. Comparing instants is much
// cheaper than deriving each row's date (about 2 s of the design day's 8 s
// event-id check), for a check or a filter that needs no date, only
// membership. The bounds are integers compared with an expression, not
// with the column: DuckDB pushes a range on the bare column into the
// Parquet scan and skips row groups by their footer statistics, which no
// CRC covers; one whose statistics lied lost 200 events from the fact
// table while the input count read them (exit 3 on every rerun).
func utcDayRanges(us string, ds []dates.Date) string {
	if len(ds) == 0 {
		return "false"
	}
	sorted := append([]dates.Date(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	bound := func(d dates.Date) int64 { return int64(d) * 86400_000_000 }
	var ors []string
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] <= sorted[j].AddDays(1) {
			j++
		}
		ors = append(ors, fmt.Sprintf("(%s >= %d AND %s < %d)", us, bound(sorted[i]), us, bound(sorted[j].AddDays(1))))
		i = j + 1
	}
	return "(" + strings.Join(ors, " OR ") + ")"
}

// ownWindow is a predicate equal to "ingest is the UTC date of ts or one
// of the lateness days after it": each requested date counts its events
// from its own partitions only, whatever other dates the request holds
// (the read window of a request reaches max(dates)+lateness, which would
// let a date's figure depend on its neighbours in the list). The bounds
// are epoch microseconds of ingest's days, plain integer arithmetic: a
// cast of the date to TIMESTAMPTZ goes through the session's calendar
// (duckdb.calendar japanese put every bound 2,018 years off, and every
// date published as 0 events).
func ownWindow(ts, ingest string, lateness int) string {
	days := fmt.Sprintf("(%s - DATE '1970-01-01')", ingest)
	return fmt.Sprintf("(epoch_us(%[1]s) >= (%[2]s - %[3]d) * %[4]d AND epoch_us(%[1]s) < (%[2]s + 1) * %[4]d)", ts, days, lateness, int64(86400_000_000))
}

// ingestDateOf is the ingest_date of a row, from its file's name.
func ingestDateOf(file string) string {
	return fmt.Sprintf("CAST(regexp_extract(%s, 'ingest_date=([0-9]{4}-[0-9]{2}-[0-9]{2})/[^/]*$', 1) AS DATE)", file)
}

// eventDateExpr derives event_date from event_time in UTC. The UTC date is
// taken from the instant's epoch microseconds (make_timestamp of them is the
// UTC wall time), which depends on no session zone and costs a tenth of an
// ICU time-zone cast: on the design day the cast alone was about 25 s of CPU.
const eventDateExpr = `CAST(make_timestamp(epoch_us(CAST(event_time AS TIMESTAMPTZ))) AS DATE)`
