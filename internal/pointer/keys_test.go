package pointer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/pointer"
)

// checkKeysByTokens is checkKeys as it was written first, on
// json.Decoder.Token: the reference the byte scanner must agree with.
func checkKeysByTokens(b []byte) error {
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.expectKey {
			if !pointer.IsPlainKey(s) {
				return fmt.Errorf("object key %q: want lower-case ASCII letters, digits, '_' or '-' (field names match exactly)", s)
			}
			if top.keys[s] {
				return fmt.Errorf("object key %q: appears twice", s)
			}
			top.keys[s] = true
			top.expectKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			top.expectKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		}
	}
}

// TestCheckKeysAgreesWithTokens: the byte scanner gives the token
// reader's verdict, word for word, on hand-made cases (escaped keys, keys
// and values holding quotes, backslashes, braces and commas, nesting) and
// on every seed of FuzzDecode.
func TestCheckKeysAgreesWithTokens(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `"a"`, `1`, `null`,
		`{"a":1,"b":2}`,
		`{"a":1,"a":2}`,
		`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`,
		`{"a":[{"b":1,"b":2}]}`,
		`{"a":"a","b":"a"}`,
		`{"a":"x\",\"a\":1","b":2}`,
		`{"a":"{\"a\":1,\"a\":2}"}`,
		`{"a\\b":1}`,
		`{"\u0061":1,"a":2}`,
		`{"\u0061bc":1}`,
		`{"A":1}`,
		`{"é":1}`,
		`{"":1}`,
		`{"a b":1}`,
		`{"a":[1,"x",{"c":[]},[{"d":{}}]],"e":{"f":{"g":"\\"}},"h":true}`,
		`[{"a":1},{"a":1},"a",["a","a"]]`,
		`{"dates":{"2026-03-02":{"job_id":"j"},"2026-03-02":{"job_id":"k"}}}`,
		`{"a":1,"b":{"c":2},"b":3}`,
		` { "a" : 1 , "b" : [ ] } `,
	}
	for _, sd := range decodeSeeds(t) {
		cases = append(cases, string(sd.b))
	}
	cases = append(cases, validForKeys(t, 640))
	valid := 0
	for _, c := range cases {
		if !json.Valid([]byte(c)) {
			continue // checkKeys is only ever given valid JSON
		}
		valid++
		got, want := pointer.CheckKeys([]byte(c)), checkKeysByTokens([]byte(c))
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Errorf("%.80s: bytes say %v, tokens say %v", c, got, want)
		}
	}
	if valid < 25 {
		t.Fatalf("only %d valid cases: the seeds went missing", valid)
	}
}

// validForKeys is a pointer-shaped document of n dates, as the stress
// leaves it, with one duplicate key deep inside.
func validForKeys(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"format_version":2,"dates":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"d` + strconv.Itoa(i) + `":{"job_id":"j","fact_files":[{"path":"p\"q","rows":1}]}`)
	}
	b.WriteString(`},"dates":{}}`)
	return b.String()
}

func BenchmarkCheckKeys(b *testing.B) {
	doc := []byte(strings.Replace(validForKeys(&testing.T{}, 640), `},"dates":{}}`, `}}`, 1))
	for _, bc := range []struct {
		name string
		fn   func([]byte) error
	}{{"bytes", pointer.CheckKeys}, {"tokens", checkKeysByTokens}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.fn(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
