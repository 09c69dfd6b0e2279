package stdio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestFirstInvalidLine: the first line that is not a JSON-RPC message is
// kept, cut at MaxQuotedLineBytes, for the peer's diagnostics (a server
// that logs to stdout); later bad lines and good ones do not replace it.
func TestFirstInvalidLine(t *testing.T) {
	long := strings.Repeat("é", MaxQuotedLineBytes) // 2 bytes each: the cut falls inside a rune
	in := `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		"Server listening on port 3000\n" +
		"second bad line\n" + long + "\n"
	s := NewStream(strings.NewReader(in), io.Discard, Options{})
	defer s.Close()
	if got := s.FirstInvalidLine(); got != "" {
		t.Fatalf("before any read: %q", got)
	}
	for {
		_, err := s.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		var de *jsonrpc.DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Fatal(err)
		}
	}
	if got := s.FirstInvalidLine(); got != "Server listening on port 3000" {
		t.Errorf("FirstInvalidLine = %q", got)
	}

	s2 := NewStream(strings.NewReader(long+"\n"), io.Discard, Options{})
	defer s2.Close()
	_, _ = s2.Read(context.Background())
	got := s2.FirstInvalidLine()
	if len(got) > MaxQuotedLineBytes || !strings.HasSuffix(got, "...") || !strings.HasPrefix(long, strings.TrimSuffix(got, "...")) || len(got) < MaxQuotedLineBytes-4 {
		t.Errorf("not cut at a rune boundary within %d bytes: %d bytes", MaxQuotedLineBytes, len(got))
	}
}
