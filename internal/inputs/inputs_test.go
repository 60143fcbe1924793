package inputs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRawPartitions(t *testing.T) {
	root := t.TempDir()
	touch(t, filepath.Join(root, "ingest_date=2026-03-03", "part-1.parquet"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-03", "part-0.parquet"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-03", "_SUCCESS"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-03", ".part-0.parquet.crc"))
	touch(t, filepath.Join(root, "ingest_date=2026-03-01", "part-0.parquet"))
	touch(t, filepath.Join(root, "_SUCCESS"))
	if err := os.MkdirAll(filepath.Join(root, "ingest_date=2026-03-02"), 0o755); err != nil { // landed nothing
		t.Fatal(err)
	}
	parts, err := RawPartitions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].IngestDate.String() != "2026-03-01" || parts[1].IngestDate.String() != "2026-03-03" {
		t.Fatalf("partitions %+v, want 2026-03-01 and 2026-03-03", parts)
	}
	if got := parts[1].Files; len(got) != 2 || !strings.HasSuffix(got[0], "part-0.parquet") || !strings.HasSuffix(got[1], "part-1.parquet") {
		t.Errorf("files %v, want the two part files sorted", got)
	}
}

func TestRawPartitionsRefusesStrangers(t *testing.T) {
	cases := []struct{ entry, want string }{
		{"ingest_date=2026-02-30/part-0.parquet", "ingest_date=2026-02-30"},
		{"event_date=2026-03-01/part-0.parquet", "event_date=2026-03-01"},
		{"stray.parquet", "stray.parquet"},
	}
	for _, tc := range cases {
		t.Run(tc.entry, func(t *testing.T) {
			root := t.TempDir()
			touch(t, filepath.Join(root, filepath.FromSlash(tc.entry)))
			_, err := RawPartitions(root)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, err := RawPartitions(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing root: err %v", err)
	}
}

func TestParquetPath(t *testing.T) {
	dir := t.TempDir()
	if _, err := ParquetPath("lessons", dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("empty dir: err %v, want one naming %s", err, dir)
	}
	touch(t, filepath.Join(dir, "b.parquet"))
	touch(t, filepath.Join(dir, "a.parquet"))
	files, err := ParquetPath("lessons", dir)
	if err != nil || len(files) != 2 || filepath.Base(files[0]) != "a.parquet" {
		t.Errorf("files %v err %v", files, err)
	}
	one := filepath.Join(dir, "a.parquet")
	if files, err := ParquetPath("lessons", one); err != nil || len(files) != 1 || files[0] != one {
		t.Errorf("single file: %v %v", files, err)
	}
}

func TestCheckMagic(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string // want "" accepts
	}{
		{"smallest", "PAR1\x00\x00\x00\x00PAR1", ""},
		{"empty", "", "0 bytes, too small"},
		{"eleven bytes", "PAR1abcPAR1", "11 bytes, too small"},
		{"leading", "PAR0\x00\x00\x00\x00PAR1", `leading magic bytes "PAR0"`},
		{"trailing", "PAR1\x00\x00\x00\x00\x00PAR", `trailing magic bytes "\x00PAR"`},
		{"text", "event_id,learner_key\n", `leading magic bytes "even"`},
	} {
		p := filepath.Join(dir, tc.name+".parquet")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := CheckMagic("raw", p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "raw file "+p)):
			t.Errorf("%s: err = %v, want it to name the file and %q", tc.name, err, tc.want)
		}
	}
	if err := CheckMagic("raw", filepath.Join(dir, "missing.parquet")); err == nil {
		t.Error("a missing file passed")
	}
}
