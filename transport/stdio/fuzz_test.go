package stdio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

const fuzzMaxLine = 256

// chunkReader returns its data in pseudo-random chunks of 1 to 8 bytes,
// and with flaky set, fails with os.ErrDeadlineExceeded now and then, as
// a reader interrupted by Read's ctx does.
type chunkReader struct {
	data  []byte
	rng   *rand.Rand
	flaky bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.flaky && r.rng.IntN(4) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := min(1+r.rng.IntN(8), len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// outcome renders one Read result for comparison.
func outcome(m jsonrpc.Message, err error) (string, error) {
	if err != nil {
		var de *jsonrpc.DecodeError
		if !errors.As(err, &de) {
			return "", err
		}
		return fmt.Sprintf("error code=%d id=%v large=%v deep=%v batch=%v dup=%v", de.Code, de.ID,
			errors.Is(err, jsonrpc.ErrMessageTooLarge), errors.Is(err, jsonrpc.ErrTooDeep),
			errors.Is(err, jsonrpc.ErrBatch), errors.Is(err, jsonrpc.ErrDuplicateName)), nil
	}
	b, err := jsonrpc.Encode(m)
	if err != nil {
		return "", fmt.Errorf("re-encoding a decoded message: %w", err)
	}
	if bytes.ContainsAny(b, "\r\n") {
		return "", fmt.Errorf("encoded message contains a line break: %q", b)
	}
	return "message " + string(b), nil
}

func readOutcomes(t *testing.T, r io.Reader) []string {
	s := NewStream(r, io.Discard, Options{MaxLineBytes: fuzzMaxLine})
	var out []string
	for {
		m, err := s.Read(context.Background())
		if err == io.EOF {
			return out
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // interrupted: the next Read resumes the line
		}
		o, err := outcome(m, err)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
}

// modelOutcomes is the framing spelled out directly: split on '\n', drop
// one trailing '\r', skip blank lines, enforce the limit, decode.
func modelOutcomes(t *testing.T, data []byte) []string {
	var out []string
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // input ended with '\n' (or was empty)
	}
	for _, line := range lines {
		line = bytes.TrimSuffix(line, []byte("\r"))
		var o string
		var err error
		switch {
		case len(line) > fuzzMaxLine:
			o, err = outcome(nil, jsonrpc.TooLarge(line, ""))
		case len(bytes.TrimLeft(line, " \t\r")) == 0:
			continue
		default:
			o, err = outcome(jsonrpc.Decode(bytes.Clone(line), jsonrpc.Limits{}))
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// FuzzFramer feeds the same input whole, in small random chunks, and in
// chunks with interruptions, and requires the same sequence of messages
// and errors from all three and from a direct model of the framing rules. Seeds live in testdata/fuzz/FuzzFramer.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fnv.New64a()
		h.Write(data)
		seed := h.Sum64()
		whole := readOutcomes(t, bytes.NewReader(data))
		chunked := readOutcomes(t, &chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, seed>>7|1))})
		flaky := readOutcomes(t, &chunkReader{data: data, rng: rand.New(rand.NewPCG(seed>>3, seed|1)), flaky: true})
		model := modelOutcomes(t, data)
		if w, c := strings.Join(whole, "\n"), strings.Join(chunked, "\n"); w != c {
			t.Fatalf("whole and chunked reads differ:\nwhole:\n%s\nchunked:\n%s", w, c)
		}
		if w, c := strings.Join(whole, "\n"), strings.Join(flaky, "\n"); w != c {
			t.Fatalf("whole and interrupted reads differ:\nwhole:\n%s\ninterrupted:\n%s", w, c)
		}
		if w, m := strings.Join(whole, "\n"), strings.Join(model, "\n"); w != m {
			t.Fatalf("stream and model differ:\nstream:\n%s\nmodel:\n%s", w, m)
		}
	})
}
