#!/usr/bin/env bash
# gwcount.sh: the gateway leg's question in machine instructions, counted
# by valgrind's callgrind on the real processes: `pmcp gateway` and
# net/http/httputil.ReverseProxy (servers/revproxy), each in front of the
# bare server, serving the load generator's tools/call of echo. Prints the
# proxy process's user-space instructions per call and the gateway's as a
# multiple of the reverse proxy's, per era.
#
# Unlike icount.sh's HOP=1 (the proxy package in one process, a pmcp
# upstream), this measures the binary operators run, its configuration
# (one policy allowing every tool) and the bench's bare upstream. It leaves
# out the kernel's work (loopback TCP, about the same for both), garbage
# collection (GOGC=off) and the upstream server's own cost; on a shared
# machine it is the figure that does not move with the neighbours.
#
#   ./gwcount.sh                 # both eras, 16 callers, 8 s counted each
#   ERAS=legacy CONC=1 SECONDS_COUNTED=5s ./gwcount.sh
#
# valgrind slows the proxy about 50-fold: expect a few thousand calls per
# run. The count starts after a warm-up (callgrind_control -z) and stops
# before the processes end (callgrind_control -d).
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "gwcount.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
ERAS=${ERAS:-legacy modern}
CONC=${CONC:-16}
SECONDS_COUNTED=${SECONDS_COUNTED:-8s}
work=$(mktemp -d "${TMPDIR:-/tmp}/gwcount.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/bare" ./servers/bare
go build -o "$work/revproxy" ./servers/revproxy
go build -o "$work/load" ./cmd/load
(cd ../cmd/pmcp && go build -o "$work/pmcp-cli" .)

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
waitport() {
	for _ in $(seq 600); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "gwcount.sh: nothing listens on port $1" >&2
	return 1
}

# count TARGET ERA: prints instructions per call of the proxy process.
count() {
	local t=$1 era=$2 up p tool=echo out="$work/cg.$1.$2"
	up=$(freeport)
	"$work/bare" -addr "127.0.0.1:$up" &
	local spid=$!
	pids+=("$spid")
	waitport "$up"
	p=$(freeport)
	local vg=(env GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind "--callgrind-out-file=$out")
	if [ "$t" = revproxy ]; then
		"${vg[@]}" "$work/revproxy" -addr "127.0.0.1:$p" -upstream "http://127.0.0.1:$up/mcp" 2>/dev/null &
	else
		printf '{"mcpServers":{"bare":{"url":"http://127.0.0.1:%s/mcp"}},"policies":[{"match":{},"allowTools":["*"]}]}\n' "$up" >"$work/gateway.json"
		"${vg[@]}" "$work/pmcp-cli" gateway --listen "127.0.0.1:$p" --config "$work/gateway.json" --log-level off 2>/dev/null &
		tool=bare_echo
	fi
	local vpid=$!
	pids+=("$vpid")
	waitport "$p"
	local url="http://127.0.0.1:$p/mcp"
	"$work/load" http -target "$t" -tool-name "$tool" -c "$CONC" -d 3s -warmup 100ms -mode "$era" -url "$url" -pid "$spid" >/dev/null
	callgrind_control -z "$vpid" >/dev/null 2>&1
	"$work/load" http -target "$t" -tool-name "$tool" -c "$CONC" -d "$SECONDS_COUNTED" -warmup 10ms -mode "$era" -url "$url" -pid "$spid" >"$work/load.json"
	callgrind_control -d "$vpid" >/dev/null 2>&1
	kill "$vpid" "$spid"
	wait "$vpid" "$spid" 2>/dev/null || true
	local n ir
	n=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['requests'])" "$work/load.json")
	ir=$(callgrind_annotate "$(ls "$out".* | head -1)" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
	rm -f "$out" "$out".*
	echo $((ir / n))
}

for era in $ERAS; do
	r=$(count revproxy "$era")
	g=$(count gateway "$era")
	printf '%-7s c=%-3s instructions per call: revproxy %8d, gateway %8d (%s x)\n' "$era" "$CONC" "$r" "$g" \
		"$(awk -v g="$g" -v r="$r" 'BEGIN {printf "%.2f", g / r}')"
done
