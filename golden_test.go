package pmcp

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Shared by the behaviour goldens of issue 19 (TestMethodFacts,
// TestEraDecision, TestHTTPRefusals): each records today's observable
// facts, one sorted line per case, in testdata/*.golden. Rewrite them with
//
//	go test -run 'TestMethodFacts|TestEraDecision|TestHTTPRefusals' -update .
//
// only for a change of behaviour that was decided on purpose: the diff of
// the golden file is then the review of that change.
var updateGolden = flag.Bool("update", false, "rewrite the testdata/*.golden files of the behaviour goldens")

// checkGolden compares lines (sorted here) with testdata/name, or rewrites
// it under -update.
func checkGolden(t *testing.T, name string, lines []string) {
	t.Helper()
	lines = slices.Clone(lines)
	slices.Sort(lines)
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			t.Fatalf("two cases print the same line %q: name the cases apart", lines[i])
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if got == string(b) {
		return
	}
	// Report the lines that differ, not the whole file.
	var diff []string
	for _, l := range want {
		if !slices.Contains(lines, l) {
			diff = append(diff, "- "+l)
		}
	}
	for _, l := range lines {
		if !slices.Contains(want, l) {
			diff = append(diff, "+ "+l)
		}
	}
	t.Errorf("%s: observable behaviour changed (%d lines differ; -update only for a decided change):\n%s", path, len(diff), strings.Join(diff, "\n"))
}

// factLog is a slog handler that keeps the access records by request id,
// and a middleware that keeps the Request each request showed it.
type factLog struct {
	mu   sync.Mutex
	recs map[string]map[string]string // id -> access attributes
	mw   map[string]string            // id -> Request.Name and NameRegistered seen by middleware
	wake chan struct{}                // closed and replaced on every record
}

func newFactLog() *factLog {
	return &factLog{recs: map[string]map[string]string{}, mw: map[string]string{}, wake: make(chan struct{})}
}

func (l *factLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *factLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *factLog) WithGroup(string) slog.Handler            { return l }

func (l *factLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "mcp request" {
		return nil
	}
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.recs[m["id"]] = m
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	return nil
}

// middleware records the Request.Name of every request by id, and
// whether NameRegistered says it names something registered.
func (l *factLog) middleware(next MethodHandler) MethodHandler {
	return func(ctx context.Context, req *Request) (Result, error) {
		seen := strconv.Quote(req.Name)
		if req.NameRegistered() {
			seen += "(registered)"
		}
		l.mu.Lock()
		l.mw[req.ID.String()] = seen
		l.mu.Unlock()
		return next(ctx, req)
	}
}

// record returns the access record of id (nil when none was written).
func (l *factLog) record(id string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recs[id]
}

// waitRecord waits for the access record of id.
func (l *factLog) waitRecord(t *testing.T, id string) map[string]string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		r, wake := l.recs[id], l.wake
		l.mu.Unlock()
		if r != nil {
			return r
		}
		select {
		case <-wake:
		case <-timeout:
			t.Fatalf("no access record for id %s", id)
			return nil
		}
	}
}

// seen returns the Request.Name a middleware saw for id (quoted, marked
// "(registered)" when NameRegistered was true), and whether the request
// reached the middleware at all.
func (l *factLog) seen(id string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.mw[id]
	return n, ok
}

// headerGoldenCase names the request to goldenHTTPEnv's handler wrapper.
const headerGoldenCase = "X-Golden-Case"

// goldenHTTPEnv is newHTTPEnv's loopback server, with the handler wrapped
// to signal when ServeHTTP returned for a request carrying
// X-Golden-Case: by then the handler wrote its access record, if any
// (a client can read a whole JSON reply before that).
type goldenHTTPEnv struct {
	*httpEnv
	mu   sync.Mutex
	done map[string]chan struct{}
}

func newGoldenHTTPEnv(t *testing.T, srv *Server, opts StreamableHTTPOptions) *goldenHTTPEnv {
	t.Helper()
	g := &goldenHTTPEnv{done: map[string]chan struct{}{}}
	h := NewStreamableHTTPHandler(srv, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if c := r.Header.Get(headerGoldenCase); c != "" {
			close(g.doneChan(c))
		}
	}))
	t.Cleanup(func() {
		h.Close()
		ts.Close()
	})
	g.httpEnv = &httpEnv{t: t, srv: srv, h: h, ts: ts}
	return g
}

func (g *goldenHTTPEnv) doneChan(c string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.done[c]
	if !ok {
		ch = make(chan struct{})
		g.done[c] = ch
	}
	return ch
}

// send is httpEnv.do for case c: served(c) then waits for its end.
func (g *goldenHTTPEnv) send(ctx context.Context, c, method string, body any, h http.Header) *http.Response {
	g.t.Helper()
	h = h.Clone()
	h.Set(headerGoldenCase, c)
	return g.do(ctx, method, body, h)
}

// served waits until ServeHTTP returned for case c.
func (g *goldenHTTPEnv) served(t *testing.T, c string) {
	t.Helper()
	recvSignal(t, g.doneChan(c), "ServeHTTP of "+c)
}
