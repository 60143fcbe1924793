package spark_test

import (
	"context"
	"testing"

	"github.com/techlearningpro/engagement/internal/engine/spark"
	"github.com/techlearningpro/engagement/internal/engine/spark/sparktest"
)

// TestUseSSLIsTLS: use_ssl=true asks for TLS. Against the test server,
// which speaks plaintext, the connection fails; it went through in
// plaintext, as if the parameter were not there.
func TestUseSSLIsTLS(t *testing.T) {
	remote := sparktest.Remote(t)
	if e, err := spark.Open(context.Background(), remote, nil); err != nil {
		t.Fatalf("plaintext: %v", err)
	} else {
		e.Close()
	}
	if e, err := spark.Open(context.Background(), remote+"/;use_ssl=true", nil); err == nil {
		e.Close()
		t.Fatal("use_ssl=true connected to a plaintext server: the parameter was ignored")
	}
}
