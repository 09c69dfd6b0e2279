package stdio

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// callSignalReader signals on called (without waiting) each time Read is
// called, then reads from r.
type callSignalReader struct {
	r      io.Reader
	called chan struct{} // capacity 1
}

func (r *callSignalReader) Read(p []byte) (int, error) {
	select {
	case r.called <- struct{}{}:
	default:
	}
	return r.r.Read(p)
}

// openBatch leaves m's line in s's open batch, as a Write that opened the
// batch (its leader) does before it writes it: the state of a leader that
// yielded to let others join and has not had the processor since.
// writeLeader is the rest of that leader's work.
func openBatch(t *testing.T, s *Stream, m jsonrpc.Message) *wbatch {
	t.Helper()
	line, err := jsonrpc.AppendMessage(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	line = append(line, '\n')
	b := &wbatch{buf: &line}
	s.qmu.Lock()
	s.cur = b
	s.qmu.Unlock()
	return b
}

func writeLeader(s *Stream, b *wbatch) error {
	s.wmu.Lock()
	s.writeBatch(b)
	s.wmu.Unlock()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return b.err
}

// Two Streams over in-memory pipes (no buffer: a write waits for the peer
// to read), each with a reply left in its open batch when its read loop
// calls Read: both Reads must go on to read, leaving the replies to their
// leaders. A Read that writes the open batch first waits for a peer whose
// read loop is doing the same, and neither ever reads again.
func TestReadDoesNotWriteTheOpenBatch(t *testing.T) {
	abR, abW := io.Pipe() // a writes, b reads
	baR, baW := io.Pipe() // b writes, a reads
	ra := &callSignalReader{r: baR, called: make(chan struct{}, 1)}
	rb := &callSignalReader{r: abR, called: make(chan struct{}, 1)}
	a := NewStream(ra, abW, Options{})
	b := NewStream(rb, baW, Options{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		a.Close()
		b.Close()
		abR.Close()
		baR.Close()
		wg.Wait()
	})
	batchA := openBatch(t, a, &jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: []byte(`{}`)})
	batchB := openBatch(t, b, &jsonrpc.Response{ID: jsonrpc.Int64ID(2), Result: []byte(`{}`)})

	type result struct {
		m   jsonrpc.Message
		err error
	}
	gotA, gotB := make(chan result, 1), make(chan result, 1)
	for _, side := range []struct {
		s   *Stream
		got chan result
	}{{a, gotA}, {b, gotB}} {
		wg.Go(func() {
			m, err := side.s.Read(context.Background())
			side.got <- result{m, err}
		})
	}
	const bound = 10 * time.Second
	for name, r := range map[string]*callSignalReader{"a": ra, "b": rb} {
		select {
		case <-r.called:
		case <-time.After(bound):
			t.Fatalf("%s's Read did not reach its reader within %v: it is writing its open batch to a peer that does not read", name, bound)
		}
	}
	// The leaders get the processor and write their batches.
	written := make(chan error, 2)
	wg.Go(func() { written <- writeLeader(a, batchA) })
	wg.Go(func() { written <- writeLeader(b, batchB) })
	for name, c := range map[string]struct {
		got  chan result
		want int64
	}{"a": {gotA, 2}, "b": {gotB, 1}} {
		select {
		case r := <-c.got:
			resp, ok := r.m.(*jsonrpc.Response)
			if r.err != nil || !ok || resp.ID != jsonrpc.Int64ID(c.want) {
				t.Fatalf("%s read %v, %v; want the response with id %d", name, r.m, r.err, c.want)
			}
		case <-time.After(bound):
			t.Fatalf("%s read nothing within %v", name, bound)
		}
	}
	for range 2 {
		if err := <-written; err != nil {
			t.Fatalf("leader's write: %v", err)
		}
	}
}
