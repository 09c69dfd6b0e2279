// Command report reads the result lines of bench/cmd/load (one JSON object
// per line) and prints the bench table: the median over rounds of every
// figure, per row and target, with ratios to the bare baseline.
//
//	report [-baseline bare] results.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

type result struct {
	Target            string  `json:"target"`
	Row               string  `json:"row"`
	Round             int     `json:"round"`
	Conc              int     `json:"conc"`
	Requests          int64   `json:"requests"`
	Errors            int64   `json:"errors"`
	RPS               float64 `json:"rps"`
	P50us             float64 `json:"p50us"`
	P99us             float64 `json:"p99us"`
	CPUusReq          float64 `json:"cpuUsPerReq"`
	ProxyCPUusReq     float64 `json:"proxyCpuUsPerReq"`
	PeakRSSKiB        int64   `json:"peakRssKiB"`
	Notifications     int64   `json:"notifications"`
	NotesPerSec       float64 `json:"notesPerSec"`
	CPUusNote         float64 `json:"cpuUsPerNote"`
	HeapKiBPerSession float64 `json:"heapKiBPerSession"`
	RSSKiBPerSession  float64 `json:"rssKiBPerSession"`
	Sessions          int     `json:"sessions"`
	Notified          int64   `json:"notified"`
	MaxUs             float64 `json:"maxUs"`
	GetsPerOp         float64 `json:"getsPerOp"`
	HTTPPerOp         float64 `json:"httpPerOp"`
}

// metaLine is the first line run.sh writes: where and when the run was.
type metaLine struct {
	Meta *struct {
		// Env: date (UTC), CPU model, cores, Go version.
		Env string `json:"env"`
	} `json:"meta"`
}

var rows = []struct{ key, title, cpu, baseline string }{
	{"http-legacy", "HTTP legacy (2025-11-25, stateful session, tools/call echo)", "server", ""},
	{"http-modern", "HTTP modern (2026-07-28, stateless, _meta + MCP-Protocol-Version/Mcp-Method/Mcp-Name)", "server", ""},
	{"stdio", "stdio (legacy session, requests pipelined)", "server", ""},
	{"client-legacy", "Client leg, HTTP legacy: each client calls echo on the bare server", "client", ""},
	{"client-modern", "Client leg, HTTP modern: each client calls echo on the bare server", "client", ""},
	{"client-stdio", "Client leg, stdio: each client calls echo on the bare server it spawned", "client", ""},
	{"features-legacy", "Feature cost, pmcp server, HTTP legacy (ratios to plain). One operation: one tools/call of echo; for task, one task round = tools/call with params.task → tasks/get until completed → tasks/result (3 HTTP requests)", "server", "plain"},
	{"features-modern", "Feature cost, pmcp server, HTTP modern (ratios to plain). One operation: one tools/call of echo; for task, one task round = tools/call (tasks extension) → tasks/get until completed, which carries the result (2 HTTP requests)", "server", "plain"},
}

// rowKey is a row at one concurrency (0: the run did not say).
func rowKey(row string, conc int) string {
	if conc == 0 {
		return row
	}
	return row + "@" + strconv.Itoa(conc)
}

func main() {
	baseline := flag.String("baseline", "bare", "target the ratios are relative to")
	envFlag := flag.String("env", "", "date, machine and Go version of the run (default: the results' meta line)")
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	by := map[string]map[string][]result{}
	concs := map[string][]int{}
	var targets []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m metaLine
		if json.Unmarshal([]byte(line), &m) == nil && m.Meta != nil {
			env = m.Meta.Env
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			fmt.Fprintln(os.Stderr, "skipping bad line:", err)
			continue
		}
		if by[r.Row] == nil {
			by[r.Row] = map[string][]result{}
		}
		by[r.Row][r.Target] = append(by[r.Row][r.Target], r)
		k := rowKey(r.Row, r.Conc)
		if k != r.Row {
			if by[k] == nil {
				by[k] = map[string][]result{}
			}
			by[k][r.Target] = append(by[k][r.Target], r)
			if !slices.Contains(concs[r.Row], r.Conc) {
				concs[r.Row] = append(concs[r.Row], r.Conc)
			}
		}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
	}
	// Baseline first, then the order of first appearance.
	slices.SortStableFunc(targets, func(a, b string) int {
		switch {
		case a == *baseline && b != *baseline:
			return -1
		case b == *baseline && a != *baseline:
			return 1
		}
		return 0
	})

	if *envFlag != "" {
		env = *envFlag
	}
	if env == "" {
		env = "date, machine and Go version unknown (no meta line in the results)"
	}
	fmt.Printf("Run: %s\n", env)
	fmt.Println("Medians over rounds; ratios are to", *baseline+".")
	for _, row := range rows {
		cs := concs[row.key]
		slices.Sort(cs)
		if len(cs) == 0 {
			cs = []int{0}
		}
		for _, conc := range cs {
			b := *baseline
			if row.baseline != "" {
				b = row.baseline
			}
			note := ""
			if row.baseline == "plain" {
				note = env // the feature costs are pasted on their own
			}
			table(by[rowKey(row.key, conc)], row.title, note, row.cpu, conc, targets, b)
			if row.baseline == "plain" {
				taskNote(by[rowKey(row.key, conc)])
			}
		}
	}
	for _, row := range []struct{ key, title string }{
		{"stream-legacy", "Streaming, HTTP legacy SSE: stream tool, 16 progress notifications then the result"},
		{"stream-modern", "Streaming, HTTP modern SSE: stream tool, 16 progress notifications then the result"},
		{"stream-stdio", "Streaming, stdio: stream tool, 16 progress notifications then the result"},
	} {
		streamTable(by[row.key], row.title, targets, *baseline)
	}
	fanoutTable(by)
	gatewayTables(os.Stdout, by, concs)
	summary(by, targets)
}

// env is the run's date, machine and Go version (the meta line).
var env string

// taskNote follows a feature-cost table that has the task row: the
// requests a round took and the server CPU per HTTP request, for a
// comparison request by request with plain.
func taskNote(rs map[string][]result) {
	t, p := rs["task"], rs["plain"]
	if len(t) == 0 {
		return
	}
	gets := median(t, func(r result) float64 { return r.GetsPerOp })
	reqs := median(t, func(r result) float64 { return r.HTTPPerOp })
	cpu := median(t, func(r result) float64 { return r.CPUusReq })
	perReq := 0.0
	if reqs > 0 {
		perReq = cpu / reqs
	}
	fmt.Printf("\ntask: %.3f tasks/get and %.3f HTTP requests per round; server CPU %.1f µs per HTTP request of a round (× plain %s)\n",
		gets, reqs, perReq, ratio(perReq, median(p, func(r result) float64 { return r.CPUusReq })))
}

func fanoutTable(by map[string]map[string][]result) {
	if len(by["fanout-modern"])+len(by["fanout-detached"])+len(by["fanout-legacy"]) == 0 {
		return
	}
	fmt.Printf("\nFan-out: one tools list_changed to every open stream (pmcp)\n\n")
	fmt.Println("| streams | target | rounds | open | notified | p50 ms | p99 ms | max ms | server CPU µs/stream | KiB/stream (live heap) | KiB/stream (RSS) | errors |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, row := range []struct{ key, title string }{
		{"fanout-modern", "modern subscriptions/listen"},
		{"fanout-detached", "modern subscriptions/listen, DetachListenStreams"},
		{"fanout-legacy", "legacy GET (with its session)"},
	} {
		for t, r := range by[row.key] {
			fmt.Printf("| %s | %s | %d | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %d |\n", row.title, t, len(r),
				median(r, func(r result) float64 { return float64(r.Sessions) }),
				median(r, func(r result) float64 { return float64(r.Notified) }),
				median(r, func(r result) float64 { return r.P50us / 1e3 }),
				median(r, func(r result) float64 { return r.P99us / 1e3 }),
				median(r, func(r result) float64 { return r.MaxUs / 1e3 }),
				median(r, func(r result) float64 { return r.CPUusNote }),
				median(r, func(r result) float64 { return r.HeapKiBPerSession }),
				median(r, func(r result) float64 { return r.RSSKiBPerSession }),
				errorsOf(r))
		}
	}
}

func streamTable(rs map[string][]result, title string, targets []string, baseline string) {
	if len(rs) == 0 {
		return
	}
	base := rs[baseline]
	baseN := median(base, func(r result) float64 { return r.NotesPerSec })
	baseCPU := median(base, func(r result) float64 { return r.CPUusNote })
	fmt.Printf("\n%s\n\n", title)
	fmt.Printf("| target | rounds | notifications/s | × %s | server CPU µs/notification | × %s | calls/s | p50 µs | p99 µs | errors |\n", baseline, baseline)
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, t := range targets {
		r := rs[t]
		if len(r) == 0 {
			continue
		}
		n := median(r, func(r result) float64 { return r.NotesPerSec })
		cpu := median(r, func(r result) float64 { return r.CPUusNote })
		fmt.Printf("| %s | %d | %.0f | %s | %.2f | %s | %.0f | %.0f | %.0f | %d |\n", t, len(r), n, ratio(n, baseN), cpu, ratio(cpu, baseCPU),
			median(r, func(r result) float64 { return r.RPS }),
			median(r, func(r result) float64 { return r.P50us }),
			median(r, func(r result) float64 { return r.P99us }),
			errorsOf(r))
	}
}

// table prints one row's table; note (if any) ends the title.
func table(rs map[string][]result, title, note, cpuOf string, conc int, targets []string, baseline string) {
	if len(rs) == 0 {
		return
	}
	{
		base := rs[baseline]
		baseRPS := median(base, func(r result) float64 { return r.RPS })
		baseCPU := median(base, func(r result) float64 { return r.CPUusReq })
		if conc > 0 {
			title += fmt.Sprintf(", c=%d", conc)
		}
		if note != "" {
			title += "; " + note
		}
		fmt.Printf("\n%s\n\n", title)
		// The feature-cost tables count operations (a tools/call, or a
		// task round; the title says which).
		per, unit := "req/s", "req"
		if baseline == "plain" {
			per, unit = "ops/s", "op"
		}
		fmt.Printf("| target | rounds | %s | × %s | p50 µs | p99 µs | %s CPU µs/%s | × %s | peak RSS MiB | errors |\n", per, baseline, cpuOf, unit, baseline)
		fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, t := range targets {
			r := rs[t]
			if len(r) == 0 {
				continue
			}
			rps := median(r, func(r result) float64 { return r.RPS })
			cpu := median(r, func(r result) float64 { return r.CPUusReq })
			fmt.Printf("| %s | %d | %.0f | %s | %.0f | %.0f | %.1f | %s | %.1f | %d |\n", t, len(r), rps, ratio(rps, baseRPS),
				median(r, func(r result) float64 { return r.P50us }),
				median(r, func(r result) float64 { return r.P99us }),
				cpu, ratio(cpu, baseCPU),
				median(r, func(r result) float64 { return float64(r.PeakRSSKiB) / 1024 }),
				errorsOf(r))
		}
	}
}

func summary(by map[string]map[string][]result, targets []string) {
	if rs := by["sessions"]; len(rs) > 0 {
		fmt.Printf("\nIdle legacy sessions (initialize + notifications/initialized, never deleted)\n\n")
		fmt.Println("| target | rounds | KiB/session (RSS delta) | KiB/session (live heap delta, after GC) | peak RSS MiB | errors |")
		fmt.Println("|---|--:|--:|--:|--:|--:|")
		for _, t := range targets {
			r := rs[t]
			if len(r) == 0 {
				continue
			}
			fmt.Printf("| %s | %d | %.2f | %.2f | %.1f | %d |\n", t, len(r),
				median(r, func(r result) float64 { return r.RSSKiBPerSession }),
				median(r, func(r result) float64 { return r.HeapKiBPerSession }),
				median(r, func(r result) float64 { return float64(r.PeakRSSKiB) / 1024 }),
				errorsOf(r))
		}
	}

	// The summary in the layout of the issue.
	if len(by["http-legacy"])+len(by["http-modern"])+len(by["stdio"]) == 0 {
		return
	}
	fmt.Printf("\nSummary (c=16 when the run swept concurrencies; %s)\n\n", env)
	fmt.Println("| target | HTTP legacy req/s | CPU µs/req | HTTP modern req/s | CPU µs/req | stdio req/s | CPU µs/req | KiB per idle session (RSS) | (heap) |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, t := range targets {
		if len(by["sessions"][t]) == 0 && !slices.ContainsFunc(rows[:3], func(r struct{ key, title, cpu, baseline string }) bool { return len(by[r.key][t]) > 0 }) {
			continue // not a server of the server leg
		}
		fmt.Printf("| %s", t)
		for _, row := range rows[:3] {
			// The summary is at c=16 when the run swept concurrencies.
			r := by[row.key][t]
			if r16 := by[rowKey(row.key, 16)][t]; len(r16) > 0 {
				r = r16
			}
			if len(r) == 0 {
				fmt.Print(" | – | –")
				continue
			}
			fmt.Printf(" | %.0f | %.1f", median(r, func(r result) float64 { return r.RPS }), median(r, func(r result) float64 { return r.CPUusReq }))
		}
		if r := by["sessions"][t]; len(r) > 0 {
			fmt.Printf(" | %.2f | %.2f |\n", median(r, func(r result) float64 { return r.RSSKiBPerSession }),
				median(r, func(r result) float64 { return r.HeapKiBPerSession }))
		} else {
			fmt.Println(" | – | – |")
		}
	}
}

func median(rs []result, f func(result) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func ratio(v, base float64) string {
	if base == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v/base)
}

func errorsOf(rs []result) int64 {
	var n int64
	for _, r := range rs {
		n += r.Errors
	}
	return n
}
