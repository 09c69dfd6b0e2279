package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
)

// protectedServer serves the everything server on loopback behind the
// resource server `pmcp serve --auth-issuer` mounts (auth.NewAuthenticator
// and the protected resource metadata), with the endpoint itself as the
// audience. It returns the endpoint and the issuer.
func protectedServer(t *testing.T) (endpoint string, as *fakeIssuer) {
	t.Helper()
	as = newFakeIssuer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint = "http://" + ln.Addr().String() + "/mcp"
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	var hopts pmcp.StreamableHTTPOptions
	sec := serveSecurity{issuer: as.ts.URL, audience: endpoint}
	if err := sec.apply(context.Background(), ln.Addr().String(), mux, &hopts, io.Discard); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, hopts)
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() }) // after the server's own cleanup
	mux.Handle("/mcp", h)
	serveOn(t, ln, mux)
	return endpoint, as
}

// TestRefusedToken: a server that refuses the token given with -H
// (another audience, expired) is reported in its own words with what to
// do, without starting OAuth; no token and no terminal says to run pmcp
// login; --no-auth speaks of the CLI's flags. Each is one line, exit 3.
func TestRefusedToken(t *testing.T) {
	endpoint, as := protectedServer(t)
	store := "--token-store=" + t.TempDir() + "/tokens.json"
	good := as.mint(t, endpoint, "")
	if code, out, errs := cli(t, "call", "add", "a=1", "b=2", "--url", endpoint, store, "-H", "Authorization: Bearer "+good); code != exitOK {
		t.Fatalf("good token: exit %d %s%s", code, out, errs)
	}
	for _, c := range []struct {
		name  string
		args  []string
		want  []string
		never []string
	}{
		{"other audience", []string{"-H", "Authorization: Bearer " + as.mint(t, "https://other.example.com/mcp", "")},
			[]string{"refused the token given with --header", "invalid_token", "pmcp login --url " + endpoint}, []string{"registration"}},
		{"no token", nil,
			[]string{"pmcp login --url " + endpoint}, []string{"registration"}},
		{"--no-auth", []string{"--no-auth"},
			[]string{"requires authorization", "--no-auth", "--header"}, []string{"HTTPClientOptions"}},
	} {
		code, _, errs := cli(t, append([]string{"call", "add", "a=1", "b=2", "--url", endpoint, store}, c.args...)...)
		if code != exitConn {
			t.Errorf("%s: exit %d", c.name, code)
		}
		t.Logf("%s: %s", c.name, errs)
		oneLine(t, c.name, errs)
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q lacks %q", c.name, errs, w)
			}
		}
		for _, w := range c.never {
			if strings.Contains(errs, w) {
				t.Errorf("%s: %q says %q", c.name, errs, w)
			}
		}
	}
}
