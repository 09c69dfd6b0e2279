package pmcp

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestHTTPClientReplyDirect: the response to a call read from its POST's
// JSON body reaches the waiting call directly (rpcconn.ReplySink), in
// both eras; only what comes otherwise goes through the read loop.
func TestHTTPClientReplyDirect(t *testing.T) {
	for _, era := range []Era{EraLegacy, EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			srv, _ := newHTTPTestServer(t)
			e := newHTTPEnv(t, srv, &StreamableHTTPOptions{JSONResponse: true})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := NewClient(ClientOptions{Era: era}).ConnectHTTP(ctx, e.ts.URL, HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.http == nil || cs.http.resolve == nil {
				t.Fatal("the HTTP transport got no reply sink from its Conn")
			}
			var direct atomic.Int32
			resolve := cs.http.resolve
			cs.http.resolve = func(r *jsonrpc.Response) bool {
				direct.Add(1)
				return resolve(r)
			}
			res, err := cs.CallTool(ctx, "echo", map[string]any{"text": "hi"})
			if err != nil || res.IsError {
				t.Fatalf("CallTool: %+v, %v", res, err)
			}
			if n := direct.Load(); n != 1 {
				t.Fatalf("%d responses handed over directly, want 1", n)
			}
		})
	}
}
