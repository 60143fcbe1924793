package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/duckdb"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/storage/local"
)

// TestUnreadableFileSound: the file-by-file read that names a damaged file
// after a failed read names none of a sound warehouse's, in either table,
// so it never blames a sound file for another error.
func TestUnreadableFileSound(t *testing.T) {
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
	for _, table := range []string{"fact_lesson_engagement", "course_day"} {
		if bad, why := unreadableFile(t.Context(), eng, local.New(wh, local.Options{}), publishtest.LoadPointer(t, wh), nil, table); bad != "" {
			t.Errorf("%s: named %s (%s) of a sound warehouse", table, bad, why)
		}
	}
}
