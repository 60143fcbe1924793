package s3test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	Pass             Fault = iota // forward it and return the server's reply
	Status500                     // reply 500 InternalError without forwarding
	Status503                     // reply 503 SlowDown without forwarding
	Slow                          // forward it, and reply after a delay
	Reset                         // reset the connection without forwarding
	ReplyLost                     // forward it (the server applies it), then reset instead of replying
	NotImplemented                // reply 501 NotImplemented without forwarding (a server without conditional writes)
	IgnoreConditions              // forward it without If-None-Match and If-Match, re-signed (a server that ignores them)
	Frozen                        // never answer: hold the request until the client gives up (a frozen endpoint)
	Denied                        // reply 403 AccessDenied without forwarding (a policy that does not grant it)
	BodyCut                       // forward it, send the headers and half the body, then reset (a connection lost mid-download)
	BodyStall                     // forward it, send the headers and half the body, then hold until the client gives up
	NotFound                      // reply 404 NoSuchKey without forwarding (a store that loses an object for a moment)
)

func (f Fault) String() string {
	return [...]string{"pass", "500", "503", "slow", "reset", "reply-lost", "501", "ignore-conditions", "frozen", "403", "body-cut", "body-stall", "404"}[f]
}

// Request is what a rule sees of a request.
type Request struct {
	Method string
	Key    string // the object key (path-style: without the bucket), "" for a bucket request
	Prefix string // a listing's prefix parameter
	N      int    // how many requests the proxy has seen before this one
}

// Proxy is an S3 fault proxy on 127.0.0.1 in front of the test server: a
// client pointed at it (AWS_ENDPOINT_URL) reaches the real server, except
// where Rule injects a fault. Requests keep their Host header, so their
// signatures still verify at the server.
type Proxy struct {
	URL string

	mu       sync.Mutex
	rule     func(Request) Fault
	n        int
	injected map[Fault]int
	target   *url.URL
	client   *http.Client
	srv      *http.Server
	delay    time.Duration
}

// StartProxy starts a proxy in front of the server at AWS_ENDPOINT_URL
// (failing the test when there is none) and stops it when the test ends.
// The rule starts as Pass for every request.
func StartProxy(t testing.TB) *Proxy {
	t.Helper()
	Location(t) // the server must be configured
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{
		URL: "http://" + ln.Addr().String(), target: target, injected: map[Fault]int{},
		rule: func(Request) Fault { return Pass }, delay: 100 * time.Millisecond,
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}},
	}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// SetRule replaces the rule.
func (p *Proxy) SetRule(rule func(Request) Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = rule
}

// Injected counts the faults injected so far, by kind.
func (p *Proxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Fault]int{}
	for k, v := range p.injected {
		out[k] = v
	}
	return out
}

// Env is the environment that points a process at the proxy.
func (p *Proxy) Env() []string {
	return []string{"AWS_ENDPOINT_URL=" + p.URL, "AWS_ENDPOINT_URL_S3=" + p.URL}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/")
	if _, rest, ok := strings.Cut(key, "/"); ok {
		key = rest
	} else {
		key = ""
	}
	p.mu.Lock()
	f := p.rule(Request{Method: r.Method, Key: key, Prefix: r.URL.Query().Get("prefix"), N: p.n})
	p.n++
	if f != Pass {
		p.injected[f]++
	}
	p.mu.Unlock()

	switch f {
	case Frozen:
		<-r.Context().Done()
		return
	case Status500, Status503, NotImplemented, Denied, NotFound:
		code, name := http.StatusInternalServerError, "InternalError"
		switch f {
		case NotFound:
			code, name = http.StatusNotFound, "NoSuchKey"
		case Denied:
			code, name = http.StatusForbidden, "AccessDenied"
		case Status503:
			code, name = http.StatusServiceUnavailable, "SlowDown"
		case NotImplemented:
			code, name = http.StatusNotImplemented, "NotImplemented"
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(code)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the test proxy</Message></Error>`, name)
		return
	case Reset:
		reset(w)
		return
	}
	resp, err := p.forward(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		reset(w)
		return
	}
	switch f {
	case ReplyLost:
		reset(w)
		return
	case Slow:
		time.Sleep(p.delay)
	case IgnoreConditions:
		// The request is signed, so the proxy cannot strip its condition;
		// it hides the refusal instead, which is all a client can see of
		// a server that ignores If-None-Match.
		if resp.StatusCode == http.StatusPreconditionFailed {
			w.Header().Set("ETag", `"ignored-condition"`)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if f == BodyCut || f == BodyStall {
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		if f == BodyStall {
			<-r.Context().Done()
		}
		reset(w)
		return
	}
	_, _ = w.Write(body)
}

func (p *Proxy) forward(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // the signature covers the Host the client sent
	out.ContentLength = int64(len(body))
	return p.client.Do(out)
}

// reset closes the client's connection with a TCP reset.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("s3test: the proxy's ResponseWriter cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}
