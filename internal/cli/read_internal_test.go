package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestUnreadableFile: the file-by-file read that names a damaged file
// after a failed read names none of a sound warehouse's, in either table,
// so it never blames a sound file for another error.
func TestUnreadableFile(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	var errb strings.Builder
	if code := Main(context.Background(), fx.Args(wh, "sound-1", "2026-03-02", "2026-03-03"), io.Discard, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	eng, err := duckdb.Open(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	b, p := local.New(wh, local.Options{}), publishtest.LoadPointer(t, wh)
	for _, table := range []string{"fact_lesson_engagement", "course_day"} {
		if bad, why := unreadableFile(t.Context(), eng, b, p, nil, table); bad != "" {
			t.Errorf("%s: named %s (%s) of a sound warehouse", table, bad, why)
		}
	}
	// A file damaged in place is named; not when the read was cancelled (a
	// signal), which failed every file's read and named a sound one as
	// damaged (review CO).
	file := filepath.Join(wh, filepath.FromSlash(p.Dates[dates.MustParse("2026-03-03")].CourseDayFiles[0].Path))
	publishtest.DamagePages(t, file)
	if bad, _ := unreadableFile(t.Context(), eng, b, p, nil, "course_day"); bad != file {
		t.Errorf("named %q, want the damaged %s", bad, file)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if bad, why := unreadableFile(cancelled, eng, b, p, nil, "course_day"); bad != "" {
		t.Errorf("cancelled: named %s (%s)", bad, why)
	}
}
