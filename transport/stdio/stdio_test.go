package stdio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// readAll reads until io.EOF, rendering each result as a string: the
// re-encoded message, or "error <code> <id>" for a decode error.
func readAll(t *testing.T, s *Stream) []string {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("too many results")
		}
		m, err := s.Read(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			var de *jsonrpc.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Read: unexpected error %v", err)
			}
			out = append(out, fmt.Sprintf("error %d %v", de.Code, de.ID))
			continue
		}
		b, err := jsonrpc.Encode(m)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		out = append(out, string(b))
	}
}

func TestReadFraming(t *testing.T) {
	const (
		req  = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		note = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		resp = `{"jsonrpc":"2.0","id":"a","result":{}}`
	)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty input", "", nil},
		{"only blank lines", "\n\r\n  \n\t\r\n", nil},
		{"one line", req + "\n", []string{req}},
		{"no trailing newline", req + "\n" + note, []string{req, note}},
		{"crlf", req + "\r\n" + note + "\r\n", []string{req, note}},
		{"final line crlf-less cr", req + "\r", []string{req}},
		{"blank lines between", "\n\n" + req + "\n\n  \n" + resp + "\n\n", []string{req, resp}},
		{"surrounding spaces", "  " + req + "  \n", []string{req}},
		{"malformed line then valid", "{oops\n" + req + "\n", []string{"error -32700 null", req}},
		{"invalid request keeps id", `{"jsonrpc":"1.0","id":9,"method":"m"}` + "\n" + req, []string{"error -32600 9", req}},
		{"batch line", "[" + req + "]\n" + note + "\n", []string{"error -32600 null", note}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(strings.NewReader(tt.in), io.Discard, Options{})
			got := readAll(t, s)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			// Reading past EOF keeps returning EOF.
			if _, err := s.Read(context.Background()); err != io.EOF {
				t.Errorf("Read after EOF = %v", err)
			}
		})
	}
}

func TestOversizeLineThenValid(t *testing.T) {
	const valid = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	long := `{"jsonrpc":"2.0","id":1,"method":"m","params":["` + strings.Repeat("x", 200) + `"]}`
	for _, max := range []int{64, len(valid)} {
		in := long + "\n" + valid + "\n" + long // the last one ends at EOF
		s := NewStream(strings.NewReader(in), io.Discard, Options{MaxLineBytes: max})
		m, err := s.Read(context.Background())
		var de *jsonrpc.DecodeError
		if !errors.As(err, &de) || de.Code != jsonrpc.CodeParseError || !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
			t.Fatalf("max %d: first Read = %v, %v; want a -32700 ErrMessageTooLarge DecodeError", max, m, err)
		}
		// The id is read from the line's start, so the caller of the
		// request gets the error instead of waiting for an answer.
		if r := de.Response(); de.ID != jsonrpc.Int64ID(1) || r == nil || r.ID != jsonrpc.Int64ID(1) {
			t.Errorf("oversize request: id %v, response %+v; want id 1 answered", de.ID, r)
		}
		m, err = s.Read(context.Background())
		if err != nil {
			t.Fatalf("max %d: second Read: %v", max, err)
		}
		if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
			t.Fatalf("second Read = %#v", m)
		}
		if _, err := s.Read(context.Background()); !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
			t.Fatalf("third Read = %v, want ErrMessageTooLarge", err)
		}
		if _, err := s.Read(context.Background()); err != io.EOF {
			t.Fatalf("fourth Read = %v, want io.EOF", err)
		}
	}
}

func TestLineLimitBoundary(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, term := range []string{"\n", "\r\n", ""} {
		s := NewStream(strings.NewReader(line+term), io.Discard, Options{MaxLineBytes: len(line)})
		if _, err := s.Read(context.Background()); err != nil {
			t.Errorf("terminator %q: line exactly at the limit rejected: %v", term, err)
		}
		s = NewStream(strings.NewReader(line+term), io.Discard, Options{MaxLineBytes: len(line) - 1})
		if _, err := s.Read(context.Background()); !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
			t.Errorf("terminator %q: line one over the limit: err = %v", term, err)
		}
	}
}

// endlessLine yields n bytes of 'x', then a newline and a valid message.
type endlessLine struct {
	n    int
	tail *strings.Reader
}

func (r *endlessLine) Read(p []byte) (int, error) {
	if r.n > 0 {
		k := min(len(p), r.n)
		for i := range p[:k] {
			p[i] = 'x'
		}
		r.n -= k
		return k, nil
	}
	return r.tail.Read(p)
}

func TestOversizeLineIsNotBuffered(t *testing.T) {
	src := &endlessLine{n: 256 << 20, tail: strings.NewReader("\n" + `{"jsonrpc":"2.0","method":"ping"}` + "\n")}
	s := NewStream(src, io.Discard, Options{MaxLineBytes: 1 << 10})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.Read(context.Background())
	runtime.ReadMemStats(&after)
	if !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
		t.Fatalf("err = %v, want ErrMessageTooLarge", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("skipping a 256 MiB line allocated %d bytes", alloc)
	}
	if m, err := s.Read(context.Background()); err != nil || m.(*jsonrpc.Request).Method != "ping" {
		t.Fatalf("Read after the long line = %v, %v", m, err)
	}
}

// An over-long response is never answered but carries its id, read from
// the line's start, so that the call it answered fails at once: whether
// the line fits the read buffer or is skipped unbuffered.
func TestOversizeResponseCarriesID(t *testing.T) {
	for _, n := range []int{200, 8 << 20} {
		head := `{"jsonrpc":"2.0","id":"call-7","result":{"text":"`
		src := &endlessLine{n: n, tail: strings.NewReader(`"}}` + "\n")}
		s := NewStream(io.MultiReader(strings.NewReader(head), src), io.Discard, Options{MaxLineBytes: 100})
		_, err := s.Read(context.Background())
		var de *jsonrpc.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
			t.Fatalf("%d bytes: err = %v, want ErrMessageTooLarge", n, err)
		}
		if de.ID != jsonrpc.StringID("call-7") || de.Response() != nil {
			t.Fatalf("%d bytes: id %v, response %+v; want id call-7 and no answer", n, de.ID, de.Response())
		}
		if _, err := s.Read(context.Background()); err != io.EOF {
			t.Fatalf("%d bytes: next Read = %v, want io.EOF", n, err)
		}
	}
}

func TestCodecLimitsApply(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"m","params":[[[[1]]]]}` + "\n"
	s := NewStream(strings.NewReader(in), io.Discard, Options{Limits: jsonrpc.Limits{MaxDepth: 3}})
	if _, err := s.Read(context.Background()); !errors.Is(err, jsonrpc.ErrTooDeep) {
		t.Fatalf("err = %v, want ErrTooDeep", err)
	}
}

func TestReadContext(t *testing.T) {
	s := NewStream(strings.NewReader(`{"jsonrpc":"2.0","method":"m"}`), io.Discard, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Read(ctx); err != context.Canceled {
		t.Fatalf("Read with canceled ctx = %v", err)
	}
	if err := s.Write(ctx, &jsonrpc.Request{Method: "m"}); err != context.Canceled {
		t.Fatalf("Write with canceled ctx = %v", err)
	}
}

func TestWriteLines(t *testing.T) {
	var buf bytes.Buffer
	s := NewStream(strings.NewReader(""), &buf, Options{})
	msgs := []jsonrpc.Message{
		&jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "tools/call",
			Params: jsontext.Value("{\n  \"text\": \"line1\\nline2\\r\\n\",\n  \"n\": [1,\n 2]\n}")},
		&jsonrpc.Request{Method: "notifications/message", Params: jsontext.Value(`{"data":"a\u2028b\n"}`)},
		&jsonrpc.Response{ID: jsonrpc.StringID("x\ny"), Result: jsontext.Value("[\r\n1\r\n]")},
		&jsonrpc.Response{Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "multi\nline\r\nmessage")},
	}
	for _, m := range msgs {
		if err := s.Write(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != len(msgs) || strings.Contains(out, "\r") {
		t.Fatalf("output is not exactly one line per message:\n%q", out)
	}
	// What was written reads back as the same messages.
	r := NewStream(strings.NewReader(out), io.Discard, Options{})
	for i, want := range msgs {
		got, err := r.Read(context.Background())
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		gb, _ := jsonrpc.Encode(got)
		wb, _ := jsonrpc.Encode(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("message %d: read back %s, wrote %s", i, gb, wb)
		}
	}
}

func TestWriteEncodeError(t *testing.T) {
	var buf bytes.Buffer
	s := NewStream(strings.NewReader(""), &buf, Options{})
	if err := s.Write(context.Background(), &jsonrpc.Response{}); err == nil {
		t.Fatal("Write of an id-less success response succeeded")
	}
	if buf.Len() != 0 {
		t.Fatalf("a failed encode wrote %q", buf.String())
	}
	// The stream is still usable.
	if err := s.Write(context.Background(), &jsonrpc.Request{Method: "m"}); err != nil {
		t.Fatal(err)
	}
}

// callRecorder records each Write call separately.
type callRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (w *callRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func TestConcurrentWriters(t *testing.T) {
	w := &callRecorder{}
	s := NewStream(strings.NewReader(""), w, Options{})
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				params := fmt.Sprintf(`{"writer":%d,"i":%d,"pad":%q}`, g, i, strings.Repeat("p", i))
				err := s.Write(context.Background(), &jsonrpc.Request{
					ID: jsonrpc.Int64ID(int64(g*each + i)), Method: "m", Params: jsontext.Value(params)})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Concurrent lines may be coalesced into one write call, but a call
	// always holds whole lines, never interleaved.
	if len(w.calls) > writers*each {
		t.Fatalf("%d write calls for %d lines", len(w.calls), writers*each)
	}
	seen := map[int64]bool{}
	for _, c := range w.calls {
		if !strings.HasSuffix(c, "\n") {
			t.Fatalf("write call does not end a line: %q", c)
		}
		for _, line := range strings.SplitAfter(c, "\n") {
			if line == "" {
				continue
			}
			m, err := jsonrpc.Decode([]byte(line), jsonrpc.Limits{})
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			id, _ := m.(*jsonrpc.Request).ID.Int64()
			if seen[id] {
				t.Fatalf("message %d written twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct messages, want %d", len(seen), writers*each)
	}
}

type closeCounter struct {
	io.Reader
	io.Writer
	n int
}

func (c *closeCounter) Close() error { c.n++; return nil }

func TestClose(t *testing.T) {
	rc := &closeCounter{Reader: strings.NewReader("")}
	wc := &closeCounter{Writer: io.Discard}
	s := NewStream(rc, wc, Options{})
	for range 3 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if rc.n != 1 || wc.n != 1 {
		t.Fatalf("reader closed %d times, writer %d times; want 1 each", rc.n, wc.n)
	}
	if err := s.Write(context.Background(), &jsonrpc.Request{Method: "m"}); !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}

	// One value used as both reader and writer is closed once.
	both := &closeCounter{Reader: strings.NewReader(""), Writer: io.Discard}
	s = NewStream(both, both, Options{})
	s.Close()
	if both.n != 1 {
		t.Fatalf("shared reader/writer closed %d times", both.n)
	}

	// Non-closers are fine.
	if err := NewStream(strings.NewReader(""), io.Discard, Options{}).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	s := NewStream(pr, io.Discard, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(context.Background())
		done <- err
	}()
	if _, err := pw.WriteString(`{"jsonrpc":"2.0",`); err != nil { // half a line
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked Read returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
}

func TestReadContextInterruptsDeadlineReader(t *testing.T) {
	pr, pw, err := os.Pipe() // os.Pipe files support deadlines
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	s := NewStream(pr, io.Discard, Options{})
	defer s.Close()
	if s.dl == nil {
		t.Fatal("os.Pipe reader not recognized as supporting deadlines")
	}
	if _, err := pw.WriteString(`{"jsonrpc":"2.0",`); err != nil { // half a line
		t.Fatal(err)
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		_, err = s.Read(ctx)
		cancel()
		if err != context.DeadlineExceeded {
			t.Fatalf("Read = %v, want context.DeadlineExceeded", err)
		}
	}
	if _, err := pw.WriteString(`"id":1,"method":"ping"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	m, err := s.Read(context.Background())
	if err != nil {
		t.Fatalf("Read after interruptions: %v", err)
	}
	if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
		t.Fatalf("Read = %#v; the partial line was lost", m)
	}
	// The deadline was cleared: a later Read with a live ctx waits for data.
	go func() {
		time.Sleep(30 * time.Millisecond)
		pw.WriteString(`{"jsonrpc":"2.0","method":"late"}` + "\n")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if m, err := s.Read(ctx); err != nil || m.(*jsonrpc.Request).Method != "late" {
		t.Fatalf("Read = %v, %v", m, err)
	}
}

func TestReadContextNetPipe(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	s := NewStream(c1, c1, Options{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := s.Read(ctx); done <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Read = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not interrupt Read")
	}
}

func TestPeerEOFOverPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	server := NewStream(pr, io.Discard, Options{})
	client := NewStream(strings.NewReader(""), pw, Options{})
	defer server.Close()
	go func() {
		client.Write(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "ping"})
		client.Close()
	}()
	m, err := server.Read(context.Background())
	if err != nil || m.(*jsonrpc.Request).Method != "ping" {
		t.Fatalf("Read = %v, %v", m, err)
	}
	if _, err := server.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read after the peer closed = %v, want io.EOF", err)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return len(p) / 2, errors.New("broken pipe")
}

func TestWriteErrorIsSticky(t *testing.T) {
	w := &failWriter{}
	s := NewStream(strings.NewReader(""), w, Options{})
	err1 := s.Write(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m"})
	err2 := s.Write(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "m"})
	if err1 == nil || err2 != err1 || w.n != 1 {
		t.Fatalf("errors %v, %v after %d write calls", err1, err2, w.n)
	}
}

func TestStdio(t *testing.T) {
	s := Stdio(Options{})
	if s.r != os.Stdin || s.w != os.Stdout {
		t.Fatal("Stdio does not use os.Stdin and os.Stdout")
	}
}
