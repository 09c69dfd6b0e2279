// Command bare is the baseline of the bench: net/http and encoding/json
// with just enough MCP for the load generator (initialize with a session
// header, notifications, tools/list and tools/call of echo and add, over
// HTTP and stdio). It validates what it reads (a JSON-RPC request, known
// session, known tool, typed arguments) but implements nothing else of
// the protocol. See bench/README.md.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/bench/internal/harness"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type callParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

var tools = []map[string]any{
	{"name": "echo", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}}},
	{"name": "add", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "required": []string{"a", "b"}}},
}

const protocolModern = "io.modelcontextprotocol/protocolVersion"

// handle serves one request; legacyOK reports whether the request belongs
// to an initialized session (always true on stdio once initialized).
func handle(req *request, legacyOK bool) (any, *rpcError) {
	switch req.Method {
	case "initialize":
		return map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "bench-bare", "version": "1.0.0"},
		}, nil
	case "server/discover":
		// The modern clients of the client leg probe this first.
		return map[string]any{
			"supportedVersions": []string{"2026-07-28", "2025-11-25"},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "bench-bare", "version": "1.0.0"}},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		var p callParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
		}
		if _, modern := p.Meta[protocolModern]; !modern && !legacyOK {
			return nil, &rpcError{Code: -32600, Message: "session not initialized"}
		}
		var text string
		switch p.Name {
		case "echo":
			var in echoIn
			if err := json.Unmarshal(p.Arguments, &in); err != nil {
				return nil, &rpcError{Code: -32602, Message: "invalid arguments: " + err.Error()}
			}
			text = in.Text
		case "stream":
			text = "done" // its progress notifications are written by the transport
		case "add":
			var in addIn
			if err := json.Unmarshal(p.Arguments, &in); err != nil {
				return nil, &rpcError{Code: -32602, Message: "invalid arguments: " + err.Error()}
			}
			text = strconv.FormatFloat(in.A+in.B, 'g', -1, 64)
		default:
			return nil, &rpcError{Code: -32602, Message: "unknown tool " + strconv.Quote(p.Name)}
		}
		return callResult{Content: []content{{Type: "text", Text: text}}}, nil
	}
	return nil, &rpcError{Code: -32601, Message: "method not found"}
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int             `json:"progress"`
	Total         int             `json:"total"`
}

type notification struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  progressParams `json:"params"`
}

// streamNotes returns the progress notifications of a tools/call of the
// stream tool that carries a progress token (nil otherwise), encoded.
func streamNotes(req *request) [][]byte {
	if req.Method != "tools/call" {
		return nil
	}
	var p struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.Name != "stream" || len(p.Meta.ProgressToken) == 0 {
		return nil
	}
	notes := make([][]byte, 0, harness.StreamNotes)
	for i := 1; i <= harness.StreamNotes; i++ {
		b, err := json.Marshal(notification{JSONRPC: "2.0", Method: "notifications/progress",
			Params: progressParams{ProgressToken: p.Meta.ProgressToken, Progress: i, Total: harness.StreamNotes}})
		if err != nil {
			return nil
		}
		notes = append(notes, b)
	}
	return notes
}

func reply(req *request, res any, rerr *rpcError) ([]byte, error) {
	return json.Marshal(response{JSONRPC: "2.0", ID: req.ID, Result: res, Error: rerr})
}

// sessions are the legacy HTTP sessions opened by initialize.
type sessions struct {
	mu sync.RWMutex
	m  map[string]time.Time
}

func (s *sessions) open() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.m[id] = time.Now()
	s.mu.Unlock()
	return id
}

func (s *sessions) has(id string) bool {
	s.mu.RLock()
	_, ok := s.m[id]
	s.mu.RUnlock()
	return ok
}

func newHTTP() http.Handler {
	ss := &sessions{m: make(map[string]time.Time)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		var req request
		if err := json.Unmarshal(body, &req); err != nil || req.JSONRPC != "2.0" || req.Method == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		sid := r.Header.Get("Mcp-Session-Id")
		legacyOK := sid != "" && ss.has(sid)
		if sid != "" && !legacyOK {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		res, rerr := handle(&req, legacyOK)
		if req.Method == "initialize" && rerr == nil {
			w.Header().Set("Mcp-Session-Id", ss.open())
		}
		b, err := reply(&req, res, rerr)
		if err != nil {
			http.Error(w, "cannot encode", http.StatusInternalServerError)
			return
		}
		if *harness.SSE && req.Method == "tools/call" {
			// The bare SSE writer: each event written and flushed.
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			fl, _ := w.(http.Flusher)
			for _, n := range append(streamNotes(&req), b) {
				_, _ = w.Write([]byte("data: "))
				_, _ = w.Write(n)
				_, _ = w.Write([]byte("\n\n"))
				if fl != nil {
					fl.Flush()
				}
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

func serveStdio(ctx context.Context) error {
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	bw := bufio.NewWriterSize(os.Stdout, 64<<10)
	initialized := false
	for ctx.Err() == nil {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return err // over-long line: the baseline does not handle it
		}
		if len(line) > 0 {
			var req request
			if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 {
				res, rerr := handle(&req, initialized)
				if req.Method == "initialize" && rerr == nil {
					initialized = true
				}
				b, merr := reply(&req, res, rerr)
				if merr != nil {
					return merr
				}
				for _, n := range streamNotes(&req) {
					bw.Write(n)
					bw.WriteByte('\n')
				}
				bw.Write(b)
				bw.WriteByte('\n')
			}
		}
		if err != nil {
			bw.Flush()
			if err == io.EOF {
				return nil
			}
			return err
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

func main() { harness.Main(newHTTP, serveStdio) }
