package oauthclient

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// rtFunc is an http.RoundTripper of a function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOAuthTransportCopiesOnlyForToken: until the session holds a token
// its requests go to the base transport as they are (most servers behind
// a gateway ask for none); a token goes on a copy with headers of its own,
// and the caller's request is left as it was.
func TestOAuthTransportCopiesOnlyForToken(t *testing.T) {
	var got *http.Request
	var body string
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	o, err := newOAuthTransport(base, &Config{ClientID: "c"}, "http://127.0.0.1:1/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	newReq := func() *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", bytes.NewReader([]byte(`{"x":1}`)))
		if err != nil {
			t.Fatal(err)
		}
		r.Header["Mcp-Method"] = []string{"tools/call"}
		return r
	}

	req := newReq()
	if _, err := o.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got != req || body != `{"x":1}` {
		t.Errorf("without a token the base got %p (body %q), want the caller's request %p", got, body, req)
	}

	o.mu.Lock()
	o.token = "tok"
	o.mu.Unlock()
	req = newReq()
	if _, err := o.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got == req || got.Header.Get("Authorization") != "Bearer tok" || got.Header.Get("Mcp-Method") != "tools/call" || body != `{"x":1}` {
		t.Errorf("with a token the base got %p (headers %v, body %q), want a copy of %p with the token", got, got.Header, body, req)
	}
	if req.Header.Get("Authorization") != "" || len(req.Header) != 1 {
		t.Errorf("the caller's request was written: %v", req.Header)
	}
}
