package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// sharedResults are the values the handlers of TestSharedResultsNotMutated
// return to every request: one value each, shared by all of them, as a
// handler that caches its answer does.
type sharedResults struct {
	call     *CallToolResult // with a _meta of its own
	bare     *CallToolResult // no _meta, no content (normalized on the way out)
	read     *ReadResourceResult
	prompt   *GetPromptResult // no messages
	complete *CompleteResult  // no values
}

func newSharedResults() *sharedResults {
	return &sharedResults{
		call:     &CallToolResult{ResultFields: ResultFields{Meta: Meta{"example.com/widget": "w"}}, Content: []Content{Text("shared")}},
		bare:     &CallToolResult{StructuredContent: jsontext.Value(`[1]`)},
		read:     &ReadResourceResult{Contents: []*ResourceContents{{URI: "shared://r", Text: "shared"}}},
		prompt:   &GetPromptResult{Description: "shared"},
		complete: &CompleteResult{},
	}
}

const tagKey = "example.com/tag"

// newSharedServer serves sh from every handler; each handler also sets the
// request's own tag with SetResultMeta.
func newSharedServer(t *testing.T, sh *sharedResults) *Server {
	t.Helper()
	s, err := NewServer(ServerOptions{Name: "shared", Version: "1",
		Completion: func(ctx context.Context, e *RequestHandlerExtra, p *CompleteParams) (*CompleteResult, error) {
			e.SetResultMeta(map[string]any{tagKey: p.Argument.Value})
			return sh.complete, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	type tagIn struct {
		Tag string `json:"tag"`
	}
	must(s.AddRawTool(&Tool{Name: "raw", InputSchema: jsontext.Value(`{"type":"object","properties":{"tag":{"type":"string"}}}`)},
		func(ctx context.Context, e *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error) {
			var in tagIn
			if err := json.Unmarshal(p.Arguments, &in); err != nil {
				return nil, err
			}
			e.SetResultMeta(map[string]any{tagKey: in.Tag})
			return sh.call, nil
		}))
	must(AddTool(s, &Tool{Name: "typed"}, func(ctx context.Context, e *RequestHandlerExtra, in tagIn) (*CallToolResult, error) {
		e.SetResultMeta(map[string]any{tagKey: in.Tag})
		return sh.bare, nil
	}))
	must(s.AddResourceTemplate(&ResourceTemplate{URITemplate: "shared://{tag}", Name: "shared"},
		func(ctx context.Context, e *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
			e.SetResultMeta(map[string]any{tagKey: r.Vars["tag"]})
			return sh.read, nil
		}))
	must(s.AddPrompt(&Prompt{Name: "shared", Arguments: []*PromptArgument{{Name: "tag", Required: true}}},
		func(ctx context.Context, e *RequestHandlerExtra, p *GetPromptParams) (*GetPromptResult, error) {
			e.SetResultMeta(map[string]any{tagKey: p.Arguments["tag"]})
			return sh.prompt, nil
		}))
	return s
}

// sharedCall is one request of the test: method, params carrying tag, and
// the Mcp-Name of its modern HTTP form.
type sharedCall struct {
	method, name string
	params       func(tag string) map[string]any
	tagged       bool // the response's _meta must carry exactly its tag
}

var sharedCalls = []sharedCall{
	{MethodToolsCall, "raw", func(tag string) map[string]any {
		return map[string]any{"name": "raw", "arguments": map[string]any{"tag": tag}}
	}, true},
	{MethodToolsCall, "typed", func(tag string) map[string]any {
		return map[string]any{"name": "typed", "arguments": map[string]any{"tag": tag}}
	}, true},
	{MethodResourcesRead, "shared://" + "TAG", func(tag string) map[string]any { return map[string]any{"uri": "shared://" + tag} }, true},
	{MethodPromptsGet, "shared", func(tag string) map[string]any {
		return map[string]any{"name": "shared", "arguments": map[string]any{"tag": tag}}
	}, true},
	{MethodCompletionComplete, "", func(tag string) map[string]any {
		return map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "shared"}, "argument": map[string]any{"name": "tag", "value": tag}}
	}, true},
	{MethodToolsList, "", func(string) map[string]any { return map[string]any{} }, false},
	{MethodPromptsList, "", func(string) map[string]any { return map[string]any{} }, false},
	{MethodResourcesTemplatesList, "", func(string) map[string]any { return map[string]any{} }, false},
}

// checkSharedReply checks one decoded result: its _meta holds its own tag
// and no other request's, plus what the era adds.
func checkSharedReply(raw jsontext.Value, c sharedCall, tag string, modern bool) error {
	var r struct {
		Meta       map[string]any `json:"_meta"`
		ResultType string         `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s %s: %v in %s", c.method, tag, err, raw)
	}
	want := 0
	if c.tagged {
		if r.Meta[tagKey] != tag {
			return fmt.Errorf("%s %s: _meta %v carries another request's tag", c.method, tag, r.Meta)
		}
		want++
	}
	if modern {
		if r.Meta[MetaServerInfo] == nil || r.ResultType != resultTypeComplete {
			return fmt.Errorf("%s %s: not decorated: %s", c.method, tag, raw)
		}
		want++
	} else if r.ResultType != "" || r.Meta[MetaServerInfo] != nil {
		return fmt.Errorf("%s %s: legacy result decorated: %s", c.method, tag, raw)
	}
	if _, ok := r.Meta["example.com/widget"]; ok {
		want++
	}
	if len(r.Meta) != want {
		return fmt.Errorf("%s %s: unexpected _meta keys %v", c.method, tag, r.Meta)
	}
	return nil
}

// httpPost is a goroutine-safe POST returning the result or error member.
func httpPost(e *httpEnv, body string, h http.Header) (jsontext.Value, error) {
	req, err := http.NewRequest(http.MethodPost, e.ts.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("status %d: %v in %s", resp.StatusCode, err, b)
	}
	if r.Error != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return r.Result, nil
}

// TestSharedResultsNotMutated: handlers return the same result values to
// many concurrent requests of both eras over stdio and HTTP. The
// dispatcher must decorate its own copy: under -race any write into the
// shared value is a race, each response carries only its own
// SetResultMeta keys, and the shared values are unchanged afterwards.
func TestSharedResultsNotMutated(t *testing.T) {
	sh := newSharedResults()
	s := newSharedServer(t, sh)
	c := startServer(t, s, nil)
	c.initialize(nil)
	e := newHTTPEnv(t, s, nil)
	sid := e.initSession(nil)

	type transport struct {
		name   string
		modern bool
		do     func(sc sharedCall, tag string) (jsontext.Value, error)
	}
	stdio := func(sc sharedCall, tag string, modernEra bool) (jsontext.Value, error) {
		p := sc.params(tag)
		if modernEra {
			p = modern(p, nil, nil)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.conn.Call(ctx, sc.method, p)
	}
	transports := []transport{
		{"stdio legacy", false, func(sc sharedCall, tag string) (jsontext.Value, error) { return stdio(sc, tag, false) }},
		{"stdio modern", true, func(sc sharedCall, tag string) (jsontext.Value, error) { return stdio(sc, tag, true) }},
		{"http legacy", false, func(sc sharedCall, tag string) (jsontext.Value, error) {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": tag, "method": sc.method, "params": sc.params(tag)})
			return httpPost(e, string(b), hdr("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))
		}},
		{"http modern", true, func(sc sharedCall, tag string) (jsontext.Value, error) {
			name := sc.name
			if sc.method == MethodResourcesRead {
				name = "shared://" + tag
			}
			return httpPost(e, modernBody(1, sc.method, sc.params(tag), nil), modernHeaders(sc.method, name))
		}},
	}
	const workers, rounds = 6, 3
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*len(transports)*len(sharedCalls))
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				for ti, tr := range transports {
					for ci, sc := range sharedCalls {
						tag := fmt.Sprintf("w%d-r%d-t%d-c%d", w, r, ti, ci)
						raw, err := tr.do(sc, tag)
						if err == nil {
							err = checkSharedReply(raw, sc, tag, tr.modern)
						}
						if err != nil {
							errs <- fmt.Errorf("%s: %w", tr.name, err)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if len(all) > 0 {
		t.Fatalf("%d failures, first: %v", len(all), errors.Join(all[:min(len(all), 5)]...))
	}
	if want := newSharedResults(); !reflect.DeepEqual(sh, want) {
		t.Fatalf("the shared results were modified:\n got %s\nwant %s", dumpShared(sh), dumpShared(want))
	}
}

func dumpShared(sh *sharedResults) string {
	return fmt.Sprintf("call=%+v bare=%+v read=%+v prompt=%+v complete=%+v", *sh.call, *sh.bare, *sh.read, *sh.prompt, *sh.complete)
}

// foreignResult is a result type of another package's shape: a pointer to
// a struct embedding ResultFields.
type foreignResult struct {
	ResultFields
	CacheFields
	Items []string `json:"items"`
}

// TestFinishResultSharedValues: whatever value reaches finishResult (a list
// result cached by a middleware, a result type it does not know), it is
// decorated in a copy, concurrently, without touching the value.
func TestFinishResultSharedValues(t *testing.T) {
	s, err := NewServer(ServerOptions{Name: "finish", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	list := &ListToolsResult{ResultFields: ResultFields{Meta: Meta{"example.com/widget": "w"}}, Tools: []*Tool{{Name: "t"}}}
	foreign := &foreignResult{Items: []string{"a"}}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for _, shared := range []Result{list, foreign} {
				for _, era := range []Era{EraLegacy, EraModern} {
					rs := new(reqState)
					rs.extra.resultMeta = &rs.resultMeta
					tag := fmt.Sprint(i)
					rs.extra.SetResultMeta(map[string]any{tagKey: tag})
					out, err := s.finishResult(shared, &rs.env, rs, era)
					if err != nil {
						t.Error(err)
						return
					}
					f := out.resultFields()
					if f == shared.resultFields() || f.Meta[tagKey] != tag || (era == EraModern) != (f.ResultType == resultTypeComplete) {
						t.Errorf("%T %v: %+v", shared, era, f)
					}
					if c, ok := out.(cacheable); ok && era == EraModern && c.cacheFields().TTLMs == nil {
						t.Errorf("%T: no cache hints", shared)
					}
				}
			}
		})
	}
	wg.Wait()
	if !reflect.DeepEqual(list, &ListToolsResult{ResultFields: ResultFields{Meta: Meta{"example.com/widget": "w"}}, Tools: []*Tool{{Name: "t"}}}) ||
		!reflect.DeepEqual(foreign, &foreignResult{Items: []string{"a"}}) {
		t.Fatalf("shared values modified: %+v %+v", list, foreign)
	}
}
