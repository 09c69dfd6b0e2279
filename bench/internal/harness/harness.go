// Package harness is the command-line contract every bench server follows:
//
//	-addr 127.0.0.1:PORT  serve streamable HTTP at /mcp (plus /debug/heap)
//	-stdio                serve MCP over standard input and output
//	-cpuprofile FILE      write a CPU profile until the server stops
//	-sse                  answer tools/call with an SSE stream (streaming leg)
//
// /debug/heap runs two garbage collections and reports the live heap, so
// the load generator can measure memory per idle session without the
// garbage-collector slack that RSS includes.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"

	pprofhttp "net/http/pprof"
	"syscall"
	"time"
)

// SSE is the -sse flag: answer requests with SSE streams instead of one
// JSON body, so that a tool's progress notifications reach the client.
// Read it in newHTTP (after Main parsed the flags).
var SSE = flag.Bool("sse", false, "answer tools/call with an SSE stream (the streaming leg)")

// StreamNotes is how many progress notifications the stream tool sends
// before its result.
const StreamNotes = 16

// debug holds the extra /debug/ handlers a server registers with Handle.
var debug = map[string]http.Handler{}

// Handle registers h at path (under /debug/) next to /mcp, for a server's
// bench hooks; call it before Main.
func Handle(path string, h http.Handler) { debug[path] = h }

// Main parses the flags and serves: newHTTP builds the handler mounted at
// /mcp, stdio serves standard input and output until it is closed.
func Main(newHTTP func() http.Handler, stdio func(ctx context.Context) error) {
	addr := flag.String("addr", "", "serve streamable HTTP at `host:port`/mcp (loopback only)")
	useStdio := flag.Bool("stdio", false, "serve MCP over stdin/stdout")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to `file`")
	flag.Parse()
	if (*addr == "") == !*useStdio {
		fmt.Fprintln(os.Stderr, "exactly one of -addr and -stdio is required")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *useStdio {
		err = stdio(ctx)
	} else {
		err = serveHTTP(ctx, *addr, newHTTP())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %s: loopback addresses only", addr)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/debug/heap", heap)
	mux.HandleFunc("/debug/pprof/", pprofhttp.Index) // heap and goroutine profiles of a run
	for p, h := range debug {
		mux.Handle(p, h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Heap is the body of /debug/heap.
type Heap struct {
	HeapAlloc uint64 `json:"heapAlloc"`
	HeapInuse uint64 `json:"heapInuse"`
	Sys       uint64 `json:"sys"`
	Objects   uint64 `json:"objects"`
}

func heap(w http.ResponseWriter, _ *http.Request) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Heap{HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, Sys: ms.Sys, Objects: ms.HeapObjects})
}
