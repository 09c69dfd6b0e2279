#!/usr/bin/env bash
# Runs every check of the project: formatting, vet, the race-enabled test
# suite (goleak in every package, fuzz seeds replayed as unit tests) and the
# scripted stdio sessions against `pmcp serve --stdio`.
#
# Later stages (official conformance suite over HTTP, Redis-backed tests)
# plug in here as they land; this script installs what they need itself.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

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

step "go test -race"
go test -race -count=1 ./...

echo
echo "all checks passed"
