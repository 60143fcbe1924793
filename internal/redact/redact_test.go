package redact

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://marquez:5000/api/v1/lineage", "http://marquez:5000/api/v1/lineage"},
		{"http://user:pass@127.0.0.1:18802/l?api_key=SECRETQ", "http://user:xxxxx@127.0.0.1:18802/l?api_key=xxxxx"},
		{"http://h/l?namespace=etl&X-Amz-Signature=abc", "http://h/l?namespace=etl&X-Amz-Signature=xxxxx"},
		// url.Values dropped a pair holding a ';', which went out as given.
		{"http://h/l?apikey=Q;A9&ns=etl", "http://h/l?apikey=xxxxx&ns=etl"},
		{"http://h/l?ns=etl;api_key=Q9", "http://h/l?ns=etl;api_key=xxxxx"},
		// Malformed Spark Connect URLs: the token is still masked.
		{"sc://127.0.0.1:12043;token=TOKJ", "sc://127.0.0.1:12043;token=xxxxx"},
		{"sc://h:1/?token=TOKQ", "sc://h:1/?token=xxxxx"},
		{"http://h/l?namespace=etl", "http://h/l?namespace=etl"},
		// A user name alone is a token's form: masked.
		{"https://ghp_T0KEN4@pg:9091/", "https://xxxxx@pg:9091/"},
		{"sc://T0KENUSER@h:1", "sc://xxxxx@h:1"},
		{"sc://127.0.0.1:15002", "sc://127.0.0.1:15002"},
		{"sc://h:443/;use_ssl=true;token=SPARKSECRET;user_id=etl", "sc://h:443/;use_ssl=true;token=xxxxx;user_id=etl"},
		{"SC://h:443/;Token=abc", "SC://h:443/;Token=xxxxx"},
		{"http://a b:c@%zz/", "http://xxxxx"},
		// A mistyped scheme parses as a scheme and a path: the secret
		// went out whole.
		{"sc:/spark.internal:15002/;token=TOKS", "sc:/spark.internal:15002/;token=xxxxx"},
		{"sc//spark.internal:15002/;token=TOKD", "sc//spark.internal:15002/;token=xxxxx"},
		{"sc:spark.internal:15002/;token=TOKC", "sc:spark.internal:15002/;token=xxxxx"},
		{"http:/u:PWA1@h:4040", "http:xxxxx@h:4040"},
		{"http//u:PWA4@h:5000/api", "http//u:xxxxx@h:5000/api"},
		// Another scheme with a host: the token in the path still masked.
		{"ssc://spark.internal:15002/;token=TOKS2", "ssc://spark.internal:15002/;token=xxxxx"},
		{"grpc://h:1/;token=TOKG", "grpc://h:1/;token=xxxxx"},
		// A password in a Spark Connect URL's user info.
		{"sc://etl:SECRETPW@127.0.0.1:1", "sc://etl:xxxxx@127.0.0.1:1"},
		{"sc://etl:SECRETPW@h:1/;token=T1", "sc://etl:xxxxx@h:1/;token=xxxxx"},
		// No host, and a secret in the query: masked as in any URL.
		{"marquez:5000/api/v1/lineage?api_key=SEKRET", "marquez:5000/api/v1/lineage?api_key=xxxxx"},
		{"http:/pushgw:9091/?password=SEKRET2", "http:/pushgw:9091/?password=xxxxx"},
		// A password holding '@' or '/': the last '@' ends it, as net/url reads it.
		{"sc://bob:p@ss@127.0.0.1:1/;token=T0K9", "sc://bob:xxxxx@127.0.0.1:1/;token=xxxxx"},
		{"sc://bob:pa/ss@127.0.0.1:1/;token=T0K9", "sc://bob:xxxxx@127.0.0.1:1/;token=xxxxx"},
		// A password holding '?', with no host: masked whole.
		{"http:/ol:Tr0ub?dor@lineage.internal:5000/api", "http:xxxxx@lineage.internal:5000/api"},
		// No secret in it: shown as given, which the refusal is about.
		{"marquez:5000/api/v1/lineage", "marquez:5000/api/v1/lineage"},
		{"file:///tmp/raw ", "file:///tmp/raw "},
		{"pushgateway.monitoring:9091", "pushgateway.monitoring:9091"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	raw := "http://puser:p%40ss@127.0.0.1:18802/x?api_key=SECRET+Q&ns=etl"
	text := `Post "http://puser:p%40ss@127.0.0.1:18802/x?api_key=SECRET+Q&ns=etl": unexpected status code 500 while pushing to ` + raw + ` (p@ss, SECRET Q)`
	got := Text(text, raw)
	for _, secret := range []string{"p%40ss", "p@ss", "SECRET+Q", "SECRET Q"} {
		if strings.Contains(got, secret) {
			t.Errorf("Text kept %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "ns=etl") {
		t.Errorf("Text masked a value that is no secret: %s", got)
	}
	if got := Text("spark sc://h:1/;token=SPARKSECRET: [UNAVAILABLE]", "sc://h:1/;token=SPARKSECRET"); strings.Contains(got, "SPARKSECRET") {
		t.Errorf("Text kept the Spark token: %s", got)
	}
	// A token given as the user name, as a library prints the request.
	if got := Text(`Post "https://ghp_T0KEN77abcdefXYZ@pg:9091/metrics/job/x": dial tcp: refused (user ghp_T0KEN77abcdefXYZ)`, "https://ghp_T0KEN77abcdefXYZ@pg:9091/"); strings.Contains(got, "T0KEN77") {
		t.Errorf("Text kept the token given as the user name: %s", got)
	}
	// A plain name is masked before its '@' only: masked wherever it
	// stood, it blanked the host and the path of the error (review CO).
	raw = "http://lineage@lineage.invalid/api/v1/lineage"
	got = Text(`Post "`+raw+`": dial tcp: lookup lineage.invalid: no such host`, raw)
	if strings.Contains(got, "lineage@") || !strings.Contains(got, "lookup lineage.invalid") || !strings.Contains(got, "/api/v1/lineage") {
		t.Errorf("Text of a plain user name: %s", got)
	}
	// Escapes Go would not write are masked as written: a library prints
	// the URL as it was given.
	for _, tc := range []struct{ raw, secret string }{
		{"http://pg:MKPW%2fB1@127.0.0.1:1", "MKPW%2fB1"},
		{"http://pg:MKPW%20B2@127.0.0.1:1", "MKPW%20B2"},
		{"http://127.0.0.1:1/l?api_key=MKQ%20A1", "MKQ%20A1"},
		{"http://127.0.0.1:1/l?apikey=MKQ;A9", "MKQ"},
	} {
		if got := Text("while pushing to "+tc.raw+": 500", tc.raw); strings.Contains(got, tc.secret) {
			t.Errorf("Text kept %q: %s", tc.secret, got)
		}
	}
}

// TestValue: a secret-named setting's value is masked, in itself and in an
// error that quotes it; another's is kept.
func TestValue(t *testing.T) {
	if Value("spark.hadoop.fs.s3a.secret.key", "S3CR3T") != Mask || Value("spark.sql.shuffle.partitions", "8") != "8" {
		t.Error("Value masked the wrong setting")
	}
	err := SettingError(errors.New(`set spark.authenticate.secret = S3CR3T: refused "S3CR3T"`), "spark.authenticate.secret", "S3CR3T")
	if strings.Contains(err.Error(), "S3CR3T") {
		t.Errorf("SettingError kept the value: %v", err)
	}
	if plain := errors.New("x = 8"); SettingError(plain, "spark.sql.shuffle.partitions", "8") != plain {
		t.Error("SettingError wrapped a setting that is no secret")
	}
}

// TestSettings: an engine setting whose name says it holds a secret is
// masked in the copy, the others kept; the original is untouched.
func TestSettings(t *testing.T) {
	in := map[string]string{
		"spark.hadoop.fs.s3a.secret.key":    "s3cr3t",
		"spark.hadoop.fs.s3a.access.key":    "AKIA",
		"spark.hadoop.fs.s3a.session.token": "tok",
		"spark.sql.shuffle.partitions":      "8",
		"memory_limit":                      "6GB",
		"azure_storage_connection_string":   "AccountName=a;AccountKey=K",
	}
	got := Settings(in)
	want := map[string]string{
		"spark.hadoop.fs.s3a.secret.key":    Mask,
		"spark.hadoop.fs.s3a.access.key":    Mask,
		"spark.hadoop.fs.s3a.session.token": Mask,
		"spark.sql.shuffle.partitions":      "8",
		"memory_limit":                      "6GB",
		"azure_storage_connection_string":   Mask,
	}
	if !maps.Equal(got, want) {
		t.Errorf("Settings = %v, want %v", got, want)
	}
	if in["spark.hadoop.fs.s3a.secret.key"] != "s3cr3t" {
		t.Error("Settings changed its argument")
	}
	if Settings(nil) != nil {
		t.Error("Settings(nil) is not nil")
	}
}

// TestTextKeepsShortSecretsReadable: a password of a few characters is
// masked in the URL, but not blanked out of every word of a library's
// error ("rpc" read "rxxxxxc").
func TestTextKeepsShortSecretsReadable(t *testing.T) {
	raw := "sc://bob:p@127.0.0.1:1/;token=T0KEN9"
	text := "connect sc://bob:p@127.0.0.1:1/;token=T0KEN9: rpc error: transport: dial tcp"
	got := Text(text, raw)
	if !strings.Contains(got, "rpc error: transport: dial tcp") || strings.Contains(got, "T0KEN9") {
		t.Errorf("Text = %q: want the error's words whole and the token masked", got)
	}
	if got := Text("dial "+raw+": refused", raw); got != "dial sc://bob:xxxxx@127.0.0.1:1/;token=xxxxx: refused" {
		t.Errorf("Text = %q: want the URL as given masked whole", got)
	}
	if u := URL(raw); u != "sc://bob:xxxxx@127.0.0.1:1/;token=xxxxx" {
		t.Errorf("URL = %q: want the short password masked in the URL", u)
	}
}

// TestTextAsNetHTTPPrintsIt: net/http prints a URL with its password as
// *** and the rest as parsed: a secret under the free-text minimum (a
// three-character api_key) went out in it.
func TestTextAsNetHTTPPrintsIt(t *testing.T) {
	raw := "http://ol:s3cretpw@127.0.0.1:1/api/v1/lineage?api_key=k9z"
	got := Text(`Post "http://ol:***@127.0.0.1:1/api/v1/lineage?api_key=k9z": dial tcp 127.0.0.1:1: connect: connection refused`, raw)
	if strings.Contains(got, "k9z") || strings.Contains(got, "s3cretpw") || !strings.Contains(got, "connection refused") {
		t.Errorf("Text = %q", got)
	}
}
