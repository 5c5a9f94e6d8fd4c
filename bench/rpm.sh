#!/usr/bin/env bash
# rpm.sh: how close `llmbatch run --rpm` gets to a server's request limit,
# and how many 429s it provokes on the way.
#
#   bench/rpm.sh                         # N=400 items, server 20 req / 1s window, client --rpm 1200
#   N=600 SERVER_RPM=30 CLIENT_RPM=1800 J=16 bench/rpm.sh
#
# It starts `llmbatch mock serve --rpm $SERVER_RPM --window $WINDOW` on a free
# loopback port (a 1200-a-minute provider scaled down to 20 a second), runs
# N items through it with `--rpm $CLIENT_RPM -j $J -v --log-format json`,
# and prints the wall time against the ideal N/rate, and the number of 429s,
# counted from the client's debug "retry" log lines with status 429.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-400}
SERVER_RPM=${SERVER_RPM:-20}
WINDOW=${WINDOW:-1s}
CLIENT_RPM=${CLIENT_RPM:-1200}
J=${J:-16}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-rpm.XXXXXX")
mockpid=
cleanup() {
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch
. "$root/bench/lib.sh"

awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"id\":\"r-%d\",\"prompt\":\"rate test item %d\"}\n", i, i }' >"$work/in.jsonl"

start_mock --rpm "$SERVER_RPM" --window "$WINDOW"

t0=$(date +%s.%N)
code=0
"$bin" run --base-url "$url" --model mock-1 -j "$J" --rpm "$CLIENT_RPM" --progress off \
	-v --log-format json -o "$work/out.jsonl" "$work/in.jsonl" 2>"$work/client.log" || code=$?
t1=$(date +%s.%N)

done_lines=$(wc -l <"$work/out.jsonl" 2>/dev/null || echo 0)
retries_429=$(grep '"msg":"retry"' "$work/client.log" | grep -c '"status":429' || true)
retries_all=$(grep -c '"msg":"retry"' "$work/client.log" || true)
window_s=$(seconds "$WINDOW")
server_rate=$(echo "$SERVER_RPM / $window_s" | bc -l)
client_rate=$(echo "$CLIENT_RPM / 60" | bc -l)
rate=$server_rate # --rpm 0: none given, the server's limit rules
if [[ $CLIENT_RPM -gt 0 ]]; then
	rate=$(echo "if ($server_rate < $client_rate) $server_rate else $client_rate" | bc -l)
fi
wall=$(echo "$t1 - $t0" | bc -l)
ideal=$(echo "$N / $rate" | bc -l)

printf 'server: %d requests per %s (%.1f/s); client: --rpm %d (%.1f/s), -j %d\n' \
	"$SERVER_RPM" "$WINDOW" "$server_rate" "$CLIENT_RPM" "$client_rate" "$J"
printf 'items: %d, exit code %d, %d results\n' "$N" "$code" "$done_lines"
printf 'wall: %.2fs, ideal N/rate: %.2fs (%.0f%% of ideal), %.1f items/s\n' \
	"$wall" "$ideal" "$(echo "100 * $wall / $ideal" | bc -l)" "$(echo "$N / $wall" | bc -l)"
printf '429s: %d (retries of any kind: %d)\n' "$retries_429" "$retries_all"
grep -m1 '"msg":"retry"' "$work/client.log" | sed 's/^/first retry log line: /' || true
