package pmcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// incomparableCtx is a context of a type that == cannot compare.
type incomparableCtx struct {
	context.Context
	tags []string
}

// TestSharedCallTimeout: calls made with the same ctx in one time slice
// share a timeout context from the second on, whose deadline gives each
// at least the call timeout; other parents, and parents of a type that
// cannot be compared, get none (and no panic).
func TestSharedCallTimeout(t *testing.T) {
	a, b := memory.NewPipe()
	go fakePeer(b)
	defer b.Close()
	s, err := NewClient(ClientOptions{}).Connect(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const d = time.Hour // slices of 56 s: the calls below share one
	parent := context.WithValue(context.Background(), struct{}{}, "v")
	start := time.Now()
	if c := s.sharedTimeout(parent, d); c != nil {
		t.Fatal("first call with a parent shares a timeout")
	}
	c := s.sharedTimeout(parent, d)
	if c == nil {
		t.Fatal("second call with the same parent does not share")
	}
	dl, ok := c.Deadline()
	if !ok || dl.Before(start.Add(d)) || dl.After(time.Now().Add(d+d/timeoutSlices)) {
		t.Fatalf("shared deadline %v, want within [%v, +%v]", dl, start.Add(d), d/timeoutSlices)
	}
	if c.Value(struct{}{}) != "v" {
		t.Fatal("the shared context lost its parent's values")
	}
	if again := s.sharedTimeout(parent, d); again != c {
		t.Fatal("third call does not reuse the shared context")
	}
	if other := s.sharedTimeout(context.Background(), d); other != nil {
		t.Fatal("another parent got the shared context")
	}
	ic := incomparableCtx{Context: context.Background(), tags: []string{"x"}}
	for range 2 {
		if got := s.sharedTimeout(ic, d); got != nil {
			t.Fatal("an incomparable parent was shared")
		}
	}
	// Close ends the shared context it still holds.
	s.sharedTimeout(parent, d)
	shared := s.sharedTimeout(parent, d)
	_ = s.Close()
	if shared == nil {
		t.Fatal("no shared context before Close")
	}
	<-shared.Done()
}

// TestSharedCallTimeoutStillBoundsEachCall: concurrent calls made with
// one ctx (so sharing their timeout) each fail with DeadlineExceeded, and
// none before the call timeout.
func TestSharedCallTimeoutStillBoundsEachCall(t *testing.T) {
	_, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	const d = 50 * time.Millisecond
	s := connectClient(t, NewClient(ClientOptions{CallTimeout: d}), st)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			start := time.Now()
			_, err := s.CallTool(ctx, "slow", nil)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) || took < d || took > 5*time.Second {
				t.Errorf("err %v after %v (timeout %v)", err, took, d)
			}
		})
	}
	wg.Wait()
}
