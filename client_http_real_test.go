package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// realHTTP serves our own StreamableHTTPHandler on loopback at /mcp,
// behind a wrapper that counts the JSON-RPC methods POSTed to it (and may
// tamper with a request first), so that the client is tested against the
// error responses our server really sends rather than a fake's.
type realHTTP struct {
	h  *StreamableHTTPHandler
	ts *httptest.Server

	// inflight counts the handler calls still running: a client may see
	// its response before the handler has returned and marked the
	// session inactive.
	inflight sync.WaitGroup

	mu    sync.Mutex
	posts map[string]int
	// tamper, when set, may change a POSTed request before the handler
	// sees it; it returns the body to pass on.
	tamper func(r *http.Request, m *jsonrpc.Request, body []byte) []byte
}

type realHTTPConfig struct {
	opts StreamableHTTPOptions
	// prmResource, when not empty, is served as the resource of the
	// protected resource metadata at /.well-known/oauth-protected-resource/mcp
	// (a leading "/" is relative to the server's origin).
	prmResource string
}

func newRealHTTP(t *testing.T, cfg realHTTPConfig) *realHTTP {
	t.Helper()
	srv, err := NewServer(ServerOptions{Name: "real", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type textIn struct {
		Text string `json:"text"`
	}
	if err := AddTool(srv, &Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, _ *RequestHandlerExtra, in textIn) (string, error) {
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	rh := &realHTTP{h: NewStreamableHTTPHandler(srv, cfg.opts), posts: map[string]int{}}
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", rh.serve)
	if cfg.prmResource != "" {
		mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
			res := cfg.prmResource
			if strings.HasPrefix(res, "/") {
				res = base + res
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":["https://as.example.com"]}`, res)
		})
	}
	rh.ts = httptest.NewServer(mux)
	base = rh.ts.URL
	t.Cleanup(func() {
		_ = rh.h.Close() // ends the streams first, so ts.Close does not wait on them
		rh.ts.Close()
	})
	return rh
}

func (rh *realHTTP) url() string { return rh.ts.URL + "/mcp" }

func (rh *realHTTP) serve(w http.ResponseWriter, r *http.Request) {
	rh.inflight.Add(1)
	defer rh.inflight.Done()
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		if m, err := jsonrpc.Decode(b, jsonrpc.Limits{}); err == nil {
			if req, ok := m.(*jsonrpc.Request); ok {
				rh.mu.Lock()
				rh.posts[req.Method]++
				tamper := rh.tamper
				rh.mu.Unlock()
				if tamper != nil {
					b = tamper(r, req, b)
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	rh.h.ServeHTTP(w, r)
}

// count returns how many requests with method were POSTed.
func (rh *realHTTP) count(method string) int {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	return rh.posts[method]
}

func (rh *realHTTP) setTamper(f func(r *http.Request, m *jsonrpc.Request, body []byte) []byte) {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	rh.tamper = f
}

func (rh *realHTTP) reset() {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	clear(rh.posts)
}

// bearerOnly is an Authenticate hook accepting only "Bearer good".
func bearerOnly(r *http.Request) (*AuthInfo, *AuthContext, error) {
	if r.Header.Get("Authorization") != "Bearer good" {
		return nil, nil, errors.New("bad or missing token")
	}
	return &AuthInfo{ClientID: "tester"}, nil, nil
}

// wantHTTPError checks that err carries both the *HTTPStatusError of the
// answer and the *jsonrpc.Error of its body.
func wantHTTPError(t *testing.T, err error, status int, code int64) (*HTTPStatusError, *jsonrpc.Error) {
	t.Helper()
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != status {
		t.Fatalf("err %v: no *HTTPStatusError with status %d", err, status)
	}
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("err %v: no *jsonrpc.Error with code %d", err, code)
	}
	if se.RPC == nil || se.RPC.Code != code {
		t.Fatalf("HTTPStatusError.RPC %+v, want code %d", se.RPC, code)
	}
	return se, re
}

func eraName(e Era) string {
	if e == EraUnknown {
		return "auto"
	}
	return e.String()
}

// TestClientHTTPAuthorization: our handler's 401 (a JSON-RPC
// body) is ErrAuthorizationRequired in every era, with both the status and
// the JSON-RPC error inspectable, and no initialize after a refused probe.
func TestClientHTTPAuthorization(t *testing.T) {
	for _, era := range []Era{EraUnknown, EraModern, EraLegacy} {
		t.Run(eraName(era), func(t *testing.T) {
			rh := newRealHTTP(t, realHTTPConfig{opts: StreamableHTTPOptions{Authenticate: bearerOnly}, prmResource: "/mcp"})
			c := NewClient(ClientOptions{Era: era})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.ConnectHTTP(ctx, rh.url(), HTTPClientOptions{})
			if !errors.Is(err, ErrAuthorizationRequired) {
				t.Fatalf("err %v, want ErrAuthorizationRequired", err)
			}
			se, _ := wantHTTPError(t, err, http.StatusUnauthorized, jsonrpc.CodeInvalidRequest)
			if !strings.HasPrefix(se.WWWAuthenticate, "Bearer") || !strings.Contains(err.Error(), "https://as.example.com") {
				t.Fatalf("challenge %q, err %v", se.WWWAuthenticate, err)
			}
			wantDiscover, wantInit := 1, 0
			if era == EraLegacy {
				wantDiscover, wantInit = 0, 1
			}
			if d, i := rh.count(MethodDiscover), rh.count(MethodInitialize); d != wantDiscover || i != wantInit {
				t.Fatalf("%d server/discover, %d initialize; want %d, %d", d, i, wantDiscover, wantInit)
			}
			// The same server accepts the token.
			s, err := c.ConnectHTTP(ctx, rh.url(), HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer good"}}, NoStandaloneStream: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if want := era; want != EraUnknown && s.Era() != want || want == EraUnknown && s.Era() != EraModern {
				t.Fatalf("era %v", s.Era())
			}
		})
	}

	// An era cached from an earlier session is not renegotiated after a
	// 401: the probe is sent once.
	t.Run("cached era", func(t *testing.T) {
		rh := newRealHTTP(t, realHTTPConfig{opts: StreamableHTTPOptions{Authenticate: bearerOnly}})
		c := NewClient(ClientOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := c.ConnectHTTP(ctx, rh.url(), HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer good"}}})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		rh.reset()
		_, err = c.ConnectHTTP(ctx, rh.url(), HTTPClientOptions{})
		if !errors.Is(err, ErrAuthorizationRequired) {
			t.Fatalf("err %v, want ErrAuthorizationRequired", err)
		}
		wantHTTPError(t, err, http.StatusUnauthorized, jsonrpc.CodeInvalidRequest)
		if d, i := rh.count(MethodDiscover), rh.count(MethodInitialize); d != 1 || i != 0 {
			t.Fatalf("%d server/discover, %d initialize; want 1, 0", d, i)
		}
	})

	t.Run("foreign resource", func(t *testing.T) {
		rh := newRealHTTP(t, realHTTPConfig{opts: StreamableHTTPOptions{Authenticate: bearerOnly}, prmResource: "https://evil.example.com/mcp"})
		_, err := NewClient(ClientOptions{}).ConnectHTTP(context.Background(), rh.url(), HTTPClientOptions{})
		if !errors.Is(err, ErrResourceMismatch) || errors.Is(err, ErrAuthorizationRequired) {
			t.Fatalf("err %v, want ErrResourceMismatch", err)
		}
		wantHTTPError(t, err, http.StatusUnauthorized, jsonrpc.CodeInvalidRequest)
	})
}

// TestClientHTTPSessionExpired: when our handler has ended a
// legacy session (idle expiry or DELETE), its 404 ends the ClientSession
// with ErrHTTPSessionExpired, and the status and the JSON-RPC error of the
// body stay inspectable.
func TestClientHTTPSessionExpired(t *testing.T) {
	for _, tc := range []struct {
		name       string
		standalone bool
		end        func(t *testing.T, rh *realHTTP, sid string)
	}{
		{"idle expiry", false, func(t *testing.T, rh *realHTTP, sid string) {
			rh.inflight.Wait() // no request of the session still running
			if n := rh.h.reapIdle(time.Now().Add(2 * time.Hour)); n != 1 {
				t.Fatalf("reaped %d sessions, want 1", n)
			}
		}},
		{"deleted", true, func(t *testing.T, rh *realHTTP, sid string) {
			req, _ := http.NewRequest(http.MethodDelete, rh.url(), nil)
			req.Header.Set(headerSessionID, sid)
			resp, err := rh.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Fatalf("DELETE: %s", resp.Status)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rh := newRealHTTP(t, realHTTPConfig{opts: StreamableHTTPOptions{SessionIdleTimeout: time.Hour}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := NewClient(ClientOptions{Era: EraLegacy}).ConnectHTTP(ctx, rh.url(), HTTPClientOptions{NoStandaloneStream: !tc.standalone})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.ListTools(ctx, ""); err != nil {
				t.Fatal(err)
			}
			s.http.mu.Lock()
			sid := s.http.sessionID
			s.http.mu.Unlock()
			if sid == "" {
				t.Fatal("no legacy session id")
			}
			tc.end(t, rh, sid)

			_, err = s.ListTools(ctx, "")
			if !errors.Is(err, ErrHTTPSessionExpired) {
				t.Fatalf("err %v, want ErrHTTPSessionExpired", err)
			}
			_, re := wantHTTPError(t, err, http.StatusNotFound, jsonrpc.CodeInvalidRequest)
			if !strings.Contains(re.Message, "Session not found") {
				t.Fatalf("message %q", re.Message)
			}
			select {
			case <-s.Done():
			case <-ctx.Done():
				t.Fatal("the session did not end")
			}
			if err := s.Wait(); !errors.Is(err, ErrHTTPSessionExpired) {
				t.Fatalf("Wait: %v", err)
			}
		})
	}
}

// TestClientHTTPModernErrorsRealServer: errors our handler sends with a
// 4xx status in the modern era keep both error types, and a recognised
// modern error in a 400 body during the probe still means modern.
func TestClientHTTPModernErrorsRealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("404 method not found", func(t *testing.T) {
		rh := newRealHTTP(t, realHTTPConfig{})
		s, err := NewClient(ClientOptions{}).ConnectHTTP(ctx, rh.url(), HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = s.GetPrompt(ctx, "nope", nil)
		wantHTTPError(t, err, http.StatusNotFound, jsonrpc.CodeMethodNotFound)
		if errors.Is(err, ErrHTTPSessionExpired) {
			t.Fatalf("a modern 404 is no expired session: %v", err)
		}
	})

	// -32020 in a 400 answer to the probe: the server is modern, so the
	// client does not fall back to initialize.
	t.Run("400 -32020 probe", func(t *testing.T) {
		rh := newRealHTTP(t, realHTTPConfig{})
		rh.setTamper(func(r *http.Request, m *jsonrpc.Request, body []byte) []byte {
			if m.Method == MethodDiscover {
				r.Header.Set(headerMethod, "tools/list")
			}
			return body
		})
		_, err := NewClient(ClientOptions{}).ConnectHTTP(ctx, rh.url(), HTTPClientOptions{})
		wantHTTPError(t, err, http.StatusBadRequest, jsonrpc.CodeHeaderMismatch)
		if n := rh.count(MethodInitialize); n != 0 {
			t.Fatalf("%d initialize after a modern -32020", n)
		}
	})

	// -32022 in a 400 answer: the client retries discover at a version
	// the server lists.
	t.Run("400 -32022 probe", func(t *testing.T) {
		rh := newRealHTTP(t, realHTTPConfig{})
		var done atomic.Bool
		rh.setTamper(func(r *http.Request, m *jsonrpc.Request, body []byte) []byte {
			if m.Method != MethodDiscover || done.Swap(true) {
				return body
			}
			r.Header.Set(headerProtocolVersion, "2026-01-01")
			return bytes.ReplaceAll(body, []byte(Version20260728), []byte("2026-01-01"))
		})
		s, err := NewClient(ClientOptions{}).ConnectHTTP(ctx, rh.url(), HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Era() != EraModern || rh.count(MethodDiscover) != 2 || rh.count(MethodInitialize) != 0 {
			t.Fatalf("era %v, %d discover, %d initialize", s.Era(), rh.count(MethodDiscover), rh.count(MethodInitialize))
		}
	})
}
