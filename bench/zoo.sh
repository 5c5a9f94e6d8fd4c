#!/usr/bin/env bash
# zoo.sh: the limiter zoo, the table or one server of it over real HTTP.
#
#   bench/zoo.sh                                   # the whole table (go test ./llm -run TestZoo), as markdown
#   STRICT=1 bench/zoo.sh                          # the same, asserting issue 10's figures
#   LIMITER=leaky HEADERS=none bench/zoo.sh one    # 600 items against one `llmbatch mock serve`
#   LIMITER=sliding-counter HEADERS=ietf CLIENT_RPM=1200 N=1000 bench/zoo.sh one
#
# The table runs under synctest's fake clock, in seconds of real time; see
# bench/README.md. `one` starts `llmbatch mock serve --limiter $LIMITER
# --limit-headers $HEADERS --rpm $SERVER_RPM --window $WINDOW --burst $BURST
# --latency $LATENCY` (default a leaky bucket of 20 a second with a burst of
# 5, nginx's HTML 429 page, 50ms) on a free loopback port, runs N items of
# 50-400 characters through it with `-j $J` (32) and `--rpm $CLIENT_RPM`
# (0: not told), and prints the wall time against N/rate and the 429s,
# counted from the client's debug "retry" log lines.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-table} != one ]]; then
	out=$(mktemp "${TMPDIR:-/tmp}/llmbatch-zoo.XXXXXX")
	trap 'rm -f "$out"' EXIT
	code=0
	(cd "$root" && LLMBATCH_ZOO_MD=$out LLMBATCH_ZOO_STRICT=${STRICT:-0} go test ./llm -run '^TestZoo$' -count=1) || code=$?
	cat "$out"
	exit $code
fi

N=${N:-600}
LIMITER=${LIMITER:-leaky}
HEADERS=${HEADERS:-none}
SERVER_RPM=${SERVER_RPM:-20}
WINDOW=${WINDOW:-1s}
BURST=${BURST:-0.25}
LATENCY=${LATENCY:-50ms}
CLIENT_RPM=${CLIENT_RPM:-0}
J=${J:-32}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-zoo.XXXXXX")
mockpid=
cleanup() {
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch
. "$root/bench/lib.sh"

awk -v n="$N" 'BEGIN { srand(10); split("the ticket says my card was charged twice please help", w, " ");
	for (i = 1; i <= n; i++) { s = "item " i ":"; size = 50 + int(rand() * 351)
		while (length(s) < size) s = s " " w[1 + int(rand() * 10)]
		printf "{\"id\":\"z-%d\",\"prompt\":\"%s\"}\n", i, s } }' >"$work/in.jsonl"

start_mock --limiter "$LIMITER" --limit-headers "$HEADERS" --rpm "$SERVER_RPM" --window "$WINDOW" \
	--burst "$BURST" --latency "$LATENCY"

t0=$(date +%s.%N)
code=0
"$bin" run --base-url "$url" --model mock-1 -j "$J" --rpm "$CLIENT_RPM" --progress off \
	-v --log-format json -o "$work/out.jsonl" "$work/in.jsonl" 2>"$work/client.log" || code=$?
t1=$(date +%s.%N)

results=$(wc -l <"$work/out.jsonl" 2>/dev/null || echo 0)
refused=$(grep '"msg":"retry"' "$work/client.log" | grep -c '"status":429' || true)
rate=$(echo "$SERVER_RPM / $(seconds "$WINDOW")" | bc -l)
wall=$(echo "$t1 - $t0" | bc -l)
ideal=$(echo "$N / $rate" | bc -l)
printf 'server: %s, %s headers, %d requests per %s, burst %s, latency %s; client: --rpm %d, -j %d\n' \
	"$LIMITER" "$HEADERS" "$SERVER_RPM" "$WINDOW" "$BURST" "$LATENCY" "$CLIENT_RPM" "$J"
printf 'items: %d, exit code %d, %d results\n' "$N" "$code" "$results"
printf 'wall: %.2fs, N/rate: %.2fs (%.2fx), 429s: %d (%.1f%% of requests)\n' "$wall" "$ideal" \
	"$(echo "$wall / $ideal" | bc -l)" "$refused" "$(echo "100 * $refused / ($N + $refused)" | bc -l)"
