// Package trinotest gives the tests that run SQL on Trino one way to find
// the server scripts/trino.sh starts, one rule when there is none (fail,
// never skip silently, so CI cannot pass without running Trino), and a
// minimal client of Trino's HTTP protocol.
package trinotest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/techlearningpro/engagement/internal/testenv"
)

// URLEnv and CatalogEnv name the server and its Hive catalog; scripts/test.sh
// starts one (scripts/trino.sh) and exports both.
const (
	URLEnv     = "ENGAGEMENT_TRINO_URL"
	CatalogEnv = "ENGAGEMENT_TRINO_CATALOG"
)

// SkipEnv lets a developer without Java 24+ skip the Trino tests on
// purpose; under CI it is ignored.
const SkipEnv = "ENGAGEMENT_SKIP_TRINO"

// Server is a running Trino coordinator and the Hive catalog the tests use.
type Server struct {
	URL, Catalog string
}

// Connect returns the server or fails the test.
func Connect(t testing.TB) Server {
	t.Helper()
	how := "run the tests with scripts/test.sh, which starts Trino, or `eval \"$(bash scripts/trino.sh start)\"` " +
		"(after scripts/s3.sh start, for S3) to export " + URLEnv + " and " + CatalogEnv
	return Server{URL: testenv.Require(t, URLEnv, SkipEnv, how), Catalog: testenv.Require(t, CatalogEnv, SkipEnv, how)}
}

// Result is one statement's columns and rows; numbers are json.Number, so
// a bigint keeps every digit.
type Result struct {
	Columns []string
	Rows    [][]any
}

type response struct {
	NextURI string `json:"nextUri"`
	Columns []struct {
		Name string `json:"name"`
	} `json:"columns"`
	Data  [][]any `json:"data"`
	Error *struct {
		Message   string `json:"message"`
		ErrorName string `json:"errorName"`
	} `json:"error"`
}

// Query runs one statement (no trailing semicolon) and returns its result,
// following the protocol's nextUri until the query ends.
func (s Server) Query(sql string) (Result, error) {
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(s.URL, "/")+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("X-Trino-User", "engagement-test")
	req.Header.Set("X-Trino-Catalog", s.Catalog)
	var res Result
	for deadline := time.Now().Add(2 * time.Minute); ; {
		r, err := s.do(req)
		if err != nil {
			return Result{}, fmt.Errorf("trino %s: %w", firstLine(sql), err)
		}
		if r.Error != nil {
			return Result{}, fmt.Errorf("trino %s: %s: %s", firstLine(sql), r.Error.ErrorName, r.Error.Message)
		}
		if res.Columns == nil && r.Columns != nil {
			for _, c := range r.Columns {
				res.Columns = append(res.Columns, c.Name)
			}
		}
		res.Rows = append(res.Rows, r.Data...)
		if r.NextURI == "" {
			return res, nil
		}
		if time.Now().After(deadline) {
			return Result{}, fmt.Errorf("trino %s: still running after 2 minutes", firstLine(sql))
		}
		if req, err = http.NewRequest(http.MethodGet, r.NextURI, nil); err != nil {
			return Result{}, err
		}
		req.Header.Set("X-Trino-User", "engagement-test")
	}
}

// do sends one request of the protocol; 502, 503 and 504 mean "ask again".
func (s Server) do(req *http.Request) (response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return response{}, err
		}
	}
	for attempt := 0; ; attempt++ {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return response{}, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return response{}, err
		}
		switch {
		case (resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504) && attempt < 20:
			time.Sleep(100 * time.Millisecond)
			continue
		case resp.StatusCode != http.StatusOK:
			return response{}, fmt.Errorf("%s %s: HTTP %d: %s", req.Method, req.URL, resp.StatusCode, data)
		}
		var r response
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			return response{}, fmt.Errorf("%s %s: decode: %w", req.Method, req.URL, err)
		}
		return r, nil
	}
}

func firstLine(sql string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
	return l
}
