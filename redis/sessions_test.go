package redis

import (
	"context"
	"errors"
	"testing"

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
