package gate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func lc(id string, n int64) LessonCount {
	if id == "" {
		return LessonCount{EventCount: n}
	}
	return LessonCount{LessonID: &id, EventCount: n}
}

func TestSortLessons(t *testing.T) {
	got := []LessonCount{lc("b", 3), lc("", 3), lc("a", 1), lc("B", 3), lc("c", 9), lc("a", 3)}
	SortLessons(got)
	want := []LessonCount{lc("c", 9), lc("B", 3), lc("a", 3), lc("b", 3), lc("", 3), lc("a", 1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestCapFailedDates(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: CheckUnknownLessonCap, Date: "2026-03-02", Passed: true},
		{Name: CheckUnknownLessonCap, Date: "2026-03-03"},
		{Name: CheckNullKeys, Date: "2026-03-02"},
		{Name: CheckUnknownLessonCap, Date: "2026-03-04"},
	}}
	if got, want := r.CapFailedDates(), []string{"2026-03-03", "2026-03-04"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWriteFailed(t *testing.T) {
	tests := []struct {
		name    string
		failed  []Check
		unknown map[string][]LessonCount
		want    string
	}{
		{
			name: "input check, no date, no lessons",
			failed: []Check{{Name: CheckManifestUniqueLesson, Detail: "lesson_id duplicated inside the manifest pin: l1"},
				{Name: CheckProhibitedColumns, Detail: "prohibited: a\nb"}},
			want: "rejected job_id=j1: 2 failed checks\n" +
				"CHECK                      DATE  FIGURES\n" +
				"manifest_unique_lesson_id  -     lesson_id duplicated inside the manifest pin: l1\n" +
				"prohibited_columns         -     prohibited: a\\nb\n",
		},
		{
			name:   "cap on two dates, lessons listed by date",
			failed: []Check{{Name: CheckUnknownLessonCap, Date: "2026-03-03", Detail: "rate 0.5, cap 0.02"}},
			unknown: map[string][]LessonCount{
				"2026-03-03": {lc("lesson-x", 12), lc("", 2)},
				"2026-03-02": {},
			},
			want: "rejected job_id=j1: 1 failed check\n" +
				"CHECK               DATE        FIGURES\n" +
				"unknown_lesson_cap  2026-03-03  rate 0.5, cap 0.02\n" +
				"\ntop unknown lessons on 2026-03-02 (0, by events):\n" +
				"  LESSON_ID  EVENTS\n" +
				"\ntop unknown lessons on 2026-03-03 (2, by events):\n" +
				"  LESSON_ID  EVENTS\n" +
				"  lesson-x   12\n" +
				"  <null>     2\n",
		},
		{
			// Producer bytes: an escape sequence would colour the
			// operator's terminal, a 100 KB id pad every row.
			name:   "control bytes and a long lesson id",
			failed: []Check{{Name: CheckUnknownLessonCap, Date: "2026-03-03", Detail: "rate 0.5, cap 0.02"}},
			unknown: map[string][]LessonCount{
				"2026-03-03": {lc("esc\x1b[31mred\x00\x7f", 3), lc(strings.Repeat("x", 100_000), 2)},
			},
			want: "rejected job_id=j1: 1 failed check\n" +
				"CHECK               DATE        FIGURES\n" +
				"unknown_lesson_cap  2026-03-03  rate 0.5, cap 0.02\n" +
				"\ntop unknown lessons on 2026-03-03 (2, by events):\n" +
				"  LESSON_ID" + strings.Repeat(" ", 91+25) + "EVENTS\n" +
				"  esc\\x1b[31mred\\x00\\x7f" + strings.Repeat(" ", 78+25) + "3\n" +
				"  " + strings.Repeat("x", 80) + "... (100000 bytes, sha256 d69e689881578332)  2\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The table of a record's ids, cut (Bound), says the ids' bytes,
			// and each cut one's digest.
			for _, l := range tc.unknown {
				Bound(l)
			}
			var b bytes.Buffer
			if err := WriteFailed(&b, "j1", tc.failed, tc.unknown); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestSampleShownSafely: the ids a check's line quotes (repeated event ids)
// are a producer's bytes: escaped, and cut like the table's lesson ids, so
// one 100 KB id or an ESC sequence cannot flood or drive a terminal.
func TestSampleShownSafely(t *testing.T) {
	got := sample([]string{"ev-1", "esc\x1b[31mred", "rtl\u202etxt", strings.Repeat("x", 100_000)})
	want := ` (e.g. ev-1, esc\x1b[31mred, rtl\u202etxt, ` + strings.Repeat("x", 80) + `... (100000 bytes, sha256 d69e689881578332))`
	if got != want {
		t.Errorf("sample\n got %.200q\nwant %.200q", got, want)
	}
}

// TestShownKeyTellsKeysApart: keys compare by bytes, so a key that would
// read as another (a trailing space, NFD beside NFC, a no-break space) is
// shown quoted with its non-ASCII bytes escaped; a plain one as it is.
func TestShownKeyTellsKeysApart(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"lesson-ml-01", "lesson-ml-01"},
		{"café", "café"},
		{"lesson-ml-01 ", `"lesson-ml-01 "`},
		{" lesson-ml-01", `" lesson-ml-01"`},
		{"", `""`},
		{"cafe\u0301", `"cafe\u0301"`},
		{"a\u00a0b", `"a\u00a0b"`},
		{"esc\x1b[31m", `esc\x1b[31m`},
	} {
		if got := ShownKey(tc.in); got != tc.want {
			t.Errorf("ShownKey(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestBound: a rejection record keeps the first 1 KiB of a long unknown
// lesson id, cut between characters, and its length (review CR: twenty
// 4 MB ids a date made a 76 MB record); others are kept whole.
func TestBound(t *testing.T) {
	long := strings.Repeat("é", 2000) // 4000 bytes, each character two
	l := []LessonCount{lc(long, 9), lc("lesson-x", 3), {LessonID: nil, EventCount: 1}, lc(strings.Repeat("a", MaxRecordedIDBytes), 1)}
	Bound(l)
	if got := *l[0].LessonID; got != long[:MaxRecordedIDBytes] || l[0].LessonIDBytes != 4000 || !utf8.ValidString(got) {
		t.Errorf("long id kept as %d bytes (valid %v), length %d; want its first %d bytes and 4000", len(got), utf8.ValidString(got), l[0].LessonIDBytes, MaxRecordedIDBytes)
	}
	odd := []LessonCount{lc("a"+long, 1)} // the cut falls inside a character
	Bound(odd)
	if got := *odd[0].LessonID; len(got) != MaxRecordedIDBytes-1 || !utf8.ValidString(got) {
		t.Errorf("cut at %d bytes (valid %v), want %d", len(got), utf8.ValidString(got), MaxRecordedIDBytes-1)
	}
	for _, i := range []int{1, 2, 3} {
		if l[i].LessonIDBytes != 0 {
			t.Errorf("id %d (%s) marked cut", i, l[i].Lesson())
		}
	}
	if l[0].LessonIDSHA256 == "" || l[0].LessonIDSHA256 == (func() string { b := []LessonCount{lc(long+"2", 1)}; Bound(b); return b[0].LessonIDSHA256 })() {
		t.Errorf("two ids alike in their first %d bytes share a digest %q", MaxRecordedIDBytes, l[0].LessonIDSHA256)
	}
	data, err := json.Marshal(l[:2])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"lesson_id_bytes":4000`) || strings.Count(string(data), "lesson_id_bytes") != 1 || strings.Count(string(data), "lesson_id_sha256") != 1 {
		t.Errorf("record %s: want lesson_id_bytes on the cut id alone", data[len(data)-120:])
	}
}

// TestShownBytesAreTheIds: a long id shown cut says its own bytes, not
// those of its quoted form (an NFD id is quoted with every mark escaped,
// and said 2102 bytes for 900: review CU).
func TestShownBytesAreTheIds(t *testing.T) {
	nfd := strings.Repeat("e\u0301", 300) // 900 bytes, quoted as \u0301 each
	var b bytes.Buffer
	if err := WriteFailed(&b, "j1", []Check{{Name: CheckUnknownLessonCap, Date: "2026-03-03"}}, map[string][]LessonCount{"2026-03-03": {lc(nfd, 1)}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "... (900 bytes, sha256 ") {
		t.Errorf("table:\n%s\nwant the id's 900 bytes", b.String())
	}
	if got := sample([]string{nfd}); !strings.Contains(got, "... (900 bytes, sha256 ") {
		t.Errorf("sample %q, want the id's 900 bytes", got)
	}
}

// TestShownIDsTellApart: two ids alike in their first 80 characters are
// shown apart, by their digests, in the table and in a check's sample
// (review CV: two rows read as one id).
func TestShownIDsTellApart(t *testing.T) {
	a, b := strings.Repeat("Q", 100)+"a", strings.Repeat("Q", 100)+"b"
	if shownID(a, 0, "") == shownID(b, 0, "") {
		t.Errorf("both shown as %q", shownID(a, 0, ""))
	}
	if got := sample([]string{a, b}); strings.Count(got, shownID(a, 0, "")) != 1 || strings.Count(got, shownID(b, 0, "")) != 1 {
		t.Errorf("sample %q does not tell them apart", got)
	}
}

// TestLongDuplicateLessonIDs: a manifest's duplicated ids are shown cut in
// the check's detail and kept cut in its figures, each told apart by its
// digest (review CW: twenty 1 MiB ids made a 63 MB record, a 21 MB
// table).
func TestLongDuplicateLessonIDs(t *testing.T) {
	a, b := "01"+strings.Repeat("Q", 1<<20), "02"+strings.Repeat("Q", 1<<20)
	for _, c := range InputChecks(InputFigures{DuplicateLessonIDs: []string{a, b}, Prohibited: []string{"email"}}) {
		if c.Name != CheckManifestUniqueLesson {
			continue
		}
		if c.Passed || len(c.Detail) > 1000 || !strings.Contains(c.Detail, "(1048578 bytes, sha256 ") {
			t.Errorf("detail of %d bytes: %.300s", len(c.Detail), c.Detail)
		}
		dup, _ := c.Figures["duplicated"].([]string)
		if len(dup) != 2 || dup[0] == dup[1] || len(dup[0]) > 2*MaxRecordedIDBytes || !strings.HasPrefix(dup[0], "01QQQ") {
			t.Errorf("figures: %d ids, the first %d bytes", len(dup), len(dup[0]))
		}
		return
	}
	t.Fatal("no manifest_unique_lesson_id check")
}
