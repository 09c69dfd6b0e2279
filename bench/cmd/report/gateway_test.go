package main

import (
	"strings"
	"testing"
)

// The gateway table charges a hop with the proxy's CPU plus the change in
// the server's, and compares the gateway's with the reverse proxy's.
func TestGatewayTable(t *testing.T) {
	rs := map[string][]result{
		gwDirect:   {{Target: gwDirect, P50us: 100, P99us: 300, CPUusReq: 30}},
		gwRevProxy: {{Target: gwRevProxy, P50us: 150, P99us: 400, CPUusReq: 32, ProxyCPUusReq: 48}},
		gwGateway:  {{Target: gwGateway, P50us: 180, P99us: 900, CPUusReq: 40, ProxyCPUusReq: 80}},
	}
	var b strings.Builder
	gatewayTable(&b, rs, "T", 16)
	out := b.String()
	for _, want := range []string{
		"| revproxy | 1 | 0 | 150 | 400 | 50 | 100 | 32.0 | 48.0 | 50.0 | 1.00 | 0 |",
		"| gateway | 1 | 0 | 180 | 900 | 80 | 600 | 40.0 | 80.0 | 90.0 | 1.80 | 0 |",
		"added CPU per call 90.0 µs = 1.80 × the reverse proxy's (goal ≤ 1.5: NOT met); added p50 80 µs (goal ≤ 100 µs at c=16: met)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// When the reverse proxy alone adds more latency than the goal allows, the
// p50 goal is reported as not judgeable, with the gateway's part over it.
func TestGatewayTableP50NotJudgeable(t *testing.T) {
	rs := map[string][]result{
		gwDirect:   {{Target: gwDirect, P50us: 300, CPUusReq: 30}},
		gwRevProxy: {{Target: gwRevProxy, P50us: 900, CPUusReq: 32, ProxyCPUusReq: 40}},
		gwGateway:  {{Target: gwGateway, P50us: 1000, CPUusReq: 33, ProxyCPUusReq: 50}},
	}
	var b strings.Builder
	gatewayTable(&b, rs, "T", 16)
	want := "added p50 700 µs (goal ≤ 100 µs at c=16: not judgeable here: the reverse proxy alone adds 600 µs; the gateway 100 µs more than it)"
	if out := b.String(); !strings.Contains(out, want) {
		t.Errorf("missing %q in\n%s", want, out)
	}
}
