package gen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// appendDims fills the lessons and enrollments tables: both pins of each.
func (g *generator) appendDims(dc driver.Conn) error {
	lessons, err := duckdb.NewAppender(dc, "", "", "lessons")
	if err != nil {
		return fmt.Errorf("open lessons appender: %w", err)
	}
	if err := g.appendLessons(lessons); err != nil {
		_ = lessons.Close()
		return err
	}
	if err := lessons.Close(); err != nil {
		return fmt.Errorf("flush lessons: %w", err)
	}
	enr, err := duckdb.NewAppender(dc, "", "", "enrollments")
	if err != nil {
		return fmt.Errorf("open enrollments appender: %w", err)
	}
	if err := g.appendEnrollments(enr); err != nil {
		_ = enr.Close()
		return err
	}
	if err := enr.Close(); err != nil {
		return fmt.Errorf("flush enrollments: %w", err)
	}
	return nil
}

func (g *generator) appendLessons(app *duckdb.Appender) error {
	add := func(manifest, id, course, title string) error {
		if err := app.AppendRow(manifest, id, course, title); err != nil {
			return fmt.Errorf("append lesson %s/%s: %w", manifest, id, err)
		}
		return nil
	}
	for _, l := range g.lessons {
		if err := add(ManifestID, l.id, g.courses[l.course].id, l.title); err != nil {
			return err
		}
	}
	if g.opts.Variant == VariantDuplicateLesson {
		hot := g.byCrs[0]
		l := g.lessons[hot[g.defRng.IntN(len(hot))]]
		if err := add(ManifestID, l.id, g.courses[l.course].id, l.title+" (duplicate)"); err != nil {
			return err
		}
		g.defects = map[string]int{"duplicate_lesson_ids": 1}
	}
	// The previous pin: the newest hot lesson did not exist yet, the first
	// SQL lesson still belonged to the Go course, lesson-missing was live.
	hot := g.byCrs[0]
	newest := hot[len(hot)-1]
	moved := g.byCrs[1][0]
	for i, l := range g.lessons {
		if int32(i) == newest {
			continue
		}
		course := g.courses[l.course].id
		if int32(i) == moved {
			course = g.courses[2].id
		}
		if err := add(PreviousManifestID, l.id, course, l.title+" (v1)"); err != nil {
			return err
		}
	}
	return add(PreviousManifestID, UnknownLessonID, g.courses[1].id, "Retired lesson")
}

func (g *generator) appendEnrollments(app *duckdb.Appender) error {
	nc := len(g.courses)
	var restatablePinned []int
	for l := range g.keys {
		for c := range nc {
			idx := l*nc + c
			pinned := g.enrolled(int32(l), c)
			if !g.pairAny.has(idx) {
				pinned = mix(g.opts.Seed, uint64(l), uint64(c), saltStray)%100 < strayEnrollPct
			}
			if pinned {
				if err := app.AppendRow(g.keys[l], g.courses[c].id, EnrollmentSnapshotID); err != nil {
					return fmt.Errorf("append enrollment: %w", err)
				}
				g.pinnedRows++
				if g.pairRestatable.has(idx) {
					restatablePinned = append(restatablePinned, idx)
				}
			}
			if mix(g.opts.Seed, uint64(l), uint64(c), saltPrevious)%100 < previousPct {
				if err := app.AppendRow(g.keys[l], g.courses[c].id, PreviousEnrollmentSnapshotID); err != nil {
					return fmt.Errorf("append enrollment: %w", err)
				}
			}
		}
	}
	if g.opts.Variant == VariantDuplicateEnrollment {
		// Duplicate a pair that has events on a restatable date so a job
		// that drops the uniqueness check double-counts real events.
		idx := restatablePinned[g.defRng.IntN(len(restatablePinned))]
		if err := app.AppendRow(g.keys[idx/nc], g.courses[idx%nc].id, EnrollmentSnapshotID); err != nil {
			return fmt.Errorf("append enrollment: %w", err)
		}
		g.pinnedRows++
		g.defects = map[string]int{"duplicate_enrollment_pairs": 1}
	}
	return nil
}

func (g *generator) copyDims(ctx context.Context, conn *sql.Conn) error {
	for _, t := range []struct{ table, order string }{
		{"lessons", "manifest_id, lesson_id, course_id, lesson_title"},
		{"enrollments", "snapshot_id, learner_key, course_id"},
	} {
		dir := filepath.Join(g.opts.Out, t.table)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s directory: %w", t.table, err)
		}
		path := filepath.Join(dir, "part-0.parquet")
		q := fmt.Sprintf(`COPY (SELECT * FROM %s ORDER BY %s) TO %s %s`, t.table, t.order, sqlString(path), parquetOpts)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// enrolled decides pinned-snapshot membership of a pair that has events. It
// is a pure function of the seed and the pair so the tally can use it before
// the snapshot is written.
func (g *generator) enrolled(learner int32, course int) bool {
	return mix(g.opts.Seed, uint64(learner), uint64(course), saltPinned)%100 < enrolledPct
}
