package memory

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

var bg = context.Background()

func req(id int64) *jsonrpc.Request {
	return &jsonrpc.Request{ID: jsonrpc.Int64ID(id), Method: "ping", Params: jsontext.Value(`{"n":1}`)}
}

func mustID(t *testing.T, m jsonrpc.Message, err error, want int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	r, ok := m.(*jsonrpc.Request)
	if !ok {
		t.Fatalf("Read = %#v, want a request", m)
	}
	if id, _ := r.ID.Int64(); id != want {
		t.Fatalf("read id %v, want %d", r.ID, want)
	}
}

func TestBothDirections(t *testing.T) {
	a, b := NewPipe()
	defer a.Close()
	if err := a.Write(bg, req(1)); err != nil {
		t.Fatal(err)
	}
	m, err := b.Read(bg)
	mustID(t, m, err, 1)
	if string(m.(*jsonrpc.Request).Params) != `{"n":1}` {
		t.Fatalf("params = %s", m.(*jsonrpc.Request).Params)
	}
	resp := &jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: jsontext.Value(`{"ok":true}`)}
	if err := b.Write(bg, resp); err != nil {
		t.Fatal(err)
	}
	m, err = a.Read(bg)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*jsonrpc.Response); !ok || string(r.Result) != `{"ok":true}` {
		t.Fatalf("a read %#v", m)
	}
}

func TestMessagesAreCopied(t *testing.T) {
	a, b := NewPipe()
	defer a.Close()
	params := jsontext.Value(`{"v":"before"}`)
	if err := a.Write(bg, &jsonrpc.Request{Method: "m", Params: params}); err != nil {
		t.Fatal(err)
	}
	copy(params, `{"v":"after!"}`)
	m, err := b.Read(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.(*jsonrpc.Request).Params); got != `{"v":"before"}` {
		t.Fatalf("reader saw the writer's later change: %s", got)
	}
}

func TestEncodeErrorOnWrite(t *testing.T) {
	a, b := NewPipe()
	defer a.Close()
	if err := a.Write(bg, &jsonrpc.Request{Method: "m", Params: jsontext.Value(`"scalar"`)}); err == nil {
		t.Fatal("Write of an invalid message succeeded")
	}
	if err := a.Write(bg, req(2)); err != nil {
		t.Fatal(err)
	}
	m, err := b.Read(bg)
	mustID(t, m, err, 2)
}

func TestDecodeLimitsApply(t *testing.T) {
	a, b := NewPipe(Options{Limits: jsonrpc.Limits{MaxDepth: 2}})
	defer a.Close()
	if err := a.Write(bg, &jsonrpc.Request{Method: "m", Params: jsontext.Value(`[[1]]`)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(bg, req(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(bg); !errors.Is(err, jsonrpc.ErrTooDeep) {
		t.Fatalf("Read = %v, want ErrTooDeep", err)
	}
	m, err := b.Read(bg)
	mustID(t, m, err, 3) // still usable
}

func TestCloseDrainsThenEOF(t *testing.T) {
	for _, closer := range []string{"writer", "reader"} {
		t.Run("close "+closer, func(t *testing.T) {
			a, b := NewPipe()
			for i := range 3 {
				if err := a.Write(bg, req(int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			if closer == "writer" {
				a.Close()
				for i := range 3 {
					m, err := b.Read(bg)
					mustID(t, m, err, int64(i))
				}
				for range 2 {
					if _, err := b.Read(bg); err != io.EOF {
						t.Fatalf("Read after drain = %v, want io.EOF", err)
					}
				}
				if _, err := a.Read(bg); !errors.Is(err, ErrClosed) {
					t.Fatalf("Read on the closed end = %v, want ErrClosed", err)
				}
			} else {
				b.Close()
				if _, err := b.Read(bg); !errors.Is(err, ErrClosed) {
					t.Fatalf("Read on the closed end = %v, want ErrClosed", err)
				}
				if _, err := a.Read(bg); err != io.EOF {
					t.Fatalf("Read on the open end = %v, want io.EOF", err)
				}
			}
			for _, s := range []jsonrpc.Stream{a, b} {
				if err := s.Write(bg, req(9)); !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
					t.Fatalf("Write after Close = %v, want ErrClosed", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("second Close = %v", err)
				}
			}
		})
	}
}

func TestCloseUnblocks(t *testing.T) {
	a, b := NewPipe(Options{Capacity: 1})
	if err := a.Write(bg, req(1)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { errs <- a.Write(bg, req(2)) }() // blocks: buffer full
	go func() { _, err := a.Read(bg); errs <- err }()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) && err != io.EOF {
				t.Fatalf("unblocked with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock")
		}
	}
}

func TestContext(t *testing.T) {
	a, b := NewPipe(Options{Capacity: 1})
	defer a.Close()

	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if _, err := b.Read(ctx); err != context.DeadlineExceeded {
		t.Fatalf("blocked Read = %v, want DeadlineExceeded", err)
	}

	if err := a.Write(bg, req(1)); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel2()
	if err := a.Write(ctx2, req(2)); err != context.DeadlineExceeded {
		t.Fatalf("blocked Write = %v, want DeadlineExceeded", err)
	}

	canceled, cancel3 := context.WithCancel(bg)
	cancel3()
	if _, err := b.Read(canceled); err != context.Canceled {
		t.Fatalf("Read with canceled ctx = %v", err)
	}
	if err := b.Write(canceled, req(3)); err != context.Canceled {
		t.Fatalf("Write with canceled ctx = %v", err)
	}
	// The message written before is still there.
	m, err := b.Read(bg)
	mustID(t, m, err, 1)
}

func TestUnbuffered(t *testing.T) {
	a, b := NewPipe(Options{Capacity: -1})
	defer a.Close()
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := a.Write(ctx, req(1)); err != context.DeadlineExceeded {
		t.Fatalf("unbuffered Write without a reader = %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Write(bg, req(2)) }()
	m, err := b.Read(bg)
	mustID(t, m, err, 2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConcurrent(t *testing.T) {
	a, b := NewPipe(Options{Capacity: 4})
	const writers, each = 4, 250
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := a.Write(bg, req(int64(w*each+i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := make(map[int64]bool)
	for range writers * each {
		m, err := b.Read(bg)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := m.(*jsonrpc.Request).ID.Int64()
		if seen[id] {
			t.Fatalf("id %d read twice", id)
		}
		seen[id] = true
	}
	wg.Wait()
	a.Close()
	if _, err := b.Read(bg); err != io.EOF {
		t.Fatalf("Read after close = %v", err)
	}
}

func TestNewPipeTooManyOptions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewPipe with two Options did not panic")
		}
	}()
	NewPipe(Options{}, Options{})
}
