package spark

import (
	"strings"
	"testing"
)

// TestRemoteParams: the URL's parameters as the Spark Connect spec reads
// them. The library's builder kept a parameter only when '=' split it in
// exactly two (a base64 token's padding dropped the token, and the job ran
// in plaintext without it) and ignored use_ssl=true; a typo went out as a
// header, unchecked.
func TestRemoteParams(t *testing.T) {
	for _, tc := range []struct {
		remote, token string
		ssl           bool
		err           string
	}{
		{"sc://h:15002", "", false, ""},
		{"sc://h:15002/;use_ssl=true", "", true, ""},
		{"sc://h:15002/;USE_SSL=TRUE", "", true, ""},
		{"sc://h:15002/;use_ssl=false;user_id=etl", "", false, ""},
		{"sc://h:15002/;token=c2VjcmV0LXRva2Vu==", "c2VjcmV0LXRva2Vu==", false, ""},
		{"sc://h:15002/;use_ssl=true;token=abc;user_agent=x;session_id=s", "abc", true, ""},
		{"sc://h:15002/;bogus=1", "", false, `unknown parameter "bogus"`},
		{"sc://h:15002/;use_ssl=yes", "", false, "use_ssl=yes: want true or false"},
		{"sc://h:15002/;token", "", false, `parameter "token": want name=value`},
	} {
		cb, err := newChannel(tc.remote)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.remote, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.remote, err)
		case cb.token != tc.token || cb.useSSL != tc.ssl:
			t.Errorf("%s: token %q, TLS %v; want %q, %v", tc.remote, cb.token, cb.useSSL, tc.token, tc.ssl)
		}
	}
}
