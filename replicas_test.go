package pmcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/reqstate"
)

func sharedKeys(t *testing.T) []reqstate.Key {
	t.Helper()
	k, err := reqstate.NewKey("shared-1")
	if err != nil {
		t.Fatal(err)
	}
	return []reqstate.Key{k}
}

// A server configured as a replica (an EventBus) without a shared
// requestState key ring would seal states its peers reject: NewServer
// refuses it at startup.
func TestReplicaNeedsSharedStateKeys(t *testing.T) {
	_, err := pmcp.NewServer(pmcp.ServerOptions{EventBus: &localBus{}})
	if !errors.Is(err, pmcp.ErrSharedKeysRequired) {
		t.Fatalf("NewServer with an EventBus and no RequestStateKeys: err = %v, want ErrSharedKeysRequired", err)
	}
	if _, err := pmcp.NewServer(pmcp.ServerOptions{EventBus: &localBus{}, RequestStateKeys: sharedKeys(t)}); err != nil {
		t.Fatalf("with shared keys: %v", err)
	}
}

// memSessions is a SessionStore for tests: records in a map, and a set
// of replicas presumed alive.
type memSessions struct {
	mu    sync.Mutex
	recs  map[string]pmcp.SessionRecord
	owner map[string]string
	alive map[string]bool
}

type memReplica struct {
	*memSessions
	name string
}

func (m memReplica) NewSessionID() string {
	return m.name + "." + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func (m memReplica) SaveSession(_ context.Context, rec pmcp.SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[rec.ID], m.owner[rec.ID] = rec, m.name
	return nil
}

func (m memReplica) AdoptSession(_ context.Context, id string) (pmcp.SessionRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	switch {
	case !ok:
		return rec, pmcp.ErrNoSession
	case m.owner[id] != m.name && m.alive[m.owner[id]]:
		return rec, pmcp.ErrSessionOwned
	}
	rec.Epoch++
	m.recs[id], m.owner[id] = rec, m.name
	return rec, nil
}

func (m memReplica) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	delete(m.owner, id)
	return nil
}

// A legacy session whose requests alternate between two replicas works
// (elicitation included) through a SessionRouterFunc that forwards to the
// owner, and survives its owner: the other replica adopts it and replays
// the stored events.
func TestSessionRouterForwardsAndAdopts(t *testing.T) {
	sessions := &memSessions{recs: map[string]pmcp.SessionRecord{}, owner: map[string]string{}, alive: map[string]bool{"a": true, "b": true}}
	events := pmcp.NewMemoryEventStore(pmcp.MemoryEventStoreOptions{}) // shared, as Redis would be
	addrs := map[string]string{}
	var amu sync.Mutex
	type replica struct {
		h   *pmcp.StreamableHTTPHandler
		srv *httptest.Server
	}
	reps := map[string]*replica{}
	forwarded := 0
	for _, name := range []string{"a", "b"} {
		srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		addElicitingTool(t, srv)
		mr := memReplica{sessions, name}
		router := pmcp.SessionRouterFunc(func(w http.ResponseWriter, r *http.Request, id string) bool {
			if r.Header.Get("X-Test-Forwarded") != "" {
				return false
			}
			sessions.mu.Lock()
			owner, alive := sessions.owner[id], sessions.alive[sessions.owner[id]]
			sessions.mu.Unlock()
			if owner == "" || owner == name || !alive {
				return false
			}
			amu.Lock()
			target, _ := url.Parse(addrs[owner])
			forwarded++
			amu.Unlock()
			(&httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Header.Set("X-Test-Forwarded", name)
			}}).ServeHTTP(w, r)
			return true
		})
		h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{EventStore: events, SessionStore: mr, SessionRouter: router})
		hs := httptest.NewServer(h)
		reps[name] = &replica{h: h, srv: hs}
		addrs[name] = hs.URL
	}
	t.Cleanup(func() {
		for _, r := range reps {
			r.srv.Close()
			_ = r.h.Close()
		}
	})
	// A round-robin front.
	var n int
	var nmu sync.Mutex
	rp := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
		nmu.Lock()
		name := []string{"a", "b"}[n%2]
		n++
		nmu.Unlock()
		sessions.mu.Lock()
		if !sessions.alive[name] {
			name = map[string]string{"a": "b", "b": "a"}[name]
		}
		sessions.mu.Unlock()
		u, _ := url.Parse(addrs[name])
		pr.SetURL(u)
	}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex: the transport's last read of the request body may
		// come after a replica's reply; without it the server has closed
		// the body by then and the transport cuts the reply off
		// (golang/go#40747; see redis's TestFrontProxyReplyBeforeBodyCheck).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	ctx := t.Context()
	c := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy, Elicitation: func(context.Context, *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
		return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	cs, err := c.ConnectHTTP(ctx, front.URL, pmcp.HTTPClientOptions{NoStandaloneStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	owner, _, _ := strings.Cut(cs.SessionID(), ".")
	for i := range 4 {
		res, err := cs.CallTool(ctx, "ask", nil)
		if err != nil || resultText(res) != "hello Ada" {
			t.Fatalf("call %d: %v %v", i, res, err)
		}
	}
	if forwarded == 0 {
		t.Fatal("no request was forwarded to the owner")
	}
	// The owner dies: its handler closes (keeping the shared events) and
	// it is no longer alive.
	sessions.mu.Lock()
	sessions.alive[owner] = false
	sessions.mu.Unlock()
	reps[owner].srv.Close()
	_ = reps[owner].h.Close()
	for i := range 2 {
		res, err := cs.CallTool(ctx, "ask", nil)
		if err != nil || resultText(res) != "hello Ada" {
			t.Fatalf("call %d after the owner died: %v %v", i, res, err)
		}
	}
	sessions.mu.Lock()
	now, epoch := sessions.owner[cs.SessionID()], sessions.recs[cs.SessionID()].Epoch
	sessions.mu.Unlock()
	if now == owner || epoch != 1 {
		t.Fatalf("after the owner died the record says owner %q epoch %d", now, epoch)
	}
	// DELETE ends it for good: the record goes.
	_ = cs.Close()
	sessions.mu.Lock()
	_, kept := sessions.recs[cs.SessionID()]
	sessions.mu.Unlock()
	if kept {
		t.Fatal("the record survived DELETE")
	}
}

func addElicitingTool(t *testing.T, srv *pmcp.Server) {
	t.Helper()
	err := pmcp.AddTool(srv, &pmcp.Tool{Name: "ask"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "name?", RequestedSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("hello %v", res.Content["name"]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func resultText(res *pmcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*pmcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// A GET stream forwarded to another replica is idle like a local one: the
// forwarding replica's Shutdown ends it instead of waiting for it.
func TestShutdownEndsForwardedStreams(t *testing.T) {
	owner, err := pmcp.NewServer(pmcp.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addEcho(t, owner)
	ho := pmcp.NewStreamableHTTPHandler(owner, pmcp.StreamableHTTPOptions{})
	so := httptest.NewServer(ho)
	defer so.Close()
	defer ho.Close()
	target, _ := url.Parse(so.URL)
	fwd, err := pmcp.NewServer(pmcp.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	hf := pmcp.NewStreamableHTTPHandler(fwd, pmcp.StreamableHTTPOptions{SessionRouter: pmcp.SessionRouterFunc(func(w http.ResponseWriter, r *http.Request, _ string) bool {
		proxy.ServeHTTP(w, r)
		return true
	})})
	sf := httptest.NewServer(hf)
	defer sf.Close()

	cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy}).ConnectHTTP(t.Context(), so.URL, pmcp.HTTPClientOptions{NoStandaloneStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	req, _ := http.NewRequest(http.MethodGet, sf.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.SessionID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forwarded GET: %s", resp.Status)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hf.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown of the forwarding replica waited for the forwarded stream: %v", err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("Shutdown of the forwarding replica is stuck on the forwarded stream")
	}
}
