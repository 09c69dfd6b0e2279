package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeSessionHeaders: modern requests, which have no session, get a
// child made for their values of the upstream's SessionHeaders (the same
// values share one, none the plain one), at most MaxHeaderSessions of
// them: the least recently used idle one is stopped for a new one.
func TestBridgeSessionHeaders(t *testing.T) {
	dial, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=1", noRaceExitSleep}, HeaderToEnv: map[string]string{"X-Tenant-Token": "TENANT_TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial, SessionHeaders: []string{"x-tenant-token"}}}, MaxHeaderSessions: 2}, nil)
	h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(tok string) (pid, env string) {
		t.Helper()
		hdr := http.Header{}
		if tok != "" {
			hdr.Set("X-Tenant-Token", tok)
		}
		cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraModern}).ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{Header: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		return callText(t, ctx, cs, "pid"), callText(t, ctx, cs, "env")
	}
	alpha, env := call("alpha")
	if env != "alpha" {
		t.Fatalf("alpha's child has %q", env)
	}
	beta, env := call("beta")
	if env != "beta" || beta == alpha {
		t.Fatalf("beta's child: pid %s (alpha's %s), env %q", beta, alpha, env)
	}
	if again, _ := call("alpha"); again != alpha {
		t.Fatalf("alpha again got child %s, want %s", again, alpha)
	}
	if plain, env := call(""); env != "" || plain == alpha || plain == beta {
		t.Fatalf("no header: pid %s, env %q; want the plain child", plain, env)
	}
	if _, env := call("gamma"); env != "gamma" { // beta's idle child makes room
		t.Fatalf("gamma's child has %q", env)
	}
	if beta2, env := call("beta"); env != "beta" || beta2 == beta {
		t.Fatalf("beta after eviction: pid %s (was %s), env %q; want a new child", beta2, beta, env)
	}

	_, err = New(Options{Upstreams: []Upstream{{Dial: dial, SessionHeaders: []string{"authorization"}}}})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("SessionHeaders naming Authorization: %v, want ErrInvalidOptions", err)
	}
}
