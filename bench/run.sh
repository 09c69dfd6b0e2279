#!/usr/bin/env bash
# Runs the whole bench in one go: every server (bare net/http baseline,
# pmcp, go-sdk, mcp-go) on every row (HTTP legacy, HTTP modern, stdio, idle
# sessions), interleaved, ROUNDS rounds, and prints the table of medians.
#
# The server is pinned to one core and the load generator to the other
# (taskset). Loopback only; every run is bounded (WARMUP + DURATION), and
# the whole script takes about 4 minutes with the defaults.
#
# Environment:
#   ROUNDS=3 DURATION=5s WARMUP=1s CONC=16 SESSIONS=10000
#   TARGETS="bare pmcp gosdk mcpgo"   ROWS="legacy modern stdio sessions"
#                                     TARGETS may add pmcpredis (pmcpsticky): pmcp as two
#                                     replicas sharing Redis behind a round robin (prefix routing); no stdio row
#   PMCP_BENCH_REDIS=host:port        Redis for pmcpredis; unset: a
#                                     redis-server is started on LOAD_CPU
#   PMCP_BENCH_REPLICAS=2             replicas in the pmcpredis process
#   SERVER_CPU=0 LOAD_CPU=1           cores for the server and the generator
#   OUT=dir                           where binaries, results and profiles go
#   CPUPROFILE=1                      servers write CPU profiles to $OUT/prof
set -euo pipefail
cd "$(dirname "$0")"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONC=${CONC:-16}
SESSIONS=${SESSIONS:-10000}
TARGETS=${TARGETS:-"bare pmcp gosdk mcpgo"}
ROWS=${ROWS:-"legacy modern stdio sessions"}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-$(mktemp -d /tmp/pmcp-bench.XXXXXX)}
PORT_BASE=${PORT_BASE:-18700}

if ! command -v taskset >/dev/null; then
	echo "taskset not found: installing util-linux" >&2
	apt-get update >/dev/null && apt-get install -y util-linux >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
	echo "warning: fewer than 2 cores; the server and the generator share one" >&2
	LOAD_CPU=$SERVER_CPU
fi

mkdir -p "$OUT/bin" "$OUT/prof"
echo "building into $OUT/bin" >&2
for t in $TARGETS; do
	go build -o "$OUT/bin/$t" "./servers/$t"
done
go build -o "$OUT/bin/load" ./cmd/load
go build -o "$OUT/bin/report" ./cmd/report

redis_pid=
case " $TARGETS " in
*" pmcpredis "* | *" pmcpsticky "*)
	if [ -z "${PMCP_BENCH_REDIS:-}" ]; then
		command -v redis-server >/dev/null || { echo "pmcpredis needs redis-server (apt-get install redis-server) or PMCP_BENCH_REDIS" >&2; exit 2; }
		rport=$((PORT_BASE - 1))
		taskset -c "$LOAD_CPU" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/redis.log" 2>&1 &
		redis_pid=$!
		trap 'kill "$redis_pid" 2>/dev/null || true' EXIT # until stop_all takes over
		for _ in $(seq 1 100); do
			redis-cli -p "$rport" ping 2>/dev/null | grep -q PONG && break
			kill -0 "$redis_pid" 2>/dev/null || { cat "$OUT/redis.log" >&2; exit 1; }
			sleep 0.1
		done
		export PMCP_BENCH_REDIS=127.0.0.1:$rport
	fi
	;;
esac

results=$OUT/results.jsonl
: >"$results"
port=$PORT_BASE
server_pid=

stop_server() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=
	fi
}
stop_all() {
	stop_server
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
}
trap stop_all EXIT

profile_flag() { # target row round
	if [ "${CPUPROFILE:-0}" = 1 ]; then
		echo "-cpuprofile=$OUT/prof/$1-$2-$3.prof"
	fi
}

run_one() { # round row target
	local round=$1 row=$2 t=$3
	local bin=$OUT/bin/$t
	local prof
	prof=$(profile_flag "$t" "$row" "$round")
	port=$((port + 1))
	echo "round $round: $row $t" >&2
	if { [ "$t" = pmcpredis ] || [ "$t" = pmcpsticky ]; } && [ "$row" = stdio ]; then
		return # Redis plays no part over stdio
	fi
	case $row in
	stdio)
		# shellcheck disable=SC2086
		taskset -c "$LOAD_CPU" "$OUT/bin/load" stdio -target "$t" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
			-- taskset -c "$SERVER_CPU" "$bin" -stdio $prof >>"$results"
		;;
	legacy | modern | sessions)
		# shellcheck disable=SC2086
		taskset -c "$SERVER_CPU" "$bin" -addr "127.0.0.1:$port" $prof &
		server_pid=$!
		if [ "$row" = sessions ]; then
			taskset -c "$LOAD_CPU" "$OUT/bin/load" sessions -target "$t" -round "$round" -c "$CONC" -n "$SESSIONS" \
				-url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results"
		else
			taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$t" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
				-mode "$row" -url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results"
		fi
		stop_server
		;;
	*)
		echo "unknown row $row" >&2
		exit 2
		;;
	esac
}

read -r -a targets <<<"$TARGETS"
n=${#targets[@]}
start=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
	for row in $ROWS; do
		# Interleave: every target once per row and round, starting from
		# a different one each round.
		for i in $(seq 0 $((n - 1))); do
			run_one "$round" "$row" "${targets[$(((i + round - 1) % n))]}"
		done
	done
done

echo
echo "bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)"
echo "server on core $SERVER_CPU, load generator on core $LOAD_CPU; $ROUNDS rounds, $DURATION after $WARMUP warm-up, $CONC concurrent clients, $SESSIONS idle sessions; $(($(date +%s) - start)) s"
echo "results: $results"
"$OUT/bin/report" "$results"
