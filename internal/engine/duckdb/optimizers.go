package duckdb

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// asWritten runs f, a statement of the staging query, with two of
// DuckDB's optimizers off (withOptimizersOff).
//
// The swap of a hash join's build and probe sides: each join builds its
// right child as factQuery writes it, the enrollment join from the
// snapshot. The day ranges' filter, which DuckDB cannot push into the scan
// (utcDayRanges), makes it guess the events at a fifth and swap; built
// from the events, the join would push their key range into the
// enrollment scan, which then skips row groups by footer statistics that
// no CRC covers, and a lying footer would drop enrollments silently.
//
// Statistics propagation: it reads the raw files' footer statistics of
// event_time and folds the day ranges against them; a lone file whose
// footer lied folded its date's range to false, in this statement and in
// the input count alike (rawStats), and the date was published with 0
// events, exit 0.
func (e *Engine) asWritten(ctx context.Context, f func() error) error {
	return e.withOptimizersOff(ctx, []string{"build_side_probe_side", rawStats}, f)
}

// rawStats is the optimizer every statement reading raw runs without.
const rawStats = "statistics_propagation"

// pinSafe are the optimizers off in every statement after the build that
// reads a pin's Parquet (the manifest, the enrollment snapshot): the
// inspect's pin figures, the title ENUM, the fact writes' title join. With
// them on, footer statistics no CRC covers decided what was read, as for
// raw (asWritten): a null_count that lied folded lesson_title IS NOT NULL
// to false, and the 64 KiB title check and the duplicate-pair check saw
// nothing; a lesson_id min/max that lied let a join filter, pushed from a
// small fact_stage built as the join's build side into the manifest scan,
// skip the row group holding a lesson's title, which was published NULL,
// exit 0. Spark reads every row group (filterPushdown off).
var pinSafe = []string{"build_side_probe_side", rawStats, "join_filter_pushdown"}

// withOptimizersOff runs f with the named DuckDB optimizers added to
// disabled_optimizers (a config's own list kept), then restores the list.
func (e *Engine) withOptimizersOff(ctx context.Context, off []string, f func() error) error {
	var was string
	if err := e.conn.QueryRowContext(ctx, "SELECT current_setting('disabled_optimizers')").Scan(&was); err != nil {
		return fmt.Errorf("read duckdb disabled_optimizers: %w", err)
	}
	set := []string{}
	if was != "" {
		set = strings.Split(was, ",")
	}
	for _, o := range off {
		if !slices.Contains(set, o) {
			set = append(set, o)
		}
	}
	if err := e.exec(ctx, "set disabled_optimizers", "SET disabled_optimizers = "+quote(strings.Join(set, ","))); err != nil {
		return err
	}
	err := f()
	if rerr := e.exec(context.WithoutCancel(ctx), "restore disabled_optimizers", "SET disabled_optimizers = "+quote(was)); err == nil {
		err = rerr
	}
	return err
}
