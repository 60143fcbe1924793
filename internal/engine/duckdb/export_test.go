package duckdb

import (
	"context"
	"fmt"
)

// WeakenKeyHash makes e's uniqueness hash take n values, so distinct keys
// collide and the exact pass must decide.
func WeakenKeyHash(e *Engine, n int) {
	e.keyHash = func(cols string) string { return fmt.Sprintf("hash(%s) %% %d", cols, n) }
}

// AlwaysBatch makes e write as if its temp table had spilled: a batch of
// dates per partitioned COPY.
func AlwaysBatch(e *Engine) { e.alwaysBatch = true }

// EnumTitlesFrom makes e write the titles of a date with at least rows fact
// rows as an ENUM.
func EnumTitlesFrom(e *Engine, rows int64) { e.titleEnumMinRows = rows }

// CountRepeatsBy makes e's uniqueness checks take one way: "kept" or "hash".
func CountRepeatsBy(e *Engine, way string) { e.uniqueBy = uniqueBy(way) }

// KeptFit is keptFit, for the choice's own test.
func KeptFit(e *Engine, files []string) (bool, error) {
	return e.keptFit(context.Background(), files)
}

// Set sets a DuckDB setting on e's connection, past the config's checks.
func Set(e *Engine, key, value string) error {
	_, err := e.conn.ExecContext(context.Background(), "SET "+key+" = '"+value+"'")
	return err
}

// Setting is the current value of a DuckDB setting on e's connection.
func Setting(e *Engine, key string) (string, error) {
	var v string
	err := e.conn.QueryRowContext(context.Background(), "SELECT current_setting('"+key+"')::VARCHAR").Scan(&v)
	return v, err
}
