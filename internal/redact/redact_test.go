package redact

import (
	"maps"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://marquez:5000/api/v1/lineage", "http://marquez:5000/api/v1/lineage"},
		{"http://user:pass@127.0.0.1:18802/l?api_key=SECRETQ", "http://user:xxxxx@127.0.0.1:18802/l?api_key=xxxxx"},
		{"http://h/l?namespace=etl&X-Amz-Signature=abc", "http://h/l?X-Amz-Signature=xxxxx&namespace=etl"},
		{"http://h/l?namespace=etl", "http://h/l?namespace=etl"},
		{"https://user@pg:9091/", "https://user@pg:9091/"},
		{"sc://127.0.0.1:15002", "sc://127.0.0.1:15002"},
		{"sc://h:443/;use_ssl=true;token=SPARKSECRET;user_id=etl", "sc://h:443/;use_ssl=true;token=xxxxx;user_id=etl"},
		{"SC://h:443/;Token=abc", "SC://h:443/;Token=xxxxx"},
		{"http://a b:c@%zz/", "http://xxxxx"},
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
	}
	got := Settings(in)
	want := map[string]string{
		"spark.hadoop.fs.s3a.secret.key":    Mask,
		"spark.hadoop.fs.s3a.access.key":    Mask,
		"spark.hadoop.fs.s3a.session.token": Mask,
		"spark.sql.shuffle.partitions":      "8",
		"memory_limit":                      "6GB",
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
