package rpcconn

import (
	"context"
	"errors"
	"github.com/gopmcp/pmcp/jsonrpc"
	"strconv"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestPendingAddAllocatesIncreasingIntegerIDs(t *testing.T) {
	p := NewPending()
	for want := int64(1); want <= 3; want++ {
		id, ch := p.Add()
		if got, ok := id.Int64(); !ok || got != want {
			t.Fatalf("Add id = %v, want integer %d", id, want)
		}
		if cap(ch) != 1 {
			t.Fatalf("waiter channel capacity = %d, want 1", cap(ch))
		}
	}
	if got := p.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	// Independent instances have independent counters.
	if id, _ := NewPending().Add(); id != jsonrpc.Int64ID(1) {
		t.Fatalf("fresh Pending first id = %v, want 1", id)
	}
}

func TestPendingResolve(t *testing.T) {
	tests := []struct {
		name        string
		prepare     func(p *Pending, id jsonrpc.ID) // runs after Add
		resp        func(id jsonrpc.ID) *jsonrpc.Response
		wantOK      bool
		wantDropped uint64
	}{
		{
			name:   "known id",
			resp:   func(id jsonrpc.ID) *jsonrpc.Response { return &jsonrpc.Response{ID: id, Result: jsontext.Value(`1`)} },
			wantOK: true,
		},
		{
			name: "unknown id",
			resp: func(jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{ID: jsonrpc.Int64ID(999), Result: jsontext.Value(`1`)}
			},
			wantDropped: 1,
		},
		{
			name: "same number as string id",
			resp: func(jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{ID: jsonrpc.StringID("1"), Result: jsontext.Value(`1`)}
			},
			wantDropped: 1,
		},
		{
			name: "null id",
			resp: func(jsonrpc.ID) *jsonrpc.Response {
				return &jsonrpc.Response{Error: jsonrpc.NewError(jsonrpc.CodeParseError, "parse error")}
			},
			wantDropped: 1,
		},
		{
			name: "already resolved",
			prepare: func(p *Pending, id jsonrpc.ID) {
				p.Resolve(&jsonrpc.Response{ID: id, Result: jsontext.Value(`0`)})
			},
			resp:        func(id jsonrpc.ID) *jsonrpc.Response { return &jsonrpc.Response{ID: id, Result: jsontext.Value(`1`)} },
			wantDropped: 1,
		},
		{
			name:        "forgotten",
			prepare:     func(p *Pending, id jsonrpc.ID) { p.Forget(id) },
			resp:        func(id jsonrpc.ID) *jsonrpc.Response { return &jsonrpc.Response{ID: id, Result: jsontext.Value(`1`)} },
			wantDropped: 1,
		},
		{
			name:        "after CloseAll",
			prepare:     func(p *Pending, _ jsonrpc.ID) { p.CloseAll(nil) },
			resp:        func(id jsonrpc.ID) *jsonrpc.Response { return &jsonrpc.Response{ID: id, Result: jsontext.Value(`1`)} },
			wantDropped: 1,
		},
		{
			name: "nil response",
			resp: func(jsonrpc.ID) *jsonrpc.Response { return nil },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPending()
			id, ch := p.Add()
			if tt.prepare != nil {
				tt.prepare(p, id)
			}
			r := tt.resp(id)
			if got := p.Resolve(r); got != tt.wantOK {
				t.Fatalf("Resolve = %v, want %v", got, tt.wantOK)
			}
			if got := p.Dropped(); got != tt.wantDropped {
				t.Fatalf("Dropped = %d, want %d", got, tt.wantDropped)
			}
			if tt.wantOK {
				if got := <-ch; got != r {
					t.Fatalf("waiter got %v, want %v", got, r)
				}
				if p.Len() != 0 {
					t.Fatalf("Len = %d after resolve, want 0", p.Len())
				}
			}
		})
	}
}

func TestPendingForget(t *testing.T) {
	p := NewPending()
	id, _ := p.Add()
	if !p.Forget(id) {
		t.Fatal("first Forget = false, want true")
	}
	if p.Forget(id) {
		t.Fatal("second Forget = true, want false")
	}
	if p.Forget(jsonrpc.Int64ID(42)) {
		t.Fatal("Forget of unknown id = true")
	}
}

func TestPendingCloseAll(t *testing.T) {
	p := NewPending()
	id1, ch1 := p.Add()
	id2, ch2 := p.Add()
	if p.Err() != nil {
		t.Fatalf("Err before CloseAll = %v", p.Err())
	}
	boom := errors.New("boom")
	p.CloseAll(boom)
	p.CloseAll(errors.New("second")) // first error wins

	for _, w := range []struct {
		id jsonrpc.ID
		ch chan *jsonrpc.Response
	}{{id1, ch1}, {id2, ch2}} {
		if r, ok := <-w.ch; ok {
			t.Fatalf("waiter %v got %v, want closed channel", w.id, r)
		}
		if _, err := p.Await(context.Background(), w.id, w.ch); err != boom {
			t.Fatalf("Await after CloseAll = %v, want %v", err, boom)
		}
	}
	if p.Err() != boom {
		t.Fatalf("Err = %v, want %v", p.Err(), boom)
	}
	if p.Len() != 0 {
		t.Fatalf("Len = %d, want 0", p.Len())
	}

	// Later Add: a channel that is already failed.
	id3, ch3 := p.Add()
	if _, ok := <-ch3; ok {
		t.Fatal("Add after CloseAll returned an open channel")
	}
	if _, err := p.Await(context.Background(), id3, ch3); err != boom {
		t.Fatalf("Await after CloseAll = %v", err)
	}

	q := NewPending()
	q.CloseAll(nil)
	if !errors.Is(q.Err(), jsonrpc.ErrClosed) {
		t.Fatalf("CloseAll(nil) Err = %v, want ErrClosed", q.Err())
	}
}

func TestPendingAwait(t *testing.T) {
	peerErr := &jsonrpc.Error{Code: -32001, Message: "nope", Data: jsontext.Value(`{"x":1}`)}
	tests := []struct {
		name          string
		run           func(p *Pending, id jsonrpc.ID, cancel context.CancelFunc)
		wantResult    string
		wantErr       error
		wantAbandoned bool
	}{
		{
			name: "result",
			run: func(p *Pending, id jsonrpc.ID, _ context.CancelFunc) {
				p.Resolve(&jsonrpc.Response{ID: id, Result: jsontext.Value(`{"ok":true}`)})
			},
			wantResult: `{"ok":true}`,
		},
		{
			name: "peer error",
			run: func(p *Pending, id jsonrpc.ID, _ context.CancelFunc) {
				p.Resolve(&jsonrpc.Response{ID: id, Error: peerErr})
			},
			wantErr: peerErr,
		},
		{
			name:          "ctx cancelled",
			run:           func(_ *Pending, _ jsonrpc.ID, cancel context.CancelFunc) { cancel() },
			wantErr:       context.Canceled,
			wantAbandoned: true,
		},
		{
			name: "response delivered before ctx cancelled wins",
			run: func(p *Pending, id jsonrpc.ID, cancel context.CancelFunc) {
				p.Resolve(&jsonrpc.Response{ID: id, Result: jsontext.Value(`7`)})
				cancel()
			},
			wantResult: `7`,
		},
		{
			name:    "closed",
			run:     func(p *Pending, _ jsonrpc.ID, _ context.CancelFunc) { p.CloseAll(nil) },
			wantErr: jsonrpc.ErrClosed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPending()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id, ch := p.Add()
			tt.run(p, id, cancel)
			got, err, abandoned := p.await(ctx, id, ch)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if string(got) != tt.wantResult {
				t.Fatalf("result = %s, want %s", got, tt.wantResult)
			}
			if abandoned != tt.wantAbandoned {
				t.Fatalf("abandoned = %v, want %v", abandoned, tt.wantAbandoned)
			}
			if p.Len() != 0 {
				t.Fatalf("Len = %d, want 0 (waiter must not leak)", p.Len())
			}
			var pe *jsonrpc.Error
			if tt.wantErr == peerErr && (!errors.As(err, &pe) || pe.Code != -32001) {
				t.Fatalf("peer error not returned as *Error: %v", err)
			}
		})
	}
}

func TestPendingConcurrent(t *testing.T) {
	p := NewPending()
	const workers, perWorker = 8, 200
	ids := make(chan jsonrpc.ID, workers*perWorker)
	var wg sync.WaitGroup
	// Resolvers answer every id they are given, echoing it as the result.
	for range 4 {
		wg.Go(func() {
			for id := range ids {
				n, _ := id.Int64()
				p.Resolve(&jsonrpc.Response{ID: id, Result: jsontext.Value(strconv.FormatInt(n, 10))})
			}
		})
	}
	var callers sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		callers.Go(func() {
			for range perWorker {
				id, ch := p.Add()
				ids <- id
				res, err := p.Await(context.Background(), id, ch)
				if err != nil {
					errs <- err
					return
				}
				n, _ := id.Int64()
				if string(res) != strconv.FormatInt(n, 10) {
					errs <- errors.New("response routed to the wrong waiter")
					return
				}
			}
		})
	}
	callers.Wait()
	close(ids)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p.Len() != 0 || p.Dropped() != 0 {
		t.Fatalf("Len = %d, Dropped = %d, want 0, 0", p.Len(), p.Dropped())
	}
}
