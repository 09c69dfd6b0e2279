package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
)

// The bare client: net/http and encoding/json, just enough JSON-RPC to
// call a tool (the limit the SDK clients are measured against). It checks
// the result it reads but implements nothing else of MCP.

type bareReq struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type bareCallParams struct {
	Name      string         `json:"name"`
	Arguments echoArgs       `json:"arguments"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

type bareResp struct {
	ID     int64 `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (r *bareResp) check() error {
	if r.Error != nil {
		return errors.New(r.Error.Message)
	}
	if r.Result == nil || r.Result.IsError || len(r.Result.Content) != 1 {
		return errors.New("unexpected echo result")
	}
	return checkText(r.Result.Content[0].Text)
}

var modernMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench-client", "version": "1.0.0"},
}

func newBare(ctx context.Context, mode, endpoint string, argv []string, conc int) (*caller, error) {
	if mode == "stdio" {
		return newBareStdio(argv)
	}
	hc := httpClient(conc)
	var ids atomic.Int64
	post := func(ctx context.Context, hdr http.Header, body any) (*http.Response, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header = hdr.Clone()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return hc.Do(req)
	}
	hdr := http.Header{}
	var meta map[string]any
	if mode == "modern" {
		hdr.Set("Mcp-Protocol-Version", "2026-07-28")
		hdr.Set("Mcp-Method", "tools/call")
		hdr.Set("Mcp-Name", "echo")
		meta = modernMeta
	} else {
		resp, err := post(ctx, hdr, bareReq{JSONRPC: "2.0", ID: ids.Add(1), Method: "initialize", Params: map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "bench-client", "version": "1.0.0"},
		}})
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			return nil, fmt.Errorf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
		}
		hdr.Set("Mcp-Session-Id", sid)
		hdr.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err = post(ctx, hdr, bareReq{JSONRPC: "2.0", Method: "notifications/initialized"})
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return &caller{
		call: func(ctx context.Context) error {
			resp, err := post(ctx, hdr, bareReq{JSONRPC: "2.0", ID: ids.Add(1), Method: "tools/call",
				Params: bareCallParams{Name: "echo", Arguments: echoArgs{Text: echoText}, Meta: meta}})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			var r bareResp
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				return err
			}
			return r.check()
		},
		close: func() { hc.CloseIdleConnections() },
	}, nil
}

// bareStdio multiplexes callers over one child's stdin/stdout: a writer
// under a lock, a reader goroutine that hands each response to its caller.
type bareStdio struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	bw    *bufio.Writer
	ids   atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *bareResp
	err     error
	done    chan struct{}
}

func newBareStdio(argv []string) (*caller, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &bareStdio{cmd: cmd, stdin: stdin, bw: bufio.NewWriterSize(stdin, 64<<10),
		pending: map[int64]chan *bareResp{}, done: make(chan struct{})}
	go b.read(stdout)
	ctx := context.Background()
	if _, err := b.roundTrip(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench-client", "version": "1.0.0"},
	}); err != nil {
		b.close()
		return nil, err
	}
	if err := b.write(bareReq{JSONRPC: "2.0", Method: "notifications/initialized"}); err != nil {
		b.close()
		return nil, err
	}
	return &caller{
		call: func(ctx context.Context) error {
			r, err := b.roundTrip(ctx, "tools/call", bareCallParams{Name: "echo", Arguments: echoArgs{Text: echoText}})
			if err != nil {
				return err
			}
			return r.check()
		},
		close: b.close,
	}, nil
}

func (b *bareStdio) write(m bareReq) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.bw.Write(line)
	b.bw.WriteByte('\n')
	return b.bw.Flush()
}

func (b *bareStdio) roundTrip(ctx context.Context, method string, params any) (*bareResp, error) {
	id := b.ids.Add(1)
	ch := make(chan *bareResp, 1)
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return nil, b.err
	}
	b.pending[id] = ch
	b.mu.Unlock()
	if err := b.write(bareReq{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-b.done:
		return nil, b.err
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (b *bareStdio) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			b.mu.Lock()
			b.err = fmt.Errorf("read: %w", err)
			b.mu.Unlock()
			close(b.done)
			return
		}
		var resp bareResp
		if json.Unmarshal(line, &resp) != nil || resp.ID == 0 {
			continue // a notification or a line the bare client does not read
		}
		b.mu.Lock()
		ch := b.pending[resp.ID]
		delete(b.pending, resp.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- &resp
		}
	}
}

func (b *bareStdio) close() {
	b.stdin.Close()
	<-b.done
	_ = b.cmd.Wait()
}
