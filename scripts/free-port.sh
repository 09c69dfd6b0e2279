#!/usr/bin/env bash
# Prints a TCP port on 127.0.0.1 that nothing listens on, for a server the
# caller is about to start: scripts/conformance.sh (when --port is not
# given) and the redis stage of scripts/test.sh use it, so that two runs on
# one machine do not collide on fixed ports.
#
# Usage: scripts/free-port.sh [LOW HIGH]
#
# Candidates come from LOW..HIGH (default 20000..32767: below Linux's
# ephemeral range, so outgoing connections do not take them), starting at a
# random one and going up (wrapping around), at most 200 probes; a port is
# free when a connection to it is refused. Probing cannot reserve the port:
# between the probe and the bind another process may take it, so a caller
# whose server then fails to bind picks again (conformance.sh does).
# Exit status: 0 with the port on stdout; 1 when no candidate was free; 2 on
# bad arguments.
set -euo pipefail

low=${1:-20000}
high=${2:-32767}
if ! [[ $low =~ ^[0-9]+$ && $high =~ ^[0-9]+$ ]] || ((low < 1 || high > 65535 || low > high)); then
	echo "free-port.sh: want LOW HIGH with 1 <= LOW <= HIGH <= 65535" >&2
	exit 2
fi
span=$((high - low + 1))
# SRANDOM (bash >= 5.1) is 32 bits from the kernel; RANDOM, 15 bits seeded
# per process, is the fallback.
start=$(((${SRANDOM:-$RANDOM} % span)))
for ((i = 0; i < span && i < 200; i++)); do
	p=$((low + (start + i) % span))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		echo "$p"
		exit 0
	fi
done
echo "free-port.sh: no free loopback port in $low-$high" >&2
exit 1
