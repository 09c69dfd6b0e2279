#!/usr/bin/env bash
# Runs the whole bench in one go, interleaved, ROUNDS rounds, and prints the
# table of medians. Legs (LEGS=, all by default):
#   server   every server (bare net/http baseline, pmcp, go-sdk, mcp-go) on
#            every row (HTTP legacy, HTTP modern, stdio, idle sessions), at
#            every concurrency of CONCS (the concurrency sweep)
#   client   every client (bare net/http+encoding/json, pmcp, go-sdk,
#            mcp-go) calling echo on the bare server over HTTP legacy, HTTP
#            modern and stdio; the client process's CPU per call
#   stream   the stream tool (16 progress notifications, then the result)
#            on every server over HTTP legacy SSE, HTTP modern SSE and
#            stdio (servers run with -sse); notifications/s, CPU per one
#   fanout   FANOUT (10,000) modern subscriptions/listen streams, then as
#            many legacy GET streams, on the pmcp server (-sse); one tools
#            list_changed: time until every stream has it, memory per stream
#   features the pmcp server's tools/call (HTTP legacy and modern) with one
#            feature on: plain, accesslog, otel (always sample, no-op
#            exporter), jwt (bearer JWT, ES256, cached key set); ratios to
#            plain
#
# The server is pinned to one core and the load generator to the other
# (taskset). Loopback only; every run is bounded (WARMUP + DURATION), and
# the whole script takes about 4 minutes with the defaults.
#
# Environment:
#   LEGS="server client stream fanout features"   FANOUT=10000    FEATURES="plain accesslog otel jwt"
#   ROUNDS=3 DURATION=5s WARMUP=1s CONCS="1 16 256" SESSIONS=10000
#   CONC=16                           concurrency of the client leg and of sessions
#   TARGETS="bare pmcp gosdk mcpgo"   ROWS="legacy modern stdio sessions"
#   CLIENTS="bare pmcp gosdk mcpgo"   CLIENT_ROWS="legacy modern stdio"
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
CONCS=${CONCS:-"1 16 256"}
LEGS=${LEGS:-"server client stream fanout features"}
FANOUT=${FANOUT:-10000}
FEATURES=${FEATURES:-"plain accesslog otel jwt"}
CLIENTS=${CLIENTS:-"bare pmcp gosdk mcpgo"}
CLIENT_ROWS=${CLIENT_ROWS:-"legacy modern stdio"}
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

# The fan-out leg holds FANOUT connections open in the server and in the
# generator.
ulimit -n "$(( FANOUT * 2 + 1024 ))" 2>/dev/null || echo "warning: cannot raise the open-file limit (ulimit -n $(ulimit -n))" >&2

mkdir -p "$OUT/bin" "$OUT/prof"
echo "building into $OUT/bin" >&2
for t in $TARGETS bare pmcp; do
	go build -o "$OUT/bin/$t" "./servers/$t"
done
go build -o "$OUT/bin/load" ./cmd/load
go build -o "$OUT/bin/clients" ./cmd/clients
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

# next_port moves port to the next one nothing listens on (other people's
# benches may share the machine and the default PORT_BASE).
next_port() {
	port=$((port + 1))
	while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		port=$((port + 1))
	done
}

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

run_one() { # round row target conc
	local round=$1 row=$2 t=$3 conc=$4
	local bin=$OUT/bin/$t
	local prof
	prof=$(profile_flag "$t" "$row" "$round")
	next_port
	echo "round $round: $row $t c=$conc" >&2
	if { [ "$t" = pmcpredis ] || [ "$t" = pmcpsticky ]; } && [ "$row" = stdio ]; then
		return # Redis plays no part over stdio
	fi
	case $row in
	stdio)
		# shellcheck disable=SC2086
		taskset -c "$LOAD_CPU" "$OUT/bin/load" stdio -target "$t" -round "$round" -c "$conc" -d "$DURATION" -warmup "$WARMUP" \
			-- taskset -c "$SERVER_CPU" "$bin" -stdio $prof >>"$results" || echo "  failed (no result line)" >&2
		;;
	legacy | modern | sessions)
		# shellcheck disable=SC2086
		taskset -c "$SERVER_CPU" "$bin" -addr "127.0.0.1:$port" $prof &
		server_pid=$!
		if [ "$row" = sessions ]; then
			taskset -c "$LOAD_CPU" "$OUT/bin/load" sessions -target "$t" -round "$round" -c "$CONC" -n "$SESSIONS" \
				-url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results" || echo "  failed (no result line)" >&2
		else
			taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$t" -round "$round" -c "$conc" -d "$DURATION" -warmup "$WARMUP" \
				-mode "$row" -url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results" || echo "  failed (no result line)" >&2
		fi
		stop_server
		;;
	*)
		echo "unknown row $row" >&2
		exit 2
		;;
	esac
}

run_client() { # round row client
	local round=$1 row=$2 impl=$3
	next_port
	echo "round $round: client-$row $impl" >&2
	if [ "$row" = stdio ]; then
		taskset -c "$LOAD_CPU" "$OUT/bin/clients" -impl "$impl" -mode stdio -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
			-- taskset -c "$SERVER_CPU" "$OUT/bin/bare" -stdio >>"$results" || echo "  failed (no result line)" >&2
		return
	fi
	taskset -c "$SERVER_CPU" "$OUT/bin/bare" -addr "127.0.0.1:$port" &
	server_pid=$!
	taskset -c "$LOAD_CPU" "$OUT/bin/clients" -impl "$impl" -mode "$row" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
		-url "http://127.0.0.1:$port/mcp" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

run_feature() { # round row feature
	local round=$1 row=$2 f=$3 bearer=()
	next_port
	echo "round $round: features-$row $f" >&2
	rm -f "$OUT/token"
	local prof
	prof=$(profile_flag "$f" "features-$row" "$round")
	# shellcheck disable=SC2086
	taskset -c "$SERVER_CPU" "$OUT/bin/pmcp" -addr "127.0.0.1:$port" -feature "$f" -token-out "$OUT/token" $prof &
	server_pid=$!
	if [ "$f" = jwt ]; then
		bearer=(-bearer-file "$OUT/token")
	fi
	taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$f" -row "features-$row" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
		-mode "$row" -url "http://127.0.0.1:$port/mcp" -pid "$server_pid" "${bearer[@]}" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

run_stream() { # round row target
	local round=$1 row=$2 t=$3
	next_port
	echo "round $round: stream-$row $t" >&2
	if [ "$row" = stdio ]; then
		taskset -c "$LOAD_CPU" "$OUT/bin/load" stdio -target "$t" -tool stream -row stream-stdio -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
			-- taskset -c "$SERVER_CPU" "$OUT/bin/$t" -stdio >>"$results" || echo "  failed (no result line)" >&2
		return
	fi
	taskset -c "$SERVER_CPU" "$OUT/bin/$t" -addr "127.0.0.1:$port" -sse &
	server_pid=$!
	taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$t" -tool stream -row "stream-$row" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
		-mode "$row" -url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

run_fanout() { # round mode
	local round=$1 mode=$2
	next_port
	echo "round $round: fanout-$mode pmcp ($FANOUT streams)" >&2
	taskset -c "$SERVER_CPU" "$OUT/bin/pmcp" -addr "127.0.0.1:$port" -sse &
	server_pid=$!
	taskset -c "$LOAD_CPU" "$OUT/bin/load" fanout -target pmcp -round "$round" -mode "$mode" -n "$FANOUT" \
		-url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

# interleave ROUND FUNC ROW NAMES...: every name once, starting from a
# different one each round.
interleave() {
	local round=$1 fn=$2 row=$3
	shift 3
	local names=("$@") n=$#
	for i in $(seq 0 $((n - 1))); do
		"$fn" "$round" "$row" "${names[$(((i + round - 1) % n))]}"
	done
}

server_row() { # round row target: the row at every concurrency of CONCS
	local c
	if [ "$2" = sessions ]; then
		run_one "$1" "$2" "$3" "$CONC"
		return
	fi
	for c in $CONCS; do
		run_one "$1" "$2" "$3" "$c"
	done
}

read -r -a targets <<<"$TARGETS"
read -r -a clients <<<"$CLIENTS"
read -r -a features <<<"$FEATURES"
start=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
	for leg in $LEGS; do
		case $leg in
		server)
			for row in $ROWS; do interleave "$round" server_row "$row" "${targets[@]}"; done
			;;
		client)
			for row in $CLIENT_ROWS; do interleave "$round" run_client "$row" "${clients[@]}"; done
			;;
		stream)
			for row in legacy modern stdio; do interleave "$round" run_stream "$row" "${targets[@]}"; done
			;;
		fanout)
			run_fanout "$round" modern
			run_fanout "$round" legacy
			;;
		features)
			for row in legacy modern; do interleave "$round" run_feature "$row" "${features[@]}"; done
			;;
		*)
			echo "unknown leg $leg" >&2
			exit 2
			;;
		esac
	done
done

echo
echo "bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)"
echo "server on core $SERVER_CPU, load generator on core $LOAD_CPU; legs: $LEGS; $ROUNDS rounds, $DURATION after $WARMUP warm-up, server concurrencies $CONCS, $CONC calls in flight per client, $SESSIONS idle sessions; $(($(date +%s) - start)) s"
echo "results: $results"
"$OUT/bin/report" "$results"
