#!/usr/bin/env bash
# haproxy.sh: llmbatch against a second real third-party rate limiter,
# HAProxy's stick tables (a sliding-window rate counter over one second,
# answering 429 with HAProxy's own HTML page and, unless HINT=1, no hint), in
# front of `llmbatch mock serve` (no limits, some latency).
#
#   bench/haproxy.sh                     # untold: -j 32, no --rpm, N=600, RATE=20 r/s, refused requests count
#   COUNT=admitted bench/haproxy.sh      # only admitted requests count toward the rate
#   HINT=1 bench/haproxy.sh              # the 429 carries Retry-After: 1
#   MODE=told bench/haproxy.sh           # told the true limit: --rpm $CLIENT_RPM (default 1200)
#   MODE=both bench/haproxy.sh           # untold, then told
#   N=1200 RATE=10 J=16 LATENCY=200ms bench/haproxy.sh
#
# It installs Debian's package haproxy with apt-get if there is no haproxy
# (keeping Debian's own haproxy service from starting), writes a haproxy.cfg
# into a temporary directory, starts haproxy (logging to its stdout, a file
# in there) and the mock on free loopback ports, and for each run prints the
# wall time against the ideal N/RATE and the share of requests haproxy
# refused, counted from haproxy's own log. Everything it starts is stopped by
# its pid on exit, however it exits.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
N=${N:-600}
RATE=${RATE:-20}
J=${J:-32}
LATENCY=${LATENCY:-50ms}
CLIENT_RPM=${CLIENT_RPM:-1200}
MODE=${MODE:-untold}
COUNT=${COUNT:-all}
HINT=${HINT:-}
case $MODE in untold | told | both) ;; *) echo "MODE must be untold, told or both" >&2 && exit 2 ;; esac
case $COUNT in all | admitted) ;; *) echo "COUNT must be all or admitted" >&2 && exit 2 ;; esac
case $HINT in '' | 0 | 1) ;; *) echo "HINT must be 1 or unset" >&2 && exit 2 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-haproxy.XXXXXX")
hp=$work/haproxy
mockpid='' haproxypid='' clientpid='' worst=0

# stop_haproxy stops haproxy (one process: -db, no master, no workers).
stop_haproxy() {
	[[ -n $haproxypid ]] || return 0
	stop "$haproxypid" TERM
	haproxypid=
}

limited_traps

# limit_rules prints the frontend's rules for COUNT and HINT: the source is
# tracked in the table, then a request over the rate is refused.
limit_rules() {
	local refuse='http-request deny deny_status 429'
	[[ $HINT == 1 ]] && refuse='http-request return status 429 content-type text/plain string "Too Many Requests" hdr Retry-After 1'
	echo "http-request track-sc0 src table limits if api"
	if [[ $COUNT == all ]]; then
		# Tracking counts the request, refused or not, in http_req_rate.
		echo "$refuse if api { sc_http_req_rate(0) gt $RATE }"
	else
		# gpc0 counts only the requests that got past the refusal.
		echo "$refuse if api { sc_gpc0_rate(0) ge $RATE }"
		echo "http-request sc-inc-gpc0(0) if api"
	fi
}

# write_conf PORT writes $hp/haproxy.cfg: the stick table's limit on /v1/,
# then the mock. One thread, so a check and its count cannot interleave.
write_conf() {
	local store=http_req_rate
	[[ $COUNT == admitted ]] && store=gpc0_rate
	cat >"$hp/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 1024
	log stdout format raw local0 info
defaults
	mode http
	log global
	timeout connect 5s
	timeout client 300s
	timeout server 300s
	timeout http-keep-alive 60s
frontend api
	bind 127.0.0.1:$1
	log-format "%Ts.%ms %ST %Ta %HP"
	acl api path_beg /v1/
	http-request set-log-level silent if { path /healthz }
$(limit_rules | sed 's/^/\t/')
	http-request set-path /v1/models if { path /healthz }
	default_backend mock
backend limits
	stick-table type ip size 1k expire 10s store $store(1s)
backend mock
	http-reuse always
	server mock $mockaddr
EOF
}

# start_haproxy starts haproxy on a free port (a fresh table and log) and
# sets haproxypid and port once it answers.
start_haproxy() {
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		mkdir -p "$hp" && rm -f "$hp/access.log" "$hp/stderr.log"
		write_conf "$port"
		"$haproxy_bin" -c -q -f "$hp/haproxy.cfg" >"$hp/stderr.log" 2>&1 ||
			{ echo "haproxy refused its config:" >&2 && cat "$hp/stderr.log" >&2 && exit 1; }
		"$haproxy_bin" -db -f "$hp/haproxy.cfg" >"$hp/access.log" 2>>"$hp/stderr.log" &
		haproxypid=$!
		for _ in $(seq 100); do
			healthz "$port" && return 0
			alive "$haproxypid" || break
			sleep 0.05
		done
		grep -q 'cannot bind socket' "$hp/stderr.log" 2>/dev/null || break
		stop_haproxy
	done
	echo "haproxy did not start or did not answer:" >&2
	cat "$hp/stderr.log" >&2 2>/dev/null || true
	exit 1
}

# The limiter's hooks for limited_run (lib.sh): only the API's requests
# are counted from haproxy's log.
# shellcheck disable=SC2016 # an awk condition, for awk to read
limiter=haproxy limiter_burst=0 served='$4 ~ /^\/v1\//'
start_limiter() { start_haproxy; }
stop_limiter() { stop_haproxy; }
limiter_log() { echo "$hp/access.log"; }

apt_install haproxy 1
haproxy_bin=$(find_sbin haproxy)
limited_setup

hint='no hint'
[[ $HINT == 1 ]] && hint='Retry-After: 1'
printf 'haproxy %s stick table: over %d a sliding second refused (%s count), 429 %s; mock latency %s; N=%d, -j %d\n' \
	"$("$haproxy_bin" -v | sed -n 's/^HA-\{0,1\}Proxy version \([^ ]*\).*/\1/p')" "$RATE" \
	"$([[ $COUNT == all ]] && echo 'refused requests' || echo 'admitted only')" "$hint" "$LATENCY" "$N" "$J"
[[ $MODE != told ]] && limited_run untold
[[ $MODE != untold ]] && limited_run told --rpm "$CLIENT_RPM"
exit "$worst"
