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
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
N1=${N1:-2000}
N2=${N2:-22000}
command -v valgrind >/dev/null || { echo "icount.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
bin=$(mktemp "${TMPDIR:-/tmp}/icount.XXXXXX")
trap 'rm -f "$bin"' EXIT
(cd "$dir" && go test -c -o "$bin" .)
count() { # bench n
	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin" -test.run='^$' -test.bench="$1" -test.benchtime="$2x" -test.count=1 2>&1 |
		awk '/Collected/ {print $4}'
}
for bench in 'BenchmarkHTTPToolsCall$/legacy' 'BenchmarkHTTPToolsCall$/modern' \
	'BenchmarkServeToolsCall$/legacy' 'BenchmarkServeToolsCall$/modern' 'BenchmarkMemoryPipeToolsCall$'; do
	a=$(count "$bench" "$N1")
	b=$(count "$bench" "$N2")
	printf '%-36s %8d instructions/op\n' "$bench" $(((b - a) / (N2 - N1)))
done
