package job

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/config"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine"
	"github.com/techlearningpro/engagement/internal/gate"
	"github.com/techlearningpro/engagement/internal/monitor"
	"github.com/techlearningpro/engagement/internal/pointer"
)

// TestFileLayoutJudgesSizes: the layout signal pages on more files than
// planned or a file above 1 GB, and warns on a file above 4/3 of the target
// (hashed keys compress less than the plan assumes: fewer, larger files,
// which the count alone passed as ok).
func TestFileLayoutJudgesSizes(t *testing.T) {
	d := dates.MustParse("2026-03-02")
	const target = 192 << 20
	for _, tc := range []struct {
		name  string
		sizes []int64
		want  string
	}{
		{"inside the band", []int64{190 << 20, 180 << 20}, monitor.OK},
		{"at 4/3 of the target", []int64{256 << 20}, monitor.OK},
		{"above 4/3 of the target", []int64{263 << 20, 263 << 20}, monitor.Warn},
		{"more files than planned", []int64{1 << 20, 1 << 20, 1 << 20}, monitor.Page},
		{"above 1 GB", []int64{1<<30 + 1}, monitor.Page},
	} {
		var files []pointer.File
		for _, b := range tc.sizes {
			files = append(files, pointer.File{Bytes: b})
		}
		m := &monitors{job: config.Job{Dates: []dates.Date{d}, TargetFileBytes: target, UnknownCap: 0.02}}
		m.staged(engine.Staged{FactFiles: map[dates.Date][]pointer.File{d: files}}, map[dates.Date]gate.StagedFigures{d: {}})
		var got string
		for _, s := range m.signals {
			if s.Name == monitor.FileLayout {
				got = s.Status
			}
		}
		if got != tc.want {
			t.Errorf("%s: file_layout %q, want %q", tc.name, got, tc.want)
		}
	}
}
