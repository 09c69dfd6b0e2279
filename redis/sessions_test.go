package redis

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

func newSessions(t *testing.T, name, addr, prefix string) *Sessions {
	t.Helper()
	s, err := NewSessions(context.Background(), needRedis(t), SessionsOptions{Replica: name, Advertise: addr, Secret: []byte("0123456789abcdef"), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The record and ownership rules: a live owner keeps its session; a
// closed (deregistered) one loses it to the first replica that adopts.
func TestSessionsRecordAndAdopt(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix("sess")
	a := newSessions(t, "a", "127.0.0.1:1", prefix)
	b := newSessions(t, "b", "127.0.0.1:2", prefix)
	id := a.NewSessionID()
	if err := a.SaveSession(ctx, pmcp.SessionRecord{ID: id, Principal: "p", InitParams: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdoptSession(ctx, id); !errors.Is(err, pmcp.ErrSessionOwned) {
		t.Fatalf("adopting from a live owner: %v", err)
	}
	if _, err := b.AdoptSession(ctx, "nope"); !errors.Is(err, pmcp.ErrNoSession) {
		t.Fatalf("adopting an unknown session: %v", err)
	}
	_ = a.Close()
	rec, err := b.AdoptSession(ctx, id)
	if err != nil || rec.Principal != "p" || string(rec.InitParams) != `{"x":1}` || rec.Epoch != 1 {
		t.Fatalf("adopt after the owner left: %+v %v", rec, err)
	}
	if err := b.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdoptSession(ctx, id); !errors.Is(err, pmcp.ErrNoSession) {
		t.Fatalf("after delete: %v", err)
	}
}

// Only a peer holding the secret can mark a request as forwarded (which
// stops the receiver from forwarding it to the owner): a client's forged,
// replayed-elsewhere or stale header is ignored.
func TestForwardSignature(t *testing.T) {
	prefix := uniquePrefix("sig")
	a := newSessions(t, "a", "127.0.0.1:1", prefix)
	other, err := NewSessions(t.Context(), needRedis(t), SessionsOptions{Replica: "x", Advertise: "127.0.0.1:3", Secret: []byte("another secret, 16+ bytes"), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	req := func(method, header string) *http.Request {
		r := httptest.NewRequest(method, "/mcp", nil)
		if header != "" {
			r.Header.Set(ForwardHeader, header)
		}
		return r
	}
	now := time.Now()
	good := a.sign(http.MethodPost, "a.s1", now)
	if !a.verifyForwarded(req(http.MethodPost, good), "a.s1") {
		t.Fatal("a valid signature was refused")
	}
	for name, tc := range map[string]struct {
		r  *http.Request
		id string
	}{
		"none":          {req(http.MethodPost, ""), "a.s1"},
		"forged":        {req(http.MethodPost, "a."+strconv.FormatInt(now.UnixMilli(), 10)+".AAAA"), "a.s1"},
		"other session": {req(http.MethodPost, good), "a.s2"},
		"other method":  {req(http.MethodDelete, good), "a.s1"},
		"other secret":  {req(http.MethodPost, other.sign(http.MethodPost, "a.s1", now)), "a.s1"},
		"stale":         {req(http.MethodPost, a.sign(http.MethodPost, "a.s1", now.Add(-time.Minute))), "a.s1"},
		"malformed":     {req(http.MethodPost, "garbage"), "a.s1"},
	} {
		if a.verifyForwarded(tc.r, tc.id) {
			t.Errorf("%s: accepted", name)
		}
	}
}
