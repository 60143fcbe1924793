package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// TopUnknownLessons is how many unknown lesson_ids a rejection lists per
// date: enough to show a missing manifest pin (a handful of new lessons)
// or a producer bug (many), short enough to read.
const TopUnknownLessons = 20

// LessonCount is one unknown lesson_id and its events on a date. LessonID
// is nil for events without a lesson_id, which match no manifest row.
type LessonCount struct {
	LessonID   *string `json:"lesson_id"`
	EventCount int64   `json:"event_count"`
	// LessonIDBytes and LessonIDSHA256 are the id's length and digest
	// when LessonID holds only its first MaxRecordedIDBytes (Bound): two
	// ids alike that far stay told apart. Empty otherwise.
	LessonIDBytes  int    `json:"lesson_id_bytes,omitempty"`
	LessonIDSHA256 string `json:"lesson_id_sha256,omitempty"`
}

// MaxRecordedIDBytes is the most of an unknown lesson id a rejection
// record keeps: twenty 4 MB ids a date made a 76 MB record.
const MaxRecordedIDBytes = 1024

// Bound cuts each id of l longer than MaxRecordedIDBytes to its first
// bytes (whole code points), recording its length and digest.
func Bound(l []LessonCount) {
	for i := range l {
		id := l[i].LessonID
		if id == nil {
			continue
		}
		if short, cut := cutID(*id); cut {
			l[i].LessonID, l[i].LessonIDBytes, l[i].LessonIDSHA256 = &short, len(*id), digest(*id)
		}
	}
}

// cutID is id's first MaxRecordedIDBytes (whole code points), and whether
// that is shorter than id.
func cutID(id string) (string, bool) {
	if len(id) <= MaxRecordedIDBytes {
		return id, false
	}
	cut := MaxRecordedIDBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut], true
}

// digest is the hex SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Bytes is the length of the lesson id as it came, before any cut.
func (l LessonCount) Bytes() int {
	switch {
	case l.LessonIDBytes > 0:
		return l.LessonIDBytes
	case l.LessonID != nil:
		return len(*l.LessonID)
	}
	return 0
}

// Lesson is the lesson id as printed: "<null>" for a missing one.
func (l LessonCount) Lesson() string {
	if l.LessonID == nil {
		return "<null>"
	}
	return *l.LessonID
}

// SortLessons orders counts as a rejection lists them: by events
// descending, then by lesson_id ascending (bytewise) with a null lesson_id
// last, so equal counts always list in one order whatever the engine.
func SortLessons(l []LessonCount) {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.EventCount != b.EventCount {
			return a.EventCount > b.EventCount
		}
		if a.LessonID == nil || b.LessonID == nil {
			return a.LessonID != nil && b.LessonID == nil
		}
		return *a.LessonID < *b.LessonID
	})
}

// CapFailedDates are the dates whose unknown-lesson cap check failed, in
// report order: the only dates a rejection looks up unknown lessons for.
func (r Report) CapFailedDates() []string {
	var out []string
	for _, c := range r.Failed() {
		if c.Name == CheckUnknownLessonCap && c.Date != "" {
			out = append(out, c.Date)
		}
	}
	return out
}

// WriteFailed prints failed checks as a table a person reads on a
// rejection: each check with its date and its figures, and, per date in
// unknown, the unknown lessons by events. The figures are the check's
// Detail, the sentence that states the figure and its limit; the full
// figures are in the rejection record and _gate.json.
func WriteFailed(w io.Writer, jobID string, failed []Check, unknown map[string][]LessonCount) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rejected job_id=%s: %d failed %s\n", jobID, len(failed), plural(len(failed), "check", "checks"))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tDATE\tFIGURES")
	for _, c := range failed {
		date := c.Date
		if date == "" {
			date = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, date, OneLine(c.Detail))
	}
	tw.Flush()
	ds := make([]string, 0, len(unknown))
	for d := range unknown {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	for _, d := range ds {
		lessons := unknown[d]
		fmt.Fprintf(&b, "\ntop unknown lessons on %s (%d, by events):\n", d, len(lessons))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  LESSON_ID\tEVENTS")
		for _, l := range lessons {
			fmt.Fprintf(tw, "  %s\t%d\n", shownID(l.Lesson(), l.Bytes(), l.LessonIDSHA256), l.EventCount)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OneLine keeps a value from an input (a lesson id, a column name in a
// detail) from breaking the table's rows, or from driving the operator's
// terminal: every control or format character (an ESC sequence, a bidi
// override that reverses the rest of the row) is written as an escape.
func OneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ShownKey is a key from an input as a row shows it: quoted, every
// non-ASCII character escaped, when it would read as another key (empty,
// a space at an edge, a space other than ' ', a combining mark: NFD
// "é" beside NFC), since keys compare by bytes and the operator must see
// which bytes; else as oneLine shows it.
func ShownKey(s string) string {
	if s == "" || strings.TrimSpace(s) != s {
		return strconv.QuoteToASCII(s)
	}
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) || unicode.IsSpace(r) && r != ' ' || r == utf8.RuneError {
			return strconv.QuoteToASCII(s)
		}
	}
	return OneLine(s)
}

// shownRunes is the most of a lesson id the table shows: one 100 KB id
// would pad every row of it (the rejection record keeps the whole id).
const shownRunes = 80

// shownID is an id from an input as a row or a sample shows it (ShownKey),
// cut to shownRunes with its bytes and the start of its SHA-256: ids alike
// in their first 80 characters read as one (review CV). full is the id's
// length and sum its digest when raw is already a cut (Bound); 0 and ""
// otherwise.
func shownID(raw string, full int, sum string) string {
	s := ShownKey(raw)
	if utf8.RuneCountInString(s) <= shownRunes {
		return s
	}
	if full == 0 {
		full = len(raw)
	}
	if sum == "" {
		sum = digest(raw)
	}
	return fmt.Sprintf("%s... (%d bytes, sha256 %s)", string([]rune(s)[:shownRunes]), full, sum[:16])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
