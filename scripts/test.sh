#!/usr/bin/env bash
# Runs every check of the project: formatting, vet, the race-enabled test
# suite (goleak in every package, fuzz seeds replayed as unit tests, the
# scripted stdio sessions against `pmcp serve --stdio`, and examples/: every
# README program built with go build, run and checked against the README).
#
# The official conformance suite needs Node >= 22; scripts/conformance.sh
# installs it (and the pinned suite versions) from npm on first use.
# Set PMCP_SKIP_CONFORMANCE=1 to skip that stage locally (it also skips the
# npm installs of @modelcontextprotocol/server-everything, which proxy's
# TestServerEverything then skips, and of the third-party clients and
# server-filesystem, which interop's TestThirdPartyMatrix then leaves out,
# and of the ext-apps example servers, which cmd/pmcp's
# TestBridgeAppsExamples then skips, and the browser stage: under CI=true
# those tests fail instead). The browser stage installs Debian's chromium
# with apt-get when it is missing, as the redis stage does redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
# Check every module as it is published, against its own go.mod: the root
# go.work (a convenience for `go run ./cmd/pmcp` from the root) would
# merge the modules' dependency versions.
export GOWORK=off

# Temporary files go away however the script ends (success, a failed stage,
# Ctrl-C, SIGTERM); scripts/conformance.sh cleans up its own the same way.
bin_dir=""
redis_pid=""
# shellcheck disable=SC2317 # only ever called from the trap
cleanup() {
	if [[ -n $bin_dir ]]; then
		rm -rf "$bin_dir"
	fi
	if [[ -n $redis_pid ]]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stages=0
step() {
	stages=$((stages + 1))
	printf '\n== %s\n' "$*"
}

step "toolchain"
go version

step "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting:"
	echo "$unformatted"
	exit 1
fi

step "go vet"
go vet ./...

if [ "${PMCP_SKIP_CONFORMANCE:-0}" != "1" ]; then
	step "bridge: install @modelcontextprotocol/server-everything@2026.8.31 (proxy's TestServerEverything, in the next stage, bridges it from stdio to HTTP for our client in both eras)"
	everything=$(scripts/conformance.sh npm server-everything-2026.8.31 @modelcontextprotocol/server-everything@2026.8.31)
	eval "$everything"
	export PMCP_SERVER_EVERYTHING="$DIR" PMCP_NODE="$NODE"
	echo "server-everything in $PMCP_SERVER_EVERYTHING, node $PMCP_NODE"

	step "interop: install the third-party clients (@modelcontextprotocol/sdk@1.32.2, @modelcontextprotocol/inspector@2.12.0) and @modelcontextprotocol/server-filesystem@2026.8.31 (interop's TestThirdPartyMatrix, in the interop stage, runs them against pmcp serve and pmcp bridge)"
	clients=$(scripts/conformance.sh npm thirdparty-clients-1.32.2-2.12.0 @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@2.12.0)
	eval "$clients"
	export PMCP_THIRDPARTY_CLIENTS="$DIR"
	filesystem=$(scripts/conformance.sh npm server-filesystem-2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31)
	eval "$filesystem"
	export PMCP_SERVER_FILESYSTEM="$DIR"
	echo "clients in $PMCP_THIRDPARTY_CLIENTS, server-filesystem in $PMCP_SERVER_FILESYSTEM"

	step "MCP Apps: install the ext-apps example servers (@modelcontextprotocol/server-basic-vanillajs@2.0.3, @modelcontextprotocol/server-basic-preact@2.0.3; cmd/pmcp's TestBridgeAppsExamples aggregates two of them through pmcp bridge, the browser stage renders them in the Inspector)"
	apps=$(scripts/conformance.sh npm ext-apps-examples-2.0.3 @modelcontextprotocol/server-basic-vanillajs@2.0.3 @modelcontextprotocol/server-basic-preact@2.0.3)
	eval "$apps"
	export PMCP_APPS_EXAMPLES="$DIR"
	echo "ext-apps examples in $PMCP_APPS_EXAMPLES"
fi

step "redis-server (the redis module's stage and cmd/pmcp's TestGatewayRedisBuckets, two gateways sharing rate limits, run real ones)"
if ! command -v redis-server >/dev/null 2>&1; then
	echo "redis-server missing: installing the Debian package redis-server"
	as_root=()
	if [ "$(id -u)" != 0 ]; then
		as_root=(sudo)
	fi
	"${as_root[@]}" apt-get update
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server
fi
redis-server --version

step "go test -race (examples/ builds and runs every README program)"
go test -race -count=1 ./...

step "allocation budgets (exact, without -race)"
go test -count=1 -run AllocBudget ./...

step "bench module builds and vets (run bench/run.sh for the numbers)"
(cd bench && go vet ./... && go build ./...)

step "interop: pmcp client vs go-sdk v1.8.0 and mcp-go v1.2.1; the third-party matrix (TypeScript SDK, Inspector CLI, go-sdk and mcp-go clients against pmcp serve and pmcp bridge); OAuth client and resource server vs zitadel/oidc (separate module)"
# The browser tests run in their own stage below, with CI=true.
(cd interop && go vet ./... && go test -race -count=1 -skip '^TestBrowser' ./...)

if [ "${PMCP_SKIP_CONFORMANCE:-0}" != "1" ]; then
	step "browser: the MCP Inspector web UI in headless Chromium renders MCP Apps views of pmcp serve (both eras) and of an ext-apps example server through pmcp bridge (interop's TestBrowser*, CI=true: they fail, never skip, when Chromium or an npm program is missing)"
	if ! command -v chromium >/dev/null 2>&1; then
		echo "chromium missing: installing the Debian package chromium"
		as_root=()
		if [ "$(id -u)" != 0 ]; then
			as_root=(sudo)
		fi
		"${as_root[@]}" apt-get update
		"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
	fi
	(cd interop && CI=true go test -race -count=1 -run '^TestBrowser' ./...)
fi

step "otel module: OpenTelemetry middleware and exporters (separate module: the core never needs the OTel SDK); the OTLP/gRPC exporters of -tags pmcp_otlpgrpc"
(cd otel && go vet ./... && go test -race -count=1 ./... &&
	go vet -tags pmcp_otlpgrpc ./otelenv && go test -count=1 -tags pmcp_otlpgrpc ./otelenv)

step "cmd/pmcp module: the CLI (separate module: it links the OTel exporters)"
(cd cmd/pmcp && go vet ./... && go test -race -count=1 ./...)

step "redis module: TaskStore, EventStore and Bus against a real redis-server (separate module)"
# The Redis tests never skip here: redis-server (installed from the Debian
# package by the redis-server stage above when missing) runs on a free loopback port (scripts/free-port.sh;
# picked again if another process takes it before redis-server binds)
# without persistence for this stage only, and is stopped by the EXIT trap.
redis_port=""
for attempt in 1 2 3 4 5; do
	redis_port=$(scripts/free-port.sh)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null &
	redis_pid=$!
	for _ in $(seq 1 100); do
		if [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null)" = PONG ] || ! kill -0 "$redis_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if kill -0 "$redis_pid" 2>/dev/null; then
		break
	fi
	# It exited on start: the port was taken meanwhile; pick another.
	wait "$redis_pid" 2>/dev/null || true
	redis_pid=""
	echo "redis-server exited on start on port $redis_port (attempt $attempt)"
done
if [ -z "$redis_pid" ] || [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null)" != PONG ]; then
	echo "redis-server did not answer PING on 127.0.0.1:$redis_port"
	exit 1
fi
(cd redis && go vet ./... && PMCP_REDIS_ADDR="127.0.0.1:$redis_port" CI=true go test -race -count=1 ./...)
kill "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
redis_pid=""

if [ "${PMCP_SKIP_CONFORMANCE:-0}" != "1" ]; then
	step "conformance: build the everything server"
	bin_dir=$(mktemp -d "${TMPDIR:-/tmp}/pmcp-test.XXXXXX")
	(cd cmd/pmcp && go build -o "$bin_dir/pmcp" .)
	serve=("$bin_dir/pmcp" serve --http '127.0.0.1:{port}')
	baseline=conformance/baseline-server.yml
	# No --port: each run gets a free loopback port (scripts/free-port.sh),
	# so two runs of this script on one machine do not collide.

	step "conformance: suite 0.1.16, --suite all (legacy era)"
	scripts/conformance.sh server --suite-version 0.1.16 --suite all \
		--expected-failures "$baseline" -- "${serve[@]}"

	step "conformance: suite 0.2.0-alpha.12, --requirements 2025-11-25,2026-07-28 (both eras, one server)"
	scripts/conformance.sh server --suite-version 0.2.0-alpha.12 --requirements 2025-11-25,2026-07-28 \
		--expected-failures "$baseline" -- "${serve[@]}"

	step "conformance: suite 0.2.0-alpha.12, --spec-version 2026-07-28 (modern era, every scenario)"
	scripts/conformance.sh server --suite-version 0.2.0-alpha.12 --spec-version 2026-07-28 \
		--expected-failures "$baseline" -- "${serve[@]}"

	step "conformance: suite 0.2.0-alpha.12, --suite all (both eras and the tasks and skills extensions, one server)"
	scripts/conformance.sh server --suite-version 0.2.0-alpha.12 --suite all \
		--expected-failures "$baseline" -- "${serve[@]}"

	go build -o "$bin_dir/pmcp-conformance-client" ./cmd/pmcp-conformance-client
	client_baseline=conformance/baseline-client.yml

	step "conformance: client, suite 0.1.16, --suite all"
	scripts/conformance.sh client --suite-version 0.1.16 \
		--expected-failures "$client_baseline" -- "$bin_dir/pmcp-conformance-client"

	step "conformance: client, suite 0.2.0-alpha.12, --requirements 2025-11-25,2026-07-28"
	scripts/conformance.sh client --suite-version 0.2.0-alpha.12 --requirements 2025-11-25,2026-07-28 \
		--expected-failures "$client_baseline" -- "$bin_dir/pmcp-conformance-client"

	step "conformance: client, suite 0.2.0-alpha.12, --suite all (adds the auth extensions and back-compat)"
	scripts/conformance.sh client --suite-version 0.2.0-alpha.12 --suite all \
		--expected-failures "$client_baseline" -- "$bin_dir/pmcp-conformance-client"
fi

echo
echo "all checks passed"
# One plain closing line: every stage above exits non-zero on failure
# (set -e), so reaching here means all of them passed. Expected failures
# listed in a conformance baseline are not failures; scripts/conformance.sh
# sums them up in one "expected failures" line.
echo "test.sh: ${stages} passed, 0 failed"
