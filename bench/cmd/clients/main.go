// Command clients is the client leg of the bench: one MCP client
// implementation calls the echo tool of a server (the bare baseline) with
// -c calls in flight for a bounded window, and reports the CPU its OWN
// process spent per call (utime+stime of /proc/self/stat), calls/s and
// p50/p99 latency, as one JSON result line like bench/cmd/load's.
//
//	clients -impl pmcp|gosdk|mcpgo|bare -mode legacy|modern -url http://127.0.0.1:PORT/mcp
//	clients -impl pmcp|gosdk|mcpgo|bare -mode stdio -- server-command args...
//
// legacy: a 2025-11-25 session (initialize, then tools/call with the
// session id); modern: 2026-07-28 (server/discover, then stateless
// tools/call carrying the per-request _meta); stdio: a legacy session over
// the spawned server's standard input and output. Every client shares one
// session among its -c callers, as an application would. The server's CPU
// is not counted: only this process's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result matches bench/cmd/load's result line.
type Result struct {
	Target     string  `json:"target"`
	Row        string  `json:"row"`
	Round      int     `json:"round"`
	Conc       int     `json:"conc,omitempty"`
	Requests   int64   `json:"requests,omitempty"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds,omitempty"`
	RPS        float64 `json:"rps,omitempty"`
	P50us      float64 `json:"p50us,omitempty"`
	P99us      float64 `json:"p99us,omitempty"`
	CPUusReq   float64 `json:"cpuUsPerReq,omitempty"`
	PeakRSSKiB int64   `json:"peakRssKiB"`
	FirstError string  `json:"firstError,omitempty"`
}

// caller is one connected client: call makes one echo call and checks it.
type caller struct {
	call  func(ctx context.Context) error
	close func()
}

type factory func(ctx context.Context, mode, endpoint string, argv []string, conc int) (*caller, error)

var impls = map[string]factory{
	"pmcp":  newPmcp,
	"gosdk": newGosdk,
	"mcpgo": newMcpgo,
	"bare":  newBare,
}

const echoText = "hello"

func main() {
	impl := flag.String("impl", "", "client implementation: pmcp, gosdk, mcpgo or bare")
	mode := flag.String("mode", "legacy", "legacy, modern or stdio")
	rawURL := flag.String("url", "", "loopback URL of the MCP endpoint (legacy, modern)")
	conc := flag.Int("c", 16, "calls in flight")
	dur := flag.Duration("d", 5*time.Second, "measurement window")
	warm := flag.Duration("warmup", time.Second, "warm-up before the window")
	round := flag.Int("round", 0, "round number, for the result line")
	flag.Parse()
	f := impls[*impl]
	if f == nil {
		fatalf("unknown -impl %q", *impl)
	}
	if *conc < 1 || *conc > 1024 || *dur <= 0 || *dur > 5*time.Minute || *warm < 0 || *warm > time.Minute {
		fatalf("-c must be 1..1024, -d in (0, 5m], -warmup in [0, 1m]")
	}
	switch *mode {
	case "legacy", "modern":
		checkLoopback(*rawURL)
		waitReady(*rawURL)
	case "stdio":
		if flag.NArg() == 0 {
			fatalf("stdio: the server command is missing (after --)")
		}
	default:
		fatalf("-mode must be legacy, modern or stdio")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *warm+*dur+time.Minute)
	defer cancel()
	cl, err := f(ctx, *mode, *rawURL, flag.Args(), *conc)
	if err != nil {
		fatalf("%s %s: connect: %v", *impl, *mode, err)
	}
	r := run(ctx, cl, *conc, *warm, *dur)
	cl.close()
	r.Target, r.Round, r.Conc = *impl, *round, *conc
	r.Row = "client-" + *mode
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "clients: %s %s: %d errors, first: %s\n", r.Target, r.Row, r.Errors, r.FirstError)
	}
}

func run(ctx context.Context, cl *caller, conc int, warm, dur time.Duration) Result {
	// One call first: connection set up, code paths warm.
	if err := cl.call(ctx); err != nil {
		fatalf("first call: %v", err)
	}
	now := time.Now()
	start, end := now.Add(warm), now.Add(warm+dur)
	var (
		wg     sync.WaitGroup
		errs   atomic.Int64
		mu     sync.Mutex
		first  string
		lats   = make([][]int64, conc)
		counts = make([]int64, conc)
	)
	for i := range conc {
		lats[i] = make([]int64, 0, 1<<18)
		wg.Go(func() {
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				err := cl.call(ctx)
				t1 := time.Now()
				if err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						first = err.Error()
						mu.Unlock()
					}
					if ctx.Err() != nil {
						return
					}
					continue
				}
				if t1.After(start) && !t1.After(end) {
					counts[i]++
					if len(lats[i]) < cap(lats[i]) {
						lats[i] = append(lats[i], int64(t1.Sub(t0)))
					}
				}
			}
		})
	}
	time.Sleep(time.Until(start))
	c0 := selfTicks()
	time.Sleep(time.Until(end))
	c1 := selfTicks()
	wg.Wait()
	var n int64
	var all []int64
	for i := range conc {
		n += counts[i]
		all = append(all, lats[i]...)
	}
	slices.Sort(all)
	r := Result{Requests: n, Seconds: dur.Seconds(), RPS: float64(n) / dur.Seconds(), Errors: errs.Load(), FirstError: first}
	if len(all) > 0 {
		r.P50us = float64(all[len(all)/2]) / 1e3
		r.P99us = float64(all[int(0.99*float64(len(all)-1))]) / 1e3
	}
	if n > 0 {
		r.CPUusReq = float64(c1-c0) / 100 * 1e6 / float64(n)
	}
	r.PeakRSSKiB = selfHWM()
	return r
}

// selfTicks is utime+stime of this process in clock ticks (USER_HZ=100);
// the server, a child for stdio, is not included.
func selfTicks() int64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		fatalf("read /proc/self/stat: %v", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

func selfHWM() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

func checkLoopback(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		fatalf("bad -url %q", raw)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		fatalf("-url must be a loopback address, not %q", u.Host)
	}
}

func waitReady(raw string) {
	u, _ := url.Parse(raw)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			fatalf("server at %s not ready: %v", u.Host, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "clients: "+format+"\n", args...)
	os.Exit(1)
}

// checkText reports whether the echo came back.
func checkText(got string) error {
	if got != echoText {
		return fmt.Errorf("echo returned %q", got)
	}
	return nil
}
