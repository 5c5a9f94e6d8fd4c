#!/usr/bin/env bash
# node.sh: llmbatch against a third real limiter the team did not write, from
# npm: a small Express reverse proxy (bench/node-proxy.js) in front of
# `llmbatch mock serve` (no limits, some latency), limiting with
# express-rate-limit (IETF draft headers) or rate-limiter-flexible (none, or
# Retry-After only).
#
#   bench/node.sh                           # untold: express-rate-limit, 20 a 1-s window, draft-8 headers
#   HEADERS=draft-7 bench/node.sh           # or draft-6, legacy (X-RateLimit-*), draft-7+legacy, none
#   ALG=rlf-fixed bench/node.sh             # rate-limiter-flexible's RateLimiterMemory, no headers
#   ALG=rlf-fixed HEADERS=retry-after bench/node.sh
#   ALG=rlf-bursty bench/node.sh            # BurstyRateLimiter: 20/s and BURST=10 more each 10 s
#   ALG=rlf-even bench/node.sh              # execEvenly; ALG=rlf-block (blockDuration BLOCK_S=2)
#   WINDOW=1m LIMIT=120 N=180 bench/node.sh # a minute's window (ideal 90 s)
#   MODE=told bench/node.sh                 # told the true limit: --rpm $CLIENT_RPM (LIMIT a window)
#   MODE=both bench/node.sh                 # untold, then told
#   KEEP=/tmp/node-run bench/node.sh        # keep the proxy's log and the client's logs
#
# It installs express, express-rate-limit and rate-limiter-flexible (pinned)
# with npm into a temporary directory, starts the proxy with node and the
# mock on free loopback ports, and for each run prints the wall time against
# the ideal N/RATE and the share of requests the proxy refused, counted from
# its own log. Everything it starts is stopped by its pid on exit, however it
# exits. It needs node (>= 18) and npm, and reaches the npm registry unless
# npm's cache has the packages.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
ALG=${ALG:-erl}
WINDOW=${WINDOW:-1s}
win_s=$(seconds "$WINDOW")
LIMIT=${LIMIT:-$([[ $win_s == 1 ]] && echo 20 || echo 120)}
N=${N:-$([[ $win_s == 1 ]] && echo 600 || echo 180)}
J=${J:-32}
BURST=${BURST:-$((LIMIT / 2))}
LATENCY=${LATENCY:-50ms}
MODE=${MODE:-untold}
case $ALG in erl) HEADERS=${HEADERS:-draft-8} ;; rlf-fixed | rlf-bursty | rlf-even | rlf-block) HEADERS=${HEADERS:-none} ;;
*) echo "ALG must be erl, rlf-fixed, rlf-bursty, rlf-even or rlf-block" >&2 && exit 2 ;; esac
case $MODE in untold | told | both) ;; *) echo "MODE must be untold, told or both" >&2 && exit 2 ;; esac
RATE=$(echo "$LIMIT / $win_s" | bc)
[[ $(echo "$RATE * $win_s == $LIMIT" | bc) == 1 && $RATE -ge 1 ]] ||
	{ echo "LIMIT ($LIMIT) must be a whole number of requests a second of WINDOW ($WINDOW)" >&2 && exit 2; }
CLIENT_RPM=${CLIENT_RPM:-$((RATE * 60))}
for tool in node npm; do command -v "$tool" >/dev/null || { echo "node.sh needs node and npm" >&2 && exit 1; }; done
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-node.XXXXXX")
nd=$work/node
mockpid='' nodepid='' clientpid='' worst=0

# stop_node stops the proxy (one node process).
stop_node() {
	[[ -n $nodepid ]] || return 0
	stop "$nodepid" TERM
	nodepid=
}

limited_traps

# start_node starts the proxy on a free port (a fresh limiter and log) and
# sets nodepid and port once it answers.
start_node() {
	local lib=erl alg=fixed
	[[ $ALG == rlf-* ]] && lib=rlf alg=${ALG#rlf-}
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		rm -f "$nd/access.log" "$nd/stderr.log"
		PORT=$port UPSTREAM=$mockaddr LIB=$lib ALG=$alg LIMIT=$LIMIT HEADERS=$HEADERS BURST=$BURST \
			WINDOW_MS=$(echo "$win_s * 1000 / 1" | bc) node "$nd/proxy.js" >"$nd/access.log" 2>"$nd/stderr.log" &
		nodepid=$!
		for _ in $(seq 200); do
			healthz "$port" && return 0
			alive "$nodepid" || break
			sleep 0.05
		done
		grep -q 'EADDRINUSE' "$nd/stderr.log" 2>/dev/null || break
		stop_node
	done
	echo "the node proxy did not start or did not answer:" >&2
	cat "$nd/stderr.log" >&2 2>/dev/null || true
	exit 1
}

# The limiter's hooks for limited_run (lib.sh): the proxy logs only /v1/.
# rlf-bursty lets BURST more through each 10 windows, a share of the run's
# requests that the ideal leaves out as a burst allowance.
burst=0
[[ $ALG == rlf-bursty ]] && burst=$(echo "$N * $BURST / (10 * $LIMIT + $BURST)" | bc -l)
# shellcheck disable=SC2016 # an awk condition, for awk to read
limiter=$ALG limiter_burst=$burst served='$4 ~ /^\/v1\//'
start_limiter() { start_node; }
stop_limiter() { stop_node; }
limiter_log() { echo "$nd/access.log"; }

mkdir -p "$nd"
cp "$root/bench/node-proxy.js" "$nd/proxy.js"
echo '{"private": true}' >"$nd/package.json"
(cd "$nd" && npm install --no-audit --no-fund --no-save --loglevel=error \
	express@5.3.0 express-rate-limit@8.7.5 rate-limiter-flexible@11.4.0 >"$nd/npm.log" 2>&1) ||
	{ echo "npm install failed:" >&2 && cat "$nd/npm.log" >&2 && exit 1; }
limited_setup

version() { node -p "require('$nd/node_modules/$1/package.json').version"; }
lib="express-rate-limit $(version express-rate-limit), HEADERS=$HEADERS"
[[ $ALG == rlf-* ]] && lib="rate-limiter-flexible $(version rate-limiter-flexible) ${ALG#rlf-}, HEADERS=$HEADERS"
printf '%s on express %s, node %s: %d a %s window; mock latency %s; N=%d, -j %d\n' \
	"$lib" "$(version express)" "$(node --version)" "$LIMIT" "$WINDOW" "$LATENCY" "$N" "$J"
[[ $MODE != told ]] && limited_run untold
[[ $MODE != untold ]] && limited_run told --rpm "$CLIENT_RPM"
exit "$worst"
