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
