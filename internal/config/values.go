package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The checks of a value as written, whatever its key: what would make a
// path or a pin other than what the user sees (Resolve names the key).

// innerVariable is a shell variable past a path's start: ${...} anywhere
// after it, or $NAME opening a later element (/srv/${ENV}/wh, /data/$USER).
var innerVariable = regexp.MustCompile(`.(\$\{[^}]*\}?)|/(\$[A-Za-z_][A-Za-z0-9_]*)`)

// variableIn is the first shell variable innerVariable finds in v.
func variableIn(v string) string {
	m := innerVariable.FindStringSubmatch(v)
	return m[1] + m[2]
}

// leadingVariable is a shell variable opening a path ($HOME/x, ${HOME}/x).
var leadingVariable = regexp.MustCompile(`^(\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*)`)

// Unexpanded is what a shell would have expanded in the path p, had one
// been given it: a leading ~, or the first shell variable, at its start or
// further on ("" for none). A flag reaches the tool as written from a
// scheduler's or a unit file's arguments, where no shell runs.
func Unexpanded(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		return "~"
	}
	if v := leadingVariable.FindString(p); v != "" {
		return v
	}
	if innerVariable.MatchString(p) {
		return variableIn(p)
	}
	return ""
}

// quoted says whether v is wrapped in one kind of quote.
func quoted(v string) bool {
	return len(v) >= 2 && strings.ContainsRune(`"'`, rune(v[0])) && v[len(v)-1] == v[0]
}

// invisible refuses a value holding bytes that are not UTF-8, a control
// character or an invisible one (a zero-width space, a byte order mark, a
// bidi control, a Hangul filler): copied from a web page or a chat, such a
// path published with exit 0 where no reader looks, and such a pin reached
// the engine's SQL as a read error (exit 1, which a scheduler retries).
// The joiners (U+200C, U+200D) and the variation selectors are letters'
// business in Persian, Indic scripts and emoji: accepted between non-ASCII
// characters (a selector after one), where retyping gives them again,
// never beside ASCII or at an end ("wh" and "wh" + U+200D look alike).
// shown is the value as an error may print it (its secrets masked).
func invisible(v, shown string) error {
	var runes []rune
	var at []int // each rune's byte offset
	for i := 0; i < len(v); {
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("%s holds a byte that is not UTF-8 at byte %d", strconv.QuoteToASCII(shown), i)
		}
		runes, at = append(runes, r), append(at, i)
		i += n
	}
	wide := func(j int) bool { return j >= 0 && j < len(runes) && runes[j] > unicode.MaxASCII }
	for i, r := range runes {
		joiner := (r == '\u200c' || r == '\u200d') && wide(i-1) && wide(i+1)
		selector := unicode.Is(unicode.Variation_Selector, r) && wide(i-1)
		if !joiner && !selector && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || ignorable(r)) {
			return fmt.Errorf("%s holds the invisible character %U at byte %d: retype the value", strconv.QuoteToASCII(shown), r, at[i])
		}
	}
	return nil
}

// ignorable are the invisible characters outside Cf a value may hide:
// the variation selectors, the combining grapheme joiner and the Hangul
// fillers (Unicode's default-ignorable code points that draw nothing).
func ignorable(r rune) bool {
	switch {
	case unicode.Is(unicode.Variation_Selector, r), r == '\u034f', r == '\u115f', r == '\u1160', r == '\u3164', r == '\uffa0':
		return true
	}
	return false
}
