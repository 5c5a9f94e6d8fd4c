#!/usr/bin/env bash
# gateway.sh: llmbatch against five Go rate-limit libraries the team did not
# write, one at a time: bench/gateway (a reverse proxy, LIB its limiter) in
# front of `llmbatch mock serve` (no limits, some latency).
#
#   bench/gateway.sh                            # untold: LIB=httprate, 20 a 1-s window, N=600, -j 32
#   LIB=throttled bench/gateway.sh              # or tollbooth, ulule, go-limiter
#   LIB=all bench/gateway.sh                    # each of the five in turn
#   WINDOW=1m LIMIT=120 N=360 bench/gateway.sh  # a minute's limit (the defaults for WINDOW=1m)
#   MODE=told bench/gateway.sh                  # told the true limit: --rpm $CLIENT_RPM; MODE=both: untold, then told
#   LATENCY=3s J=64 LIB=ulule bench/gateway.sh  # answers slower than the window
#   KEEP=/tmp/gw-run bench/gateway.sh           # keep the gateway's log and the client's logs
#
# It builds llmbatch and bench/gateway (the libraries come from the module's
# go.sum: the Go module proxy or its cache), starts the mock and, for each
# run, a fresh gateway on a free loopback port, each stopped by its pid on
# exit however the script exits, and prints the wall time against the ideal
# (N less what the limiter lets through at once, over the rate) and the
# share of requests the gateway refused, counted from its own log.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
LIB=${LIB:-httprate}
WINDOW=${WINDOW:-1s}
win_s=$(seconds "$WINDOW")
LIMIT=${LIMIT:-$([[ $win_s == 1 ]] && echo 20 || echo 120)}
N=${N:-$([[ $win_s == 1 ]] && echo 600 || echo 360)}
J=${J:-32}
BURST=${BURST:-5}
LATENCY=${LATENCY:-50ms}
MODE=${MODE:-untold}
libs=$LIB
[[ $LIB == all ]] && libs="httprate throttled tollbooth ulule go-limiter"
for l in $libs; do
	case $l in httprate | throttled | tollbooth | ulule | go-limiter) ;;
	*) echo "LIB must be httprate, throttled, tollbooth, ulule, go-limiter or all" >&2 && exit 2 ;; esac
done
case $MODE in untold | told | both) ;; *) echo "MODE must be untold, told or both" >&2 && exit 2 ;; esac
RATE=$(echo "$LIMIT / $win_s" | bc)
[[ $(echo "$RATE * $win_s == $LIMIT" | bc) == 1 && $RATE -ge 1 ]] ||
	{ echo "LIMIT ($LIMIT) must be a whole number of requests a second of WINDOW ($WINDOW)" >&2 && exit 2; }
CLIENT_RPM=${CLIENT_RPM:-$((RATE * 60))}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-gateway.XXXXXX")
gw=$work/gateway.d
mockpid='' gwpid='' clientpid='' worst=0

# stop_gateway stops the gateway.
stop_gateway() {
	[[ -n $gwpid ]] || return 0
	stop "$gwpid" TERM
	gwpid=
}

limited_traps

# start_gateway starts a fresh gateway for $lib (a fresh limiter and log)
# on a port of its choosing, and sets gwpid and port once it answers.
start_gateway() {
	rm -f "$gw/access.log" "$gw/stderr.log"
	"$work/gateway" --lib "$lib" --upstream "$mockaddr" --limit "$LIMIT" --window "$WINDOW" --burst "$BURST" \
		>"$gw/access.log" 2>"$gw/stderr.log" &
	gwpid=$!
	port=
	for _ in $(seq 200); do
		port=$(grep -o 'http://127.0.0.1:[0-9]*' "$gw/stderr.log" 2>/dev/null | grep -o '[0-9]*$' || true)
		[[ -n $port ]] && healthz "$port" && return 0
		alive "$gwpid" || break
		sleep 0.05
	done
	echo "the gateway did not start or did not answer:" >&2
	cat "$gw/stderr.log" >&2 2>/dev/null || true
	exit 1
}

# The limiter's hooks for limited_run (lib.sh): the gateway logs only /v1/.
# What each lets through at once the ideal leaves out: tollbooth's bucket
# starts full (a second's worth), throttled's GCRA admits MaxBurst+1; the
# fixed windows and httprate's counter are held to N/RATE, as node.sh's are.
# shellcheck disable=SC2016 # an awk condition, for awk to read
served='$4 ~ /^\/v1\//'
start_limiter() { start_gateway; }
stop_limiter() { stop_gateway; }
limiter_log() { echo "$gw/access.log"; }

mkdir -p "$gw"
limited_setup
(cd "$root" && go build -o "$work/gateway" ./bench/gateway)
version() { (cd "$root" && go list -m -f '{{.Version}}' "$1"); }
for lib in $libs; do
	case $lib in
	httprate) mod=github.com/go-chi/httprate limiter_burst=0 ;;
	throttled) mod=github.com/throttled/throttled/v2 limiter_burst=$((BURST + 1)) ;;
	tollbooth) mod=github.com/didip/tollbooth/v7 limiter_burst=$RATE ;;
	ulule) mod=github.com/ulule/limiter/v3 limiter_burst=0 ;;
	go-limiter) mod=github.com/sethvargo/go-limiter limiter_burst=0 ;;
	esac
	limiter=$lib
	printf '%s %s: %d a %s window; mock latency %s; N=%d, -j %d\n' \
		"$mod" "$(version "$mod")" "$LIMIT" "$WINDOW" "$LATENCY" "$N" "$J"
	# Each run in a fresh directory (llmbatch would resume from an output
	# it finds), kept under the library's name.
	if [[ $MODE != told ]]; then limited_run untold && mv "$work/untold" "$work/$lib-untold"; fi
	if [[ $MODE != untold ]]; then limited_run told --rpm "$CLIENT_RPM" && mv "$work/told" "$work/$lib-told"; fi
done
exit "$worst"
