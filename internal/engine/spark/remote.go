package spark

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/spark-connect-go/spark/client/channel"
	"golang.org/x/oauth2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/oauth"
)

// channelBuilder is spark-connect-go's builder with a larger receive limit,
// and the URL's parameters as the Spark Connect spec reads them.
type channelBuilder struct {
	*channel.BaseBuilder
	token  string
	useSSL bool
}

// remoteParams are the parameters a Spark Connect URL may carry.
var remoteParams = []string{"token", "use_ssl", "user_id", "user_agent", "session_id"}

func newChannel(remote string) (*channelBuilder, error) {
	b, err := channel.NewBuilder(remote)
	if err != nil {
		return nil, err
	}
	cb := &channelBuilder{BaseBuilder: b}
	// Read here, not by the library's builder: it kept a parameter only
	// when '=' split it in exactly two, so a base64 token's padding (abc==)
	// dropped the token and the job ran in plaintext without one; and it
	// ignored use_ssl=true. An unknown parameter (a typo) went out as a
	// header, unchecked.
	if _, params, ok := strings.Cut(remote, "/;"); ok {
		for _, p := range strings.Split(params, ";") {
			if strings.TrimSpace(p) == "" {
				continue
			}
			k, v, ok := strings.Cut(p, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			switch {
			case !ok:
				return nil, fmt.Errorf("parameter %q: want name=value", k)
			case k == "token":
				cb.token = v
			case k == "use_ssl":
				switch strings.ToLower(v) {
				case "true":
					cb.useSSL = true
				case "false":
				default:
					return nil, fmt.Errorf("use_ssl=%s: want true or false", v)
				}
			case !slices.Contains(remoteParams, k):
				return nil, fmt.Errorf("unknown parameter %q (a Spark Connect URL takes %s)", k, strings.Join(remoteParams, ", "))
			}
		}
	}
	return cb, nil
}

// Build repeats BaseBuilder.Build with the URL's own parameters: TLS with
// use_ssl=true or a token (sent as a bearer token), plaintext otherwise,
// and the receive limit.
func (cb *channelBuilder) Build(ctx context.Context) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithAuthority(cb.Host()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)),
	}
	if cb.token == "" && !cb.useSSL {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		roots, err := x509.SystemCertPool()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
		if cb.token != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(oauth.TokenSource{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{
				AccessToken: cb.token, TokenType: "bearer"})}))
		}
	}
	return grpc.NewClient(fmt.Sprintf("%s:%d", cb.Host(), cb.Port()), opts...)
}
