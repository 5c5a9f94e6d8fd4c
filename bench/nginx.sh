#!/usr/bin/env bash
# nginx.sh: llmbatch against one real third-party rate limiter, nginx's
# limit_req (a leaky bucket that answers 429 with its own HTML page and no
# hint at all), in front of `llmbatch mock serve` (no limits, some latency).
#
#   bench/nginx.sh                       # untold: -j 32, no --rpm, N=600, RATE=20 r/s, BURST=5
#   MODE=told bench/nginx.sh             # told the true limit: --rpm $CLIENT_RPM (default 1200)
#   MODE=both bench/nginx.sh             # untold, then told
#   N=1200 RATE=10 BURST=0 J=16 LATENCY=200ms bench/nginx.sh
#
# It installs Debian's package nginx with apt-get if there is no nginx,
# writes an nginx.conf into a temporary directory (every path nginx writes
# is in there), starts nginx and the mock on free loopback ports, and for
# each run prints the wall time against the ideal (N-BURST)/RATE and the
# share of requests nginx refused, counted from nginx's own access log.
# Everything it starts is stopped by its pid on exit, however it exits.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
N=${N:-600}
RATE=${RATE:-20}
BURST=${BURST:-5}
J=${J:-32}
LATENCY=${LATENCY:-50ms}
CLIENT_RPM=${CLIENT_RPM:-1200}
MODE=${MODE:-untold}
case $MODE in untold | told | both) ;; *) echo "MODE must be untold, told or both" >&2 && exit 2 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-nginx.XXXXXX")
ng=$work/nginx
mockpid='' nginxpid='' clientpid='' worst=0

# stop_nginx stops the master; if it had to be killed, its workers too.
stop_nginx() {
	[[ -n $nginxpid ]] || return 0
	local workers
	workers=$(cat /proc/"$nginxpid"/task/*/children 2>/dev/null || true)
	stop "$nginxpid" TERM
	for w in $workers; do
		[[ $(cat /proc/"$w"/comm 2>/dev/null) == nginx ]] && { kill -KILL "$w" 2>/dev/null || true; }
	done
	nginxpid=
}

limited_traps

# write_conf PORT writes $ng/nginx.conf: limit_req on /v1/, proxied to the mock.
write_conf() {
	local user=
	[[ $(id -u) == 0 ]] && user="user $(id -un) $(id -gn);"
	# nginx takes no burst=0: with none, limit_req allows no burst.
	local burstopt="burst=$BURST nodelay"
	((BURST > 0)) || burstopt=
	cat >"$ng/nginx.conf" <<EOF
$user
daemon off;
master_process on;
worker_processes 1;
pid $ng/nginx.pid;
error_log $ng/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	log_format bench '\$msec \$status \$request_time \$upstream_status';
	client_body_temp_path $ng/client_body;
	proxy_temp_path $ng/proxy;
	fastcgi_temp_path $ng/fastcgi;
	uwsgi_temp_path $ng/uwsgi;
	scgi_temp_path $ng/scgi;
	limit_req_zone \$binary_remote_addr zone=api:1m rate=${RATE}r/s;
	limit_req_status 429;
	upstream mock { server $mockaddr; keepalive 64; }
	server {
		listen 127.0.0.1:$1;
		proxy_http_version 1.1;
		proxy_set_header Connection "";
		proxy_read_timeout 300s;
		location /v1/ {
			limit_req zone=api $burstopt;
			access_log $ng/access.log bench;
			proxy_pass http://mock;
		}
		location = /healthz { proxy_pass http://mock/v1/models; }
	}
}
EOF
}

# start_nginx starts nginx on a free port (a fresh bucket and access log)
# and sets nginxpid and port once it answers.
start_nginx() {
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		mkdir -p "$ng" && rm -f "$ng/access.log" "$ng/error.log"
		write_conf "$port"
		"$nginx_bin" -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" 2>>"$ng/stderr.log" &
		nginxpid=$!
		for _ in $(seq 100); do
			healthz "$port" && return 0
			alive "$nginxpid" || break
			sleep 0.05
		done
		grep -q 'Address already in use' "$ng/error.log" "$ng/stderr.log" 2>/dev/null || break
		stop_nginx
	done
	echo "nginx did not start or did not answer:" >&2
	cat "$ng/stderr.log" "$ng/error.log" >&2 2>/dev/null || true
	exit 1
}

# The limiter's hooks for limited_run (lib.sh).
limiter=nginx limiter_burst=$BURST served='1'
start_limiter() { start_nginx; }
stop_limiter() { stop_nginx; }
limiter_log() { echo "$ng/access.log"; }

apt_install nginx
nginx_bin=$(find_sbin nginx)
limited_setup

printf 'nginx %s limit_req: rate=%dr/s burst=%d nodelay, 429 page, no hints; mock latency %s; N=%d, -j %d\n' \
	"$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')" "$RATE" "$BURST" "$LATENCY" "$N" "$J"
[[ $MODE != told ]] && limited_run untold
[[ $MODE != untold ]] && limited_run told --rpm "$CLIENT_RPM"
exit "$worst"
