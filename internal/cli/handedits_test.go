package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/cli"
	"github.com/techlearningpro/engagement/internal/dates"
	"github.com/techlearningpro/engagement/internal/exitcode"
	"github.com/techlearningpro/engagement/internal/job/publishtest"
	"github.com/techlearningpro/engagement/internal/pointer"
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

// TestPointerEditedInPlace: pointer.json or the history copy written with
// it edited in place (the generation kept, a figure or a file list
// changed) is refused by publish and rollback before any work, exit 1, and
// left as it is. Which side was edited is told by what the jobs staged
// (their gate reports' figures, their files' sizes), and the advice then
// restores the figure the gate counted: the error told to copy the history
// copy over pointer.json whichever side was edited, publishing an edited
// copy's figure. An edit nothing staged can judge (the write time) names
// neither side. A publish adopted the edit into a sound generation before.
func TestPointerEditedInPlace(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	day := dates.MustParse("2026-03-02")
	events := fx.Expected.ByDate[day].Events
	count := fmt.Sprintf(`"event_count": %d`, events)
	for _, tc := range []struct {
		name, file string
		edit       func(string) string
		says       []string
		fix        []string // the copy the advice makes, from and to; none when it names no side
		history    string   // what history's warnings say of it
	}{
		{"a figure in pointer.json", "pointer.json", func(s string) string { return strings.Replace(s, count, `"event_count": 5555`, 1) },
			[]string{"it was edited in place (its 2026-03-02 entry disagrees with what job edit-2 staged: event_count 5555, its gate report " + fmt.Sprint(events)},
			[]string{"pointer-history/2.json", "pointer.json"}, "pointer.json was edited in place (its 2026-03-02 entry disagrees"},
		{"a figure in the copy", "pointer-history/2.json", func(s string) string { return strings.Replace(s, count, `"event_count": 5555`, 1) },
			[]string{"the history copy was edited (its 2026-03-02 entry disagrees with what job edit-2 staged: event_count 5555", "copy it over pointer-history/2.json"},
			[]string{"pointer.json", "pointer-history/2.json"}, "pointer-history/2.json was changed after it was written (its 2026-03-02 entry disagrees"},
		{"a file's size in the copy", "pointer-history/2.json", func(s string) string {
			return regexp.MustCompile(`"bytes": (\d+)`).ReplaceAllString(s, `"bytes": 1${1}`)
		}, []string{"the history copy was edited (its 2026-03-02 entry disagrees with what job edit-2 staged: staging/job_id=edit-2/", "bytes, the pointer recorded 1"},
			[]string{"pointer.json", "pointer-history/2.json"}, "pointer-history/2.json was changed after it was written (its 2026-03-02 entry disagrees"},
		{"a pin in pointer.json", "pointer.json", func(s string) string { return strings.Replace(s, `"manifest_id": "`, `"manifest_id": "x`, 1) },
			[]string{"it was edited in place (its 2026-03-02 entry disagrees with what job edit-2 staged: manifest_id", "its attempt record"},
			[]string{"pointer-history/2.json", "pointer.json"}, "pointer.json was edited in place (its 2026-03-02 entry disagrees"},
		// A file dropped from the list, or a row count changed: every
		// listed file is still there with its size (review CM).
		{"a file dropped from pointer.json", "pointer.json", editDate("2026-03-02", func(e map[string]any) { e["course_day_files"] = []any{} }),
			[]string{"it was edited in place (its 2026-03-02 entry disagrees with what job edit-2 staged: course_day_files hold 0 rows, its gate report 8"},
			[]string{"pointer-history/2.json", "pointer.json"}, "pointer.json was edited in place (its 2026-03-02 entry disagrees"},
		{"a row count in the copy", "pointer-history/2.json", editDate("2026-03-02", func(e map[string]any) {
			e["fact_files"].([]any)[0].(map[string]any)["rows"] = 1
		}), []string{"the history copy was edited (its 2026-03-02 entry disagrees with what job edit-2 staged: fact_files hold 1 rows"},
			[]string{"pointer.json", "pointer-history/2.json"}, "pointer-history/2.json was changed after it was written (its 2026-03-02 entry disagrees"},
		// Another date's file of the same job, named for this one.
		{"another date's file in pointer.json", "pointer.json", func(s string) string {
			return strings.Replace(s, "course_day/event_date=2026-03-02/", "course_day/event_date=2026-03-03/", 1)
		}, []string{"it was edited in place (its 2026-03-02 entry disagrees with what job edit-2 staged: staging/job_id=edit-2/course_day/event_date=2026-03-03/part-00000.parquet is not a course_day file of 2026-03-02"},
			[]string{"pointer-history/2.json", "pointer.json"}, "pointer.json was edited in place (its 2026-03-02 entry disagrees"},
		// Nothing staged records when the generation was written.
		{"the write time in the copy", "pointer-history/2.json", func(s string) string {
			return regexp.MustCompile(`"written_at": "\d{4}`).ReplaceAllString(s, `"written_at": "2001`)
		}, []string{"one of the two was edited in place, and nothing tells which (written_at: pointer.json 20", "pointer-history/2.json 2001-"}, nil, "one of them was edited in place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			for _, job := range []string{"edit-1", "edit-2"} {
				var errb strings.Builder
				if code := cli.Main(context.Background(), fx.Args(wh, job, "2026-03-02", "2026-03-03"), io.Discard, &errb); code != 0 {
					t.Fatalf("publish %s: exit %d\n%s", job, code, errb.String())
				}
			}
			p := filepath.Join(wh, filepath.FromSlash(tc.file))
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := tc.edit(string(data))
			if edited == string(data) {
				t.Fatalf("%s: nothing to edit:\n%s", tc.file, data)
			}
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				fx.Args(wh, "edit-3", "2026-03-03"),
				{"rollback", "--warehouse", wh, "--date", "2026-03-03", "--to-generation", "1", "--job-id", "edit-rb"},
			} {
				var errb strings.Builder
				code := cli.Main(context.Background(), args, io.Discard, &errb)
				if code != exitcode.Error || !strings.Contains(errb.String(), "pointer-history/2.json") {
					t.Errorf("%s: exit %d, want 1 naming pointer-history/2.json\n%s", args[0], code, errb.String())
				}
				for _, want := range tc.says {
					if !strings.Contains(errb.String(), want) {
						t.Errorf("%s: want it to say %q\n%s", args[0], want, errb.String())
					}
				}
				if now, _ := os.ReadFile(p); string(now) != edited {
					t.Errorf("%s changed the edited %s", args[0], tc.file)
				}
				if _, err := os.Stat(filepath.Join(wh, "staging", "job_id=edit-3")); err == nil {
					t.Errorf("%s: the refused publish staged", args[0])
				}
			}
			// history lists the figures, and says why they are not to be trusted.
			var out, errb strings.Builder
			if code := cli.Main(context.Background(), []string{"history", "--warehouse", wh}, &out, &errb); code != 0 ||
				!strings.Contains(out.String(), "warning: pointer.json is not pointer-history/2.json, the copy written with it") ||
				!strings.Contains(out.String(), tc.history) {
				t.Errorf("history: exit %d, want 0 and the warning saying %q\n%s%s", code, tc.history, out.String(), errb.String())
			}
			if tc.fix == nil {
				return
			}
			// The advice followed, readers see what the gate counted.
			good, err := os.ReadFile(filepath.Join(wh, filepath.FromSlash(tc.fix[0])))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wh, filepath.FromSlash(tc.fix[1])), good, 0o644); err != nil {
				t.Fatal(err)
			}
			if code := cli.Main(context.Background(), fx.Args(wh, "edit-3", "2026-03-03"), io.Discard, &errb); code != 0 {
				t.Fatalf("publish after the advice: exit %d\n%s", code, errb.String())
			}
			cur := publishtest.Get(t, wh, "pointer.json")
			ptr, err := pointer.Decode(cur)
			if err != nil {
				t.Fatal(err)
			}
			if got := ptr.Dates[day].EventCount; got != events {
				t.Errorf("after the advice, pointer.json says %d events on %s; the gate counted %d", got, day, events)
			}
			if got := publishtest.FactSum(t, wh)[day]; got != events {
				t.Errorf("after the advice, the fact files sum to %d on %s; want %d", got, day, events)
			}
		})
	}
}

// editDate is an edit of one date's entry of a pointer document.
func editDate(day string, edit func(map[string]any)) func(string) string {
	return func(s string) string {
		var p map[string]any
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			panic(err)
		}
		edit(p["dates"].(map[string]any)[day].(map[string]any))
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			panic(err)
		}
		return string(b) + "\n"
	}
}

// TestPointerLost: with pointer.json deleted and its history in place, the
// readers' and operators' commands say it was lost and how to restore it
// (exit 1), not that nothing was ever published there (exit 2, "check
// --warehouse"), which sent the person on call looking for a typo.
func TestPointerLost(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	for _, job := range []string{"lost-1", "lost-2"} {
		var errb strings.Builder
		if code := cli.Main(context.Background(), fx.Args(wh, job, "2026-03-02"), io.Discard, &errb); code != 0 {
			t.Fatalf("publish %s: exit %d\n%s", job, code, errb.String())
		}
	}
	if err := os.Remove(filepath.Join(wh, "pointer.json")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status", "--warehouse", wh},
		{"read", "course_day", "--warehouse", wh},
		{"history", "--warehouse", wh},
		{"views", "--warehouse", wh, "--dialect", "duckdb"},
		{"rollback", "--warehouse", wh, "--date", "2026-03-02", "--to-generation", "1", "--job-id", "lost-rb"},
		{"gc", "--warehouse", wh},
		fx.Args(wh, "lost-3", "2026-03-02"), // refused before any work
	} {
		var errb strings.Builder
		code := cli.Main(context.Background(), args, io.Discard, &errb)
		if code != exitcode.Error || !strings.Contains(errb.String(), "lost or deleted by hand") || !strings.Contains(errb.String(), "pointer-history/2.json") {
			t.Errorf("%s: exit %d, want 1 saying pointer.json was lost and naming pointer-history/2.json\n%s", args[0], code, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(wh, "pointer.json")); err == nil {
		t.Errorf("a command wrote pointer.json")
	}
	if _, err := os.Stat(filepath.Join(wh, "staging", "job_id=lost-3")); err == nil {
		t.Errorf("the refused publish staged")
	}

	// A lone generation 1 without pointer.json is what a first publish
	// that died after its commit leaves: nothing is published yet (exit
	// 1, no usage mistake: TestFirstPublishNotYetVisible), and the next
	// publish rolls it forward.
	first := filepath.Join(t.TempDir(), "first")
	var errb strings.Builder
	if code := cli.Main(context.Background(), fx.Args(first, "first-1", "2026-03-02"), io.Discard, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	if err := os.Remove(filepath.Join(first, "pointer.json")); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	for _, args := range [][]string{{"status", "--warehouse", first}, {"gc", "--warehouse", first}} {
		errb.Reset()
		if code := cli.Main(context.Background(), args, io.Discard, &errb); code != exitcode.Error || !strings.Contains(errb.String(), "the next publish, which rolls generation 1 forward") {
			t.Errorf("%s after an interrupted first publish: exit %d, want 1 saying the next publish rolls it forward\n%s", args[0], code, errb.String())
		}
	}
	errb.Reset()
	if code := cli.Main(context.Background(), fx.Args(first, "first-2", "2026-03-03"), io.Discard, &errb); code != 0 {
		t.Errorf("the next publish: exit %d, want 0\n%s", code, errb.String())
	}
	if p := publishtest.Snapshot(t, first); p.Generation() != 2 {
		t.Errorf("after the next publish: generation %d, want 2 (1 rolled forward)", p.Generation())
	}
}

// publishedInTemp publishes the fixture's 2026-03-02 as job into dir/wh,
// dir a new temporary directory, and returns the fixture, dir and wh.
func publishedInTemp(t *testing.T, job string) (publishtest.Fixture, string, string) {
	t.Helper()
	fx := publishtest.LoadFixture(t, "")
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	var errb strings.Builder
	if code := cli.Main(context.Background(), fx.Args(wh, job, "2026-03-02"), io.Discard, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	return fx, dir, wh
}

// TestPathFlagsWhiteSpace: a path flag with white space at an end (a
// variable's newline) names another file or directory than the one meant:
// refused (exit 2) by the readers' --warehouse, the sinks and report --out,
// where it wrote "engagement.prom " that no textfile collector reads.
func TestPathFlagsWhiteSpace(t *testing.T) {
	fx, dir, wh := publishedInTemp(t, "ws-1")
	var errb strings.Builder
	for _, args := range [][]string{
		{"status", "--warehouse", wh + "\n"},
		{"read", "course_day", "--warehouse", wh + " "},
		{"gc", "--warehouse", " " + wh},
		{"report", "--warehouse", wh, "--out", filepath.Join(dir, "rep ")},
		append(fx.Args(wh, "ws-2", "2026-03-02"), "--metrics-file", filepath.Join(dir, "engagement.prom ")),
		append(fx.Args(wh, "ws-3", "2026-03-02"), "--lineage-file", filepath.Join(dir, "l.jsonl\n")),
	} {
		errb.Reset()
		code := cli.Main(context.Background(), args, io.Discard, &errb)
		if code != exitcode.Usage || !strings.Contains(errb.String(), "white space at an end") {
			t.Errorf("%v: exit %d, want 2 naming the white space\n%s", args[:2], code, errb.String())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("beside the warehouse: %d entries, want none written", len(entries)-1)
	}
}

// TestSinkPathsUnexpanded: a sink's path holding what a shell would have
// expanded (a scheduler's or a unit file's arguments pass it as written)
// failed to write after the run, a warning and exit 0, and no metrics came.
// It is refused (exit 2) before the run, naming the flag and the variable:
// nothing is published and nothing written beside.
func TestSinkPathsUnexpanded(t *testing.T) {
	fx, dir, wh := publishedInTemp(t, "sv-1")
	var errb strings.Builder
	t.Chdir(dir)
	for i, tc := range []struct {
		flag, path, names string
	}{
		{"--metrics-file", "${HOME}/m.prom", "${HOME}"},
		{"--metrics-file", "$HOME/m.prom", "$HOME"},
		{"--metrics-file", "~/m.prom", "~"},
		{"--metrics-file", filepath.Join(dir, "${JOB}.prom"), "${JOB}"},
		{"--lineage-file", filepath.Join(dir, "$USER", "l.jsonl"), "$USER"},
	} {
		errb.Reset()
		args := append(fx.Args(wh, fmt.Sprintf("sv-%d", i+2), "2026-03-03"), tc.flag, tc.path)
		code := cli.Main(context.Background(), args, io.Discard, &errb)
		want := tc.flag + " " + tc.path + " holds " + tc.names + ", which no shell expanded"
		if code != exitcode.Usage || !strings.Contains(errb.String(), want) {
			t.Errorf("%s %s: exit %d, want 2 saying %q\n%s", tc.flag, tc.path, code, want, errb.String())
		}
	}
	if p := publishtest.Snapshot(t, wh); p.Generation() != 1 {
		t.Errorf("generation %d after the refused runs, want 1", p.Generation())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("beside the warehouse: %d entries, want none written", len(entries)-1)
	}
}

// TestLocalDirFlags: gen --out and report --out name directories on this
// machine; a URL (or a mistyped one) was written into ./s3:/..., exit 0.
func TestLocalDirFlags(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	wh := filepath.Join(t.TempDir(), "wh")
	var errb strings.Builder
	if code := cli.Main(context.Background(), fx.Args(wh, "out-1", "2026-03-02"), io.Discard, &errb); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errb.String())
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"gen", "--out", "s3://bucket/gen"},
		{"gen", "--out", "s3:/bucket/gen"},
		{"report", "--warehouse", wh, "--out", "s3://bucket/report"},
	} {
		var errb strings.Builder
		code := cli.Main(context.Background(), args, io.Discard, &errb)
		if code != exitcode.Usage || !strings.Contains(errb.String(), "--out") {
			t.Errorf("%v: exit %d, want 2 naming --out\n%s", args, code, errb.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("written in the working directory: %v", entries)
	}
}

// TestInputNamedLikeAScheme: a local input whose name looks like a scheme,
// given as ./s3:r as the refusal of a bare s3:r advises, publishes: its
// listed files' paths lost the "./" and were refused as mistyped URLs
// (exit 1, on every retry).
func TestInputNamedLikeAScheme(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "s3:r"), os.DirFS(fx.Input("raw"))); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	args := publishtest.WithFlag(fx.Args(filepath.Join(dir, "wh"), "scheme-1", "2026-03-02"), "--raw", "./s3:r")
	var errb strings.Builder
	if code := cli.Main(context.Background(), args, io.Discard, &errb); code != 0 {
		t.Fatalf("publish with --raw ./s3:r: exit %d\n%s", code, errb.String())
	}
	day := dates.MustParse("2026-03-02")
	if got, want := publishtest.FactSum(t, filepath.Join(dir, "wh"))[day], fx.Expected.ByDate[day].Events; got != want {
		t.Errorf("published %d events, want %d", got, want)
	}
}

// TestRollbackBelowFormatOne: a generation written with no parent digest
// (format 1, by a build of before the digests) cannot vouch for the copy
// below it. A copy edited there (one date's entry given another date's
// files and figures) was rolled back to with exit 0, and readers saw
// 2026-03-03's rows as 2026-03-02's (review CS). Each date rolled back is
// checked against what its job staged; the copy as written still rolls
// back. A file or gate report gone is said as above the boundary, exit 2,
// not blamed on the copy (review CT).
func TestRollbackBelowFormatOne(t *testing.T) {
	fx := publishtest.LoadFixture(t, "")
	day := dates.MustParse("2026-03-02")
	const fact = "staging/job_id=f1-1/fact_lesson_engagement/event_date=2026-03-02/part-00000.parquet"
	for _, tc := range []struct {
		name   string
		edited bool   // 1.json's 2026-03-02 entry given 2026-03-03's
		remove string // a file of f1-1 removed
		says   string // "" when it rolls back
	}{
		{"as written", false, "", ""},
		{"edited", true, "", "pointer-history/1.json's 2026-03-02 entry disagrees with what job f1-1 staged"},
		{"a file gone", false, fact, "generation 1 names files that are not as it recorded them, nothing was changed: " + fact + ": missing"},
		{"its attempt record gone", false, "staging/job_id=f1-1/_attempt.json", "_attempt.json: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			for _, run := range [][]string{{"f1-1", "2026-03-02", "2026-03-03"}, {"f1-2", "2026-03-02"}, {"f1-3", "2026-03-03"}} {
				var errb strings.Builder
				if code := cli.Main(context.Background(), fx.Args(wh, run[0], run[1:]...), io.Discard, &errb); code != 0 {
					t.Fatalf("publish %s: exit %d\n%s", run[0], code, errb.String())
				}
			}
			// As a format 1 build wrote them: no parent, nor what came with it.
			names, err := filepath.Glob(filepath.Join(wh, "pointer-history", "*.json"))
			if err != nil || len(names) != 3 {
				t.Fatalf("history copies %v (%v), want 3", names, err)
			}
			for _, p := range append(names, filepath.Join(wh, "pointer.json")) {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				var doc map[string]any
				if err := json.Unmarshal(data, &doc); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"parent", "written_at", "writer_version", "operation", "source_generation"} {
					delete(doc, k)
				}
				doc["format_version"] = 1
				if tc.edited && filepath.Base(p) == "1.json" {
					es := doc["dates"].(map[string]any)
					from, to := es["2026-03-03"].(map[string]any), es["2026-03-02"].(map[string]any)
					for _, k := range []string{"fact_files", "course_day_files", "event_count", "unknown_lesson_count", "unknown_lesson_rate"} {
						to[k] = from[k]
					}
				}
				out, err := json.MarshalIndent(doc, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.remove != "" {
				if err := os.Remove(filepath.Join(wh, filepath.FromSlash(tc.remove))); err != nil {
					t.Fatal(err)
				}
			}
			before := publishtest.Get(t, wh, "pointer.json")
			var errb strings.Builder
			code := cli.Main(context.Background(), []string{"rollback", "--warehouse", wh, "--date", "2026-03-02", "--to-generation", "1", "--job-id", "f1-rb"}, io.Discard, &errb)
			if tc.says != "" {
				if code != exitcode.Usage || !strings.Contains(errb.String(), tc.says) || tc.remove != "" && strings.Contains(errb.String(), "changed after it was written") {
					t.Fatalf("rollback: exit %d, want 2 saying %q\n%s", code, tc.says, errb.String())
				}
				if string(publishtest.Get(t, wh, "pointer.json")) != string(before) {
					t.Errorf("the refused rollback moved the pointer")
				}
				return
			}
			if code != 0 {
				t.Fatalf("rollback to a format 1 copy as written: exit %d\n%s", code, errb.String())
			}
			if got, want := publishtest.FactSum(t, wh)[day], fx.Expected.ByDate[day].Events; got != want {
				t.Errorf("after the rollback, the fact files sum to %d on %s; want %d", got, day, want)
			}
		})
	}
}
