package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
)

// TestConfigWarehouseValue: a config file's warehouse that is a mistyped
// URL, or holds an inline comment, is refused (exit 2 naming the key)
// with nothing created beside the file. Both published, exit 0, into a
// local directory of that name, where no reader looks.
func TestConfigWarehouseValue(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	fixture, err := os.ReadFile(filepath.Join(publishtest.Root(), "config", "fixture.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, value, says string }{
		{"s3 with one slash", "s3:/curated/engagement", "mistyped (want s3://bucket/prefix)"},
		{"s3 without slashes", "s3:curated/engagement", "mistyped (want s3://bucket/prefix)"},
		{"inline comment", "wh   # the curated zone readers use", "inline comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var conf []string
			for _, l := range strings.Split(string(fixture), "\n") {
				if !strings.HasPrefix(l, "engagement.warehouse") {
					conf = append(conf, l)
				}
			}
			conf = append(conf, "engagement.warehouse "+tc.value)
			path := filepath.Join(dir, "job.conf")
			if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := fx.Args("unused", "cfg-1", "2026-03-02", "2026-03-03")
			i := slices.Index(args, "--warehouse")
			args = slices.Delete(args, i, i+2)
			args[slices.Index(args, "--config")+1] = path
			var out, errb strings.Builder
			code := cli.Main(context.Background(), args, &out, &errb)
			if code != exitcode.Usage || !strings.Contains(errb.String(), "engagement.warehouse") || !strings.Contains(errb.String(), tc.says) {
				t.Errorf("exit %d, want 2 naming engagement.warehouse and %q\n%s", code, tc.says, errb.String())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("beside the config: %v, want only job.conf", names)
			}
		})
	}
}
