#!/usr/bin/env bash
# icount.sh [DIR]: machine instructions per operation of the root
# package's request-path benchmarks, counted by valgrind's callgrind, so
# two commits can be compared on a loaded machine (instruction counts do
# not depend on what else runs; wall time and CPU time do).
#
# For each benchmark it runs the test binary twice, at N1 and N2
# iterations, and prints (count(N2) - count(N1)) / (N2 - N1): the setup
# cancels out. GOMAXPROCS=1 (no idle processors spinning), GOGC=off (no
# collection cycles landing in one run and not the other) and
# asyncpreemptoff (callgrind does not survive Go's preemption signals)
# keep the count stable to about 0.5 %. DIR is the module root to measure
# (default: this repository's root), e.g. a `git worktree add` of an older
# commit.
#
# HOP=1 measures the gateway leg's question instead: proxy's
# BenchmarkHopHTTP, one tools/call called directly, through
# httputil.ReverseProxy and through the proxy (all in one process), and
# prints what each hop adds to direct and the proxy's addition as a
# multiple of the reverse proxy's. Instructions leave out the kernel's
# work (system calls, loopback TCP), which both hops pay alike: the
# multiple is therefore higher than the CPU-time one of the gateway leg.
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
N1=${N1:-2000}
N2=${N2:-22000}
command -v valgrind >/dev/null || { echo "icount.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
bin=$(mktemp "${TMPDIR:-/tmp}/icount.XXXXXX")
trap 'rm -f "$bin"' EXIT
if [ "${HOP:-0}" = 1 ]; then
	(cd "$dir" && go test -c -o "$bin" ./proxy)
else
	(cd "$dir" && go test -c -o "$bin" .)
fi
count() { # bench n
	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin" -test.run='^$' -test.bench="$1" -test.benchtime="$2x" -test.count=1 2>&1 |
		awk '/Collected/ {print $4}'
}
if [ "${HOP:-0}" = 1 ]; then
	for era in legacy modern; do
		declare -A added
		d1=$(count "BenchmarkHopHTTP/$era/^direct\$" "$N1")
		d2=$(count "BenchmarkHopHTTP/$era/^direct\$" "$N2")
		direct=$(((d2 - d1) / (N2 - N1)))
		for hop in revproxy proxy; do
			a=$(count "BenchmarkHopHTTP/$era/^$hop\$" "$N1")
			b=$(count "BenchmarkHopHTTP/$era/^$hop\$" "$N2")
			added[$hop]=$(((b - a) / (N2 - N1) - direct))
		done
		printf '%-7s direct %8d instructions/call; added: revproxy %8d, proxy %8d (%s x)\n' "$era" "$direct" \
			"${added[revproxy]}" "${added[proxy]}" "$(awk -v p="${added[proxy]}" -v r="${added[revproxy]}" 'BEGIN {printf "%.2f", p / r}')"
	done
	exit 0
fi
for bench in 'BenchmarkHTTPToolsCall$/legacy' 'BenchmarkHTTPToolsCall$/modern' \
	'BenchmarkServeToolsCall$/legacy' 'BenchmarkServeToolsCall$/modern' 'BenchmarkMemoryPipeToolsCall$'; do
	a=$(count "$bench" "$N1")
	b=$(count "$bench" "$N2")
	printf '%-36s %8d instructions/op\n' "$bench" $(((b - a) / (N2 - N1)))
done
