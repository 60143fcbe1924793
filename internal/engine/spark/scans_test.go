package spark

import (
	"slices"
	"testing"
)

// TestScans: a directory's listed files are one relation, their names a
// brace list escaped so it matches exactly them; one file is its own path.
func TestScans(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  []string
	}{
		{"one file", []string{"/r/d=1/part-0.parquet"}, []string{"parquet.`/r/d=1/part-0.parquet`"}},
		{"one directory", []string{"/r/d=1/a.parquet", "/r/d=1/b.parquet"}, []string{"parquet.`/r/d=1/{a.parquet,b.parquet}`"}},
		{"directories in first-seen order", []string{"/r/d=2/a", "/r/d=1/a", "/r/d=2/b"},
			[]string{"parquet.`/r/d=2/{a,b}`", "parquet.`/r/d=1/a`"}},
		{"glob characters and a comma escaped", []string{"/r/{x}/a,{b}[c]*?.parquet", "/r/{x}/p\\q"},
			[]string{"parquet.`/r/\\{x\\}/{a\\,\\{b\\}\\[c\\]\\*\\?.parquet,p\\\\q}`"}},
		{"a lone file keeps its comma", []string{"/r/a,b"}, []string{"parquet.`/r/a,b`"}},
		{"backticks doubled", []string{"/r/a`b", "/r/c"}, []string{"parquet.`/r/{a``b,c}`"}},
		{"object store", []string{"s3a://b/raw/d=1/x", "s3a://b/raw/d=1/y"}, []string{"parquet.`s3a://b/raw/d=1/{x,y}`"}},
		// A split date's parts in one glob of its date; a lone part alone.
		{"split parts", []string{"/w/split/event_date=D/split_part=0/a", "/w/split/event_date=D/split_part=1/b", "/w/split/event_date=E/split_part=0/c"},
			[]string{"parquet.`/w/split/event_date=D/{split_part=0/a,split_part=1/b}`", "parquet.`/w/split/event_date=E/split_part=0/c`"}},
		{"a colon in the directory: file by file", []string{"s3a://b/t:1/d=1/x", "s3a://b/t:1/d=1/y", "/l/a:b/z"},
			[]string{"parquet.`s3a://b/t:1/d=1/x`", "parquet.`s3a://b/t:1/d=1/y`", "parquet.`/l/a:b/z`"}},
		// An object store allows a colon in a name; in a brace list Hadoop
		// refused it (UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY, no file named).
		{"a colon in a name: that file alone", []string{"s3a://b/d=1/x", "s3a://b/d=1/b:c", "s3a://b/d=1/y,z", "s3a://b/d=2/p", "s3a://b/d=2/q:r"},
			[]string{"parquet.`s3a://b/d=1/b:c`", "parquet.`s3a://b/d=1/{x,y\\,z}`", "parquet.`s3a://b/d=2/q:r`", "parquet.`s3a://b/d=2/p`"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scans(c.files); !slices.Equal(got, c.want) {
				t.Errorf("scans(%q)\n got %q\nwant %q", c.files, got, c.want)
			}
		})
	}
}
