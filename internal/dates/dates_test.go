package dates

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // nil when an error is expected
		wantErr []string // substrings the error must contain
	}{
		{name: "single", in: "2026-03-02", want: []string{"2026-03-02"}},
		{name: "two sorted", in: "2026-03-02,2026-03-03", want: []string{"2026-03-02", "2026-03-03"}},
		{name: "unsorted gets sorted", in: "2026-03-03,2026-01-31,2026-03-02", want: []string{"2026-01-31", "2026-03-02", "2026-03-03"}},
		{name: "across a year boundary", in: "2026-01-01,2025-12-31", want: []string{"2025-12-31", "2026-01-01"}},
		{name: "spaces around items", in: " 2026-03-03 , 2026-03-02 ", want: []string{"2026-03-02", "2026-03-03"}},
		{name: "leap day", in: "2024-02-29", want: []string{"2024-02-29"}},
		{name: "empty", in: "", wantErr: []string{"empty"}},
		{name: "whitespace only", in: " \t ", wantErr: []string{"empty"}},
		{name: "single digit month and day", in: "2026-3-2", wantErr: []string{`"2026-3-2"`, "want YYYY-MM-DD"}},
		{name: "february 30", in: "2026-02-30", wantErr: []string{`"2026-02-30"`, "no such day: February 2026 has 28 days"}},
		{name: "february 29 in a common year", in: "2026-02-29", wantErr: []string{`"2026-02-29"`, "no such day: February 2026 has 28 days"}},
		{name: "april 31", in: "2026-04-31", wantErr: []string{`"2026-04-31"`, "no such day: April 2026 has 30 days"}},
		{name: "day 00", in: "2026-04-00", wantErr: []string{`"2026-04-00"`, "no such day: April 2026 has 30 days"}},
		{name: "signed day", in: "2026-04-+1", wantErr: []string{`"2026-04-+1"`, "want YYYY-MM-DD"}},
		{name: "month 13", in: "2026-13-01", wantErr: []string{`"2026-13-01"`, "no month 13"}},
		{name: "word", in: "yesterday", wantErr: []string{`"yesterday"`, "want YYYY-MM-DD"}},
		{name: "malformed second item", in: "2026-03-02,yesterday", wantErr: []string{`"yesterday"`}},
		{name: "trailing comma", in: "2026-03-02,", wantErr: []string{`""`}},
		{name: "timestamp is not a date", in: "2026-03-02T00:00:00Z", wantErr: []string{`"2026-03-02T00:00:00Z"`}},
		{name: "duplicate", in: "2026-03-02,2026-03-02", wantErr: []string{"2026-03-02", "twice"}},
		{name: "duplicate not adjacent", in: "2026-03-03,2026-03-02,2026-03-03", wantErr: []string{"2026-03-03", "twice"}},
		{name: "duplicate with spaces", in: "2026-03-02, 2026-03-02", wantErr: []string{"2026-03-02", "twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseList(tc.in)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseList(%q) = %v, want an error", tc.in, Strings(got))
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("ParseList(%q) error %q does not contain %q", tc.in, err, s)
					}
				}
				if got != nil {
					t.Errorf("ParseList(%q) returned %v with its error, want nil", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseList(%q): %v", tc.in, err)
			}
			if s := Strings(got); !reflect.DeepEqual(s, tc.want) {
				t.Errorf("ParseList(%q) = %v, want %v", tc.in, s, tc.want)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	// Days since 1970-01-01, counted by hand: 2026-01-01 is 56*365 + 14 leap
	// days (1972..2024) = 20454; Jan (31) + Feb (28) puts 2026-03-01 at 20513.
	tests := []struct {
		in   string
		want Date
	}{
		{"1970-01-01", 0},
		{"1970-01-02", 1},
		{"1969-12-31", -1},
		{"2026-01-01", 20454},
		{"2026-03-01", 20513},
		{"2026-03-02", 20514},
		{"2026-03-03", 20515},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %d, want %d", tc.in, int32(got), int32(tc.want))
		}
	}
}

func TestParseStringRoundTrip(t *testing.T) {
	for _, s := range []string{"1970-01-01", "1969-12-31", "2000-02-29", "2024-02-29", "2026-03-02", "2026-12-31", "2100-03-01", "9999-12-31"} {
		d, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got := d.String(); got != s {
			t.Errorf("Parse(%q).String() = %q", s, got)
		}
		back, err := Parse(d.String())
		if err != nil || back != d {
			t.Errorf("Parse(String(%d)) = %d, %v", int32(d), int32(back), err)
		}
	}
	for _, s := range []string{"", "2026-3-2", "2026-02-30", "2026-13-01", "yesterday", "2026/03/02", " 2026-03-02"} {
		if d, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", s, d)
		}
	}
}

func TestAddDays(t *testing.T) {
	tests := []struct {
		from string
		n    int
		want string
	}{
		{"2026-02-28", 1, "2026-03-01"},
		{"2024-02-28", 1, "2024-02-29"},
		{"2026-03-03", -1, "2026-03-02"},
		{"2026-03-01", -1, "2026-02-28"},
		{"2025-12-31", 1, "2026-01-01"},
		{"2026-03-02", 0, "2026-03-02"},
	}
	for _, tc := range tests {
		if got := MustParse(tc.from).AddDays(tc.n).String(); got != tc.want {
			t.Errorf("%s + %d = %s, want %s", tc.from, tc.n, got, tc.want)
		}
	}
}

func TestDateJSON(t *testing.T) {
	d := MustParse("2026-03-02")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"2026-03-02"` {
		t.Errorf("json.Marshal(date) = %s, want \"2026-03-02\"", b)
	}

	m := map[Date]int{MustParse("2026-03-03"): 2, MustParse("2026-03-02"): 1}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"2026-03-02":1,"2026-03-03":2}`; string(b) != want {
		t.Errorf("json.Marshal(map) = %s, want %s", b, want)
	}
	var back map[Date]int
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal map: %v", err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("map round trip = %v, want %v", back, m)
	}

	var bad map[Date]int
	if err := json.Unmarshal([]byte(`{"2026-02-30":1}`), &bad); err == nil {
		t.Errorf("unmarshal of an invalid date key succeeded: %v", bad)
	}
	var v struct {
		D Date `json:"d"`
	}
	if err := json.Unmarshal([]byte(`{"d":"2026-03-03"}`), &v); err != nil || v.D != MustParse("2026-03-03") {
		t.Errorf("unmarshal field = %v, %v", v.D, err)
	}
	if err := json.Unmarshal([]byte(`{"d":"03/03/2026"}`), &v); err == nil {
		t.Errorf("unmarshal of 03/03/2026 succeeded")
	}
}

func TestStrings(t *testing.T) {
	got := Strings([]Date{MustParse("2026-03-03"), MustParse("2026-03-01")})
	if want := []string{"2026-03-03", "2026-03-01"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Strings = %v, want %v (order kept)", got, want)
	}
	if got := Strings(nil); len(got) != 0 {
		t.Errorf("Strings(nil) = %v", got)
	}
}
