package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gopmcp/pmcp/proxy"
)

// readyTimeout bounds one readiness check of the upstreams.
const readyTimeout = 5 * time.Second

// healthRoutes mounts the bridge's probes next to its MCP endpoint (any
// listener in front of a proxy can use them):
//
//   - GET /healthz: 200 while the process serves (liveness).
//   - GET /readyz: 200 when every upstream is reachable, else 503 naming
//     the unreachable ones (the reasons go to the log, not to whoever
//     polls). Upstreams are contacted at most once a second (Proxy.Probe).
//
// A probe path equal to the MCP path is left to MCP.
func healthRoutes(p *proxy.Proxy, mcpPath string) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		if mcpPath != "/healthz" {
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
				probeAnswer(w, http.StatusOK, "ok")
			})
		}
		if mcpPath != "/readyz" {
			mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
				defer cancel()
				var down []string
				for _, st := range p.Probe(ctx) {
					if !st.Up {
						down = append(down, st.Name)
					}
				}
				if len(down) > 0 {
					probeAnswer(w, http.StatusServiceUnavailable, "unreachable upstreams: "+strings.Join(down, ", "))
					return
				}
				probeAnswer(w, http.StatusOK, "ready")
			})
		}
	}
}

func probeAnswer(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
