package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

type echoIn struct {
	Text string `json:"text"`
}

// readerOnly hides the pipe's SetReadDeadline, as a child process's
// blocking standard input has none.
type readerOnly struct{ io.Reader }

// BenchmarkStdioPipelined serves tools/call over a real pipe pair with 16
// requests in flight: the client writes 16 lines at once and reads the 16
// responses, as the bench/ load generator does over a child's stdin and
// stdout.
func BenchmarkStdioPipelined(b *testing.B) { benchPipelined(b, false) }

// BenchmarkStdioPipelinedBlockingRead is BenchmarkStdioPipelined with the
// server's input in blocking mode, as a standard input that is a terminal
// or a file (or a pipe the poller cannot take): each read that waits
// blocks the thread, and with -cpu 1 the processor, so the responses of
// a burst go out only if Read lets their writer run before it reads.
func BenchmarkStdioPipelinedBlockingRead(b *testing.B) { benchPipelined(b, true) }

func benchPipelined(b *testing.B, blocking bool) {
	const depth = 16
	s, err := pmcp.NewServer(pmcp.ServerOptions{Name: "bench", Version: "1"})
	if err != nil {
		b.Fatal(err)
	}
	if err := pmcp.AddTool(s, &pmcp.Tool{Name: "echo"},
		func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) { return in.Text, nil }); err != nil {
		b.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	if blocking {
		inR.Fd() // puts inR in blocking mode
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), stdio.NewStream(readerOnly{inR}, outW, stdio.Options{})) }()
	defer func() {
		inW.Close()
		<-done
		inR.Close()
		outR.Close()
	}()
	br := bufio.NewReaderSize(outR, 64<<10)
	if _, err := inW.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		b.Fatal(err)
	}
	if _, err := br.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	var batch []byte
	for i := range depth {
		batch = append(batch, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`+"\n"...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		if _, err := inW.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range depth {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if !bytes.Contains(line, []byte(`"text":"hello"`)) {
				b.Fatalf("unexpected response %s", line)
			}
		}
	}
}
