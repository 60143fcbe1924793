package pointer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/techlearningpro/engagement/internal/pointer"
)

// FuzzDecode: Decode never panics, and whatever it accepts survives
// Encode and Decode unchanged, with Encode's output stable.
// Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(validJSON))
	f.Add([]byte(validJSONv2))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := pointer.Decode(b)
		if err != nil {
			return
		}
		if p.Digest != pointer.Sum(b) {
			t.Fatalf("Digest %s is not the sum of the decoded bytes", p.Digest)
		}
		enc, err := pointer.Encode(p)
		if err != nil {
			t.Fatalf("Encode of a decoded pointer: %v", err)
		}
		again, err := pointer.Decode(enc)
		if err != nil {
			t.Fatalf("Decode of Encode output: %v\n%s", err, enc)
		}
		if again.Digest != pointer.Sum(enc) {
			t.Fatalf("Digest of the re-decoded pointer is not the sum of Encode's bytes")
		}
		// The digest names the bytes, which Encode may lay out differently
		// from the fuzzed input; everything else must survive.
		again.Digest, p.Digest = "", ""
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("round trip changed the pointer:\n got %+v\nwant %+v", again, p)
		}
		enc2, err := pointer.Encode(again)
		if err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("Encode is not stable across a round trip: %v", err)
		}
	})
}

// The committed seeds are named for what they are, so the corpus keeps
// exercising both sides of Decode even as it grows.
func TestFuzzSeedsDecodeAsNamed(t *testing.T) {
	for _, sd := range decodeSeeds(t) {
		valid := strings.HasPrefix(sd.name, "valid_")
		if !valid && !strings.HasPrefix(sd.name, "invalid_") {
			continue // added by the fuzzer itself
		}
		_, err := pointer.Decode(sd.b)
		if valid && err != nil {
			t.Errorf("%s: %v", sd.name, err)
		}
		if !valid && err == nil {
			t.Errorf("%s: decoded without error", sd.name)
		}
	}
}

type seed struct {
	name string
	b    []byte
}

// decodeSeeds reads every committed seed of FuzzDecode, each a
// "go test fuzz v1" file of one []byte literal.
func decodeSeeds(t *testing.T) []seed {
	t.Helper()
	entries, err := os.ReadDir("testdata/fuzz/FuzzDecode")
	if err != nil {
		t.Fatal(err)
	}
	var out []seed
	for _, e := range entries {
		name := e.Name()
		raw, err := os.ReadFile(filepath.Join("testdata/fuzz/FuzzDecode", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(raw), "\n", 3)
		if len(lines) < 2 {
			t.Fatalf("%s: not a go test fuzz v1 []byte seed", name)
		}
		lit, ok := strings.CutPrefix(lines[1], "[]byte(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		if lines[0] != "go test fuzz v1" || !ok || !ok2 {
			t.Fatalf("%s: not a go test fuzz v1 []byte seed", name)
		}
		b, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, seed{name, []byte(b)})
	}
	return out
}
