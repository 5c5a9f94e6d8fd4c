#!/usr/bin/env bash
# tokens.sh: how close `llmbatch run` gets to a server's token limit, with
# mostly short prompts and a few long ones carrying most of the tokens, and
# how many 429s it provokes on the way.
#
#   bench/tokens.sh                          # N=1000, server 20000 tokens / 1s window, --tpm not given
#   CLIENT_TPM=1200000 bench/tokens.sh       # told the true limit (20000 a second is 1.2M a minute)
#   MOCK_HEADERS=0 bench/tokens.sh           # a server that sends no x-ratelimit-* headers
#   BUCKET=1 bench/tokens.sh                 # a bucket refilling continuously (OpenAI's kind), not fixed windows
#
# It starts `llmbatch mock serve --tpm $SERVER_TPM --window $WINDOW` on a
# free loopback port and runs N items through it with -j $J: nine in ten of
# 100-300 characters, one in ten of 8,000-20,000. The ideal time is the
# prompt tokens the server counted (from --report) over its limit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-1000}
SERVER_TPM=${SERVER_TPM:-20000}
WINDOW=${WINDOW:-1s}
CLIENT_TPM=${CLIENT_TPM:-0}
LATENCY=${LATENCY:-50ms}
MOCK_HEADERS=${MOCK_HEADERS:-1}
BUCKET=${BUCKET:-0}
J=${J:-32}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-tokens.XXXXXX")
mockpid=
cleanup() {
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch
. "$root/bench/lib.sh"

awk -v n="$N" 'BEGIN {
	srand(1)
	split("the of and to in is that for it as with was on be by at this from or an are which", w, " ")
	for (i = 1; i <= n; i++) {
		size = (i % 10 == 3) ? 8000 + int(rand() * 12000) : 100 + int(rand() * 200)
		s = "item " i
		while (length(s) < size) s = s " " w[1 + int(rand() * 22)]
		printf "{\"id\":\"t-%d\",\"prompt\":\"%s\"}\n", i, s
	}
}' >"$work/in.jsonl"

headers=()
[[ $MOCK_HEADERS == 0 ]] && headers=(--no-limit-headers)
[[ $BUCKET == 1 ]] && headers+=(--bucket)
start_mock --tpm "$SERVER_TPM" --window "$WINDOW" --latency "$LATENCY" "${headers[@]}"

t0=$(date +%s.%N)
code=0
"$bin" run --base-url "$url" --model mock-1 -j "$J" --tpm "$CLIENT_TPM" --progress off \
	--report "$work/report.json" -o "$work/out.jsonl" ${VERBOSE:+-v --log-format json} "$work/in.jsonl" 2>"$work/client.log" || code=$?
[[ -n ${KEEP_LOG:-} ]] && cp "$work/client.log" "$KEEP_LOG"
t1=$(date +%s.%N)

done_lines=$(wc -l <"$work/out.jsonl" 2>/dev/null || echo 0)
prompt=$(grep -o '"prompt": *[0-9]*' "$work/report.json" | grep -o '[0-9]*$')
limited=$(grep -o '"rate_limited": *[0-9]*' "$work/report.json" | grep -o '[0-9]*$')
requests=$(grep -o '"requests": *[0-9]*' "$work/report.json" | grep -o '[0-9]*$')
window_s=$(seconds "$WINDOW")
rate=$(echo "$SERVER_TPM / $window_s" | bc -l)
wall=$(echo "$t1 - $t0" | bc -l)
ideal=$(echo "$prompt / $rate" | bc -l)

printf 'server: %d tokens per %s (%s), headers %s; client: --tpm %d, -j %d\n' \
	"$SERVER_TPM" "$WINDOW" "$([[ $BUCKET == 1 ]] && echo "bucket refilling continuously" || echo "fixed windows")" \
	"$([[ $MOCK_HEADERS == 0 ]] && echo off || echo on)" "$CLIENT_TPM" "$J"
printf 'items: %d, exit code %d, %d results, %d prompt tokens\n' "$N" "$code" "$done_lines" "$prompt"
printf 'wall: %.2fs, ideal tokens/limit: %.2fs (%.2fx ideal)\n' \
	"$wall" "$ideal" "$(echo "$wall / $ideal" | bc -l)"
printf '429s: %d of %d requests (%.1f%%)\n' "$limited" "$requests" "$(echo "100 * $limited / $requests" | bc -l)"
