package spark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
)

// rawCodec sends and receives already-encoded protobuf bytes: the Spark
// Connect messages of spark-connect-go are in an internal package.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// ReleaseOnServer ends e's session on the server, as the server does to a
// session that timed out: the session's next request is refused.
func ReleaseOnServer(ctx context.Context, e *Engine) error {
	cb, err := newChannel(e.remote)
	if err != nil {
		return err
	}
	conn, err := cb.Build(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// ReleaseSessionRequest: session_id = 1, user_context = 2 (user_id = 1).
	user := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), cb.User())
	req := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), e.sessionID())
	req = protowire.AppendBytes(protowire.AppendTag(req, 2, protowire.BytesType), user)
	var resp []byte
	if err := conn.Invoke(ctx, "/spark.connect.SparkConnectService/ReleaseSession", &req, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return fmt.Errorf("release session %s: %w", e.sessionID(), err)
	}
	return nil
}

// WeakenKeyHash makes e's uniqueness hash take n values, so distinct keys
// collide and the exact pass must decide.
func WeakenKeyHash(e *Engine, n int) {
	e.keyHash = func(cols string) string { return fmt.Sprintf("pmod(xxhash64(%s), %d)", cols, n) }
}

// AggregatesUpTo makes e count its inputs' dates with aggregates of their
// own up to n dates, grouped by the date's index past it (-1: grouped
// always; 0: the engine's own).
func AggregatesUpTo(e *Engine, n int) { e.aggregatesUpTo = n }

// Merges is how many times e built the fact grain again with a fact row's
// courses merged.
func Merges(e *Engine) int { return e.merges }

// SessionCaches lists the in-memory tables the server still holds whose
// data e's session computed: the cached RDDs that a stage of one of the
// session's jobs made. Other sessions' caches (other tests, other
// packages on the same cluster) are left out.
func SessionCaches(ctx context.Context, e *Engine) ([]string, error) {
	c, why := e.openUI(ctx)
	if c == nil {
		return nil, fmt.Errorf("spark UI: %s", why)
	}
	var cached []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	if err := c.get(ctx, "/storage/rdd", &cached); err != nil {
		return nil, err
	}
	jobs, err := c.sessionJobs(ctx, e.sessionID(), -1)
	if err != nil {
		return nil, err
	}
	mine := map[int]bool{}
	for _, j := range jobs {
		for _, id := range j.StageIDs {
			var attempts []restStage
			if err := c.get(ctx, fmt.Sprintf("/stages/%d", id), &attempts); err != nil {
				continue // a stage the UI no longer retains
			}
			for _, a := range attempts {
				for _, r := range a.RDDIDs {
					mine[r] = true
				}
			}
		}
	}
	var out []string
	for _, r := range cached {
		if mine[r.ID] {
			out = append(out, fmt.Sprintf("%s (rdd %d)", r.Name, r.ID))
		}
	}
	return out, nil
}

// HoldingProxy is a Spark Connect endpoint in front of backend (an sc://
// URL) that forwards every request, byte for byte, save those whose method
// hold picks: it takes them and never answers, as an overloaded or stuck
// server did. It returns the proxy's sc:// URL.
func HoldingProxy(t testing.TB, backend string, hold func(method string) bool) string {
	t.Helper()
	return proxy(t, backend, hold, nil)
}

// ConfigProxy is a Spark Connect endpoint in front of backend that forwards
// every request, and answers value for key in every configuration reply
// that names key, as a server started with --conf key=value would: the
// shared server is not restarted for it. It returns the proxy's sc:// URL.
func ConfigProxy(t testing.TB, backend, key, value string) string {
	t.Helper()
	return proxy(t, backend, func(string) bool { return false }, func(method string, m []byte) []byte {
		if method != "/spark.connect.SparkConnectService/Config" {
			return m
		}
		return configAnswer(t, m, key, value)
	})
}

// configAnswer rewrites a ConfigResponse (pairs = 2, each a KeyValue: key =
// 1, value = 2) so that key's pair holds value; other fields pass as sent.
func configAnswer(t testing.TB, m []byte, key, value string) []byte {
	var out []byte
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			t.Errorf("config reply: %v", protowire.ParseError(n))
			return m
		}
		size := protowire.ConsumeFieldValue(num, typ, m[n:])
		if size < 0 {
			t.Errorf("config reply: %v", protowire.ParseError(size))
			return m
		}
		field := m[:n+size]
		if num == 2 && typ == protowire.BytesType {
			pair, _ := protowire.ConsumeBytes(m[n:])
			if k, ok := pairKey(pair); ok && k == key {
				kv := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
				kv = protowire.AppendString(protowire.AppendTag(kv, 2, protowire.BytesType), value)
				field = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), kv)
			}
		}
		out = append(out, field...)
		m = m[n+size:]
	}
	return out
}

// pairKey is a KeyValue's key.
func pairKey(kv []byte) (string, bool) {
	for len(kv) > 0 {
		num, typ, n := protowire.ConsumeTag(kv)
		if n < 0 {
			return "", false
		}
		if num == 1 && typ == protowire.BytesType {
			k, m := protowire.ConsumeString(kv[n:])
			return k, m >= 0
		}
		size := protowire.ConsumeFieldValue(num, typ, kv[n:])
		if size < 0 {
			return "", false
		}
		kv = kv[n+size:]
	}
	return "", false
}

// proxy forwards every request to backend save those hold takes (never
// answered), passing each reply through rewrite (nil: as sent).
func proxy(t testing.TB, backend string, hold func(method string) bool, rewrite func(method string, m []byte) []byte) string {
	cb, err := newChannel(backend)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cb.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	handler := func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		if hold(method) {
			<-ss.Context().Done()
			return ss.Context().Err()
		}
		md, _ := metadata.FromIncomingContext(ss.Context())
		ctx := metadata.NewOutgoingContext(ss.Context(), md.Copy())
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		go func() {
			for {
				var m []byte
				if err := ss.RecvMsg(&m); err != nil {
					cs.CloseSend()
					return
				}
				if err := cs.SendMsg(&m); err != nil {
					return
				}
			}
		}()
		for {
			var m []byte
			if err := cs.RecvMsg(&m); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if rewrite != nil {
				m = rewrite(method, m)
			}
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(handler), grpc.ForceServerCodec(rawCodec{}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return "sc://" + l.Addr().String()
}
