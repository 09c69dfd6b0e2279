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
#   fanout   FANOUT (10,000) modern subscriptions/listen streams (served
#            as usual, then with DetachListenStreams: -detach), then as
#            many legacy GET streams, on the pmcp server (-sse); one tools
#            list_changed: time until every stream has it, server CPU and
#            memory per stream
#   features the pmcp server's tools/call (HTTP legacy and modern) with one
#            feature on: plain, accesslog, otel (always sample, no-op
#            exporter, simple span processor), jwt (bearer JWT, ES256,
#            cached key set), task (a task round on a task-capable echo:
#            tools/call as a task -> tasks/get until completed [->
#            tasks/result in the legacy era], counted as one operation);
#            ratios to plain. otelbatch (the batch span processor) is there
#            too, not in the default FEATURES
##   gateway  (not in the default LEGS) the cost of a gateway, HTTP -> HTTP:
#            tools/call echo on the bare server called directly (direct),
#            through net/http/httputil.ReverseProxy (revproxy, the
#            yardstick of one HTTP hop) and through GATEWAY_CMD (gateway),
#            at every concurrency of CONCS, in the eras of GATEWAY_ROWS;
#            the report prints the latency and CPU (proxy process plus any
#            change in the server's) each adds per call, and the ratio of
#            the gateway's added CPU to the reverse proxy's
#
# The server is pinned to one core and the load generator to the other
# (taskset). Loopback only; every run is bounded (WARMUP + DURATION), and
# the whole script takes about 4 minutes with the defaults.
#
# Environment:
#   LEGS="server client stream fanout features"   FANOUT=10000    FEATURES="plain accesslog otel jwt task"
#   ROUNDS=3 DURATION=5s WARMUP=1s CONCS="1 16 256" SESSIONS=10000
#   CONC=16                           concurrency of the client leg and of sessions
#   TARGETS="bare pmcp gosdk mcpgo"   ROWS="legacy modern stdio sessions"
#   CLIENTS="bare pmcp gosdk mcpgo"   CLIENT_ROWS="legacy modern stdio"
#                                     TARGETS may add pmcpredis (pmcpsticky): pmcp as two
#                                     replicas sharing Redis behind a round robin (prefix routing); no stdio row
#                                     TARGETS may add pmcpsse (the pmcp server answering with SSE
#                                     streams, -sse) and pmcpserve (the CLI's `pmcp serve
#                                     --log-level off`, the everything server, which answers with SSE
#                                     streams): rows legacy, modern and stdio of the server leg only
#   BASELINE=bare                     the target the report's ratios are relative to
#   PMCP_BENCH_REDIS=host:port        Redis for pmcpredis; unset: a
#                                     redis-server is started on LOAD_CPU
#   PMCP_BENCH_REPLICAS=2             replicas in the pmcpredis process
#   SERVER_CPU=0 LOAD_CPU=1           cores for the server and the generator
#   PROXY_CPU=$SERVER_CPU             core of the proxy of the gateway leg
#   GATEWAY_ROWS="legacy modern"      the gateway leg's eras
#   GATEWAY_CMD='...'                 the gateway under test, one command line
#                                     run by sh; UPSTREAM is replaced by the bare
#                                     server's URL, LISTEN by host:port, CONFIG by
#                                     the path of $OUT/gateway.json (one upstream
#                                     "bare" at UPSTREAM, a policy allowing every
#                                     tool), BIN by $OUT/bin. Default: `pmcp bridge`
#                                     (the gateway's stand-in until `pmcp gateway`
#                                     exists); for the gateway:
#                                     GATEWAY_CMD='BIN/pmcp-cli gateway --listen LISTEN --config CONFIG --log-level off'
#                                     GATEWAY_TOOL=bare_echo
#   GATEWAY_TOOL=echo                 the echo tool's name through the gateway
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
FEATURES=${FEATURES:-"plain accesslog otel jwt task"}
CLIENTS=${CLIENTS:-"bare pmcp gosdk mcpgo"}
CLIENT_ROWS=${CLIENT_ROWS:-"legacy modern stdio"}
SESSIONS=${SESSIONS:-10000}
TARGETS=${TARGETS:-"bare pmcp gosdk mcpgo"}
ROWS=${ROWS:-"legacy modern stdio sessions"}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-$(mktemp -d /tmp/pmcp-bench.XXXXXX)}
PORT_BASE=${PORT_BASE:-18700}
PROXY_CPU=${PROXY_CPU:-$SERVER_CPU}
GATEWAY_ROWS=${GATEWAY_ROWS:-"legacy modern"}
GATEWAY_CMD=${GATEWAY_CMD:-'BIN/pmcp-cli bridge --url UPSTREAM --listen LISTEN --log-level off'}
GATEWAY_TOOL=${GATEWAY_TOOL:-echo}

if ! command -v taskset >/dev/null; then
	echo "taskset not found: installing util-linux" >&2
	apt-get update >/dev/null && apt-get install -y util-linux >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
	echo "warning: fewer than 2 cores; the server and the generator share one" >&2
	LOAD_CPU=$SERVER_CPU
fi

# The fan-out leg holds FANOUT connections open in the server and as many
# in the generator (each process needs FANOUT plus some); raise the soft
# limit toward twice that, as far as the hard limit allows, and warn only
# when one process could not hold its share.
nofile_want=$((FANOUT + 1024))
nofile=$((FANOUT * 2 + 1024))
nofile_hard=$(ulimit -Hn)
if [ "$nofile_hard" != unlimited ] && [ "$nofile_hard" -lt "$nofile" ]; then
	nofile=$nofile_hard
fi
ulimit -n "$nofile" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$nofile_want" ]; then
	echo "warning: open-file limit $(ulimit -n) is below $nofile_want: the fan-out leg will fail (lower FANOUT)" >&2
fi

mkdir -p "$OUT/bin" "$OUT/prof"
echo "building into $OUT/bin" >&2
for t in $TARGETS bare pmcp; do
	case $t in
	pmcpsse | pmcpserve) ;; # wrappers, written below
	*) go build -o "$OUT/bin/$t" "./servers/$t" ;;
	esac
done
# pmcpsse is the pmcp bench server answering with SSE streams, as pmcp
# serve does; pmcpserve is `pmcp serve` (cmd/pmcp) under the bench servers'
# flags. Both exec, so the pid run.sh measures is the server's.
case " $TARGETS " in
*" pmcpsse "*)
	printf '#!/bin/sh\nexec "$(dirname "$0")/pmcp" -sse "$@"\n' >"$OUT/bin/pmcpsse"
	chmod +x "$OUT/bin/pmcpsse"
	;;
esac
case " $TARGETS " in
*" pmcpserve "*)
	(cd ../cmd/pmcp && go build -o "$OUT/bin/pmcp-cli" .)
	cat >"$OUT/bin/pmcpserve" <<'WRAP'
#!/bin/sh
# pmcp serve under the bench server flags: -addr ADDR or -stdio. It answers
# with SSE streams (as -sse does); it has no -cpuprofile (profile it with
# perf record -p PID).
cli=$(dirname "$0")/pmcp-cli
case "$1" in
-addr) exec "$cli" serve --http "$2" --log-level off ;;
-stdio) exec "$cli" serve --stdio --log-level off ;;
esac
echo "pmcpserve: unsupported flags: $*" >&2
exit 2
WRAP
	chmod +x "$OUT/bin/pmcpserve"
	;;
esac
case " $LEGS " in
*" gateway "*)
	go build -o "$OUT/bin/revproxy" ./servers/revproxy
	[ -x "$OUT/bin/pmcp-cli" ] || (cd ../cmd/pmcp && go build -o "$OUT/bin/pmcp-cli" .)
	;;
esac
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
# The first line says when, where and with which Go the run was; the
# report prints it above the tables and in the summary's title.
run_env="$(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //; s/["\\]//g'), $(nproc) cores, $(go version | cut -d' ' -f3)"
printf '{"meta":{"env":"%s"}}\n' "$run_env" >"$results"
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
proxy_pid=
stop_proxy() {
	if [ -n "$proxy_pid" ]; then
		kill -TERM "$proxy_pid" 2>/dev/null || true
		wait "$proxy_pid" 2>/dev/null || true
		proxy_pid=
	fi
}
stop_all() {
	stop_proxy
	stop_server
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
}
trap stop_all EXIT

profile_flag() { # target row round
	if [ "${CPUPROFILE:-0}" = 1 ] && [ "$1" != pmcpserve ]; then
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
	if [ "$t" = pmcpserve ] && [ "$row" = sessions ]; then
		return # pmcp serve keeps the default cap of 4,096 sessions
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
	local round=$1 row=$2 f=$3 bearer=() tool=echo
	next_port
	echo "round $round: features-$row $f" >&2
	rm -f "$OUT/token"
	taskset -c "$SERVER_CPU" "$OUT/bin/pmcp" -addr "127.0.0.1:$port" -feature "$f" -token-out "$OUT/token" $(profile_flag "$f" "features-$row" "$round") &
	server_pid=$!
	if [ "$f" = jwt ]; then
		bearer=(-bearer-file "$OUT/token")
	fi
	if [ "$f" = task ]; then
		tool=task # one operation = one task round (cmd/load/task.go)
	fi
	taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$f" -tool "$tool" -row "features-$row" -round "$round" -c "$CONC" -d "$DURATION" -warmup "$WARMUP" \
		-mode "$row" -url "http://127.0.0.1:$port/mcp" -pid "$server_pid" "${bearer[@]}" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

run_stream() { # round row target
	local round=$1 row=$2 t=$3
	if [ "$t" = pmcpserve ]; then
		return # the everything server has no stream tool
	fi
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

run_fanout() { # round mode (modern, detached: modern with DetachListenStreams, legacy)
	local round=$1 mode=$2 proto=$2 flags=""
	if [ "$mode" = detached ]; then
		proto=modern flags=-detach
	fi
	next_port
	echo "round $round: fanout-$mode pmcp ($FANOUT streams)" >&2
	# shellcheck disable=SC2046,SC2086
	taskset -c "$SERVER_CPU" "$OUT/bin/pmcp" -addr "127.0.0.1:$port" -sse $flags $(profile_flag pmcp "fanout-$mode" "$round") &
	server_pid=$!
	taskset -c "$LOAD_CPU" "$OUT/bin/load" fanout -target pmcp -round "$round" -mode "$proto" -row "fanout-$mode" -n "$FANOUT" \
		-url "http://127.0.0.1:$port/mcp" -pid "$server_pid" >>"$results" || echo "  failed (no result line)" >&2
	stop_server
}

# wait_port PORT: until something listens on it (5 s at most).
wait_port() {
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "  nothing listens on port $1" >&2
	return 1
}

# run_gateway ROUND ROW TARGET: the bare server called directly, through
# the reverse proxy, or through GATEWAY_CMD, at concurrency gw_conc.
gw_conc=1
run_gateway() {
	local round=$1 row=$2 t=$3 url tool=echo proxy_flag=() cmd
	next_port
	local up=$port
	echo "round $round: gateway-$row $t c=$gw_conc" >&2
	taskset -c "$SERVER_CPU" "$OUT/bin/bare" -addr "127.0.0.1:$up" &
	server_pid=$!
	wait_port "$up" || { stop_server; return; }
	url=http://127.0.0.1:$up/mcp
	if [ "$t" != direct ]; then
		next_port
		if [ "$t" = revproxy ]; then
			# shellcheck disable=SC2046
			taskset -c "$PROXY_CPU" "$OUT/bin/revproxy" -addr "127.0.0.1:$port" -upstream "$url" $(profile_flag revproxy "gateway-$row" "$round") &
		else
			printf '{"mcpServers":{"bare":{"url":"%s"}},"policies":[{"match":{},"allowTools":["*"]}]}\n' "$url" >"$OUT/gateway.json"
			cmd=${GATEWAY_CMD//UPSTREAM/$url}
			cmd=${cmd//LISTEN/127.0.0.1:$port}
			cmd=${cmd//CONFIG/$OUT/gateway.json}
			cmd=${cmd//BIN/$OUT/bin}
			taskset -c "$PROXY_CPU" sh -c "exec $cmd" &
			tool=$GATEWAY_TOOL
		fi
		proxy_pid=$!
		proxy_flag=(-proxy-pid "$proxy_pid")
		wait_port "$port" || { stop_proxy; stop_server; return; }
		url=http://127.0.0.1:$port/mcp
	fi
	taskset -c "$LOAD_CPU" "$OUT/bin/load" http -target "$t" -tool-name "$tool" -row "gateway-$row" -round "$round" -c "$gw_conc" -d "$DURATION" -warmup "$WARMUP" \
		-mode "$row" -url "$url" -pid "$server_pid" "${proxy_flag[@]}" >>"$results" || echo "  failed (no result line)" >&2
	stop_proxy
	stop_server
}

gateway_row() { # round row: every target at every concurrency of CONCS
	for gw_conc in $CONCS; do
		interleave "$1" run_gateway "$2" direct revproxy gateway
	done
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
			run_fanout "$round" detached
			run_fanout "$round" legacy
			;;
		features)
			for row in legacy modern; do interleave "$round" run_feature "$row" "${features[@]}"; done
			;;
		gateway)
			for row in $GATEWAY_ROWS; do gateway_row "$round" "$row"; done
			;;
		*)
			echo "unknown leg $leg" >&2
			exit 2
			;;
		esac
	done
done

echo
echo "bench: $run_env (start); finished $(date -u '+%H:%M UTC')"
echo "server on core $SERVER_CPU, load generator on core $LOAD_CPU; legs: $LEGS; $ROUNDS rounds, $DURATION after $WARMUP warm-up, server concurrencies $CONCS, $CONC calls in flight per client, $SESSIONS idle sessions; $(($(date +%s) - start)) s"
echo "results: $results"
"$OUT/bin/report" -baseline "${BASELINE:-bare}" "$results"
