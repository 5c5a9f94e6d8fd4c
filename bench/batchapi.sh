#!/usr/bin/env bash
# batchapi.sh: the client's CPU and peak memory for a job of N items through
# the Batch API (shards, upload, poll, download, write), against
# `llmbatch mock serve` in its own process, so the mock's memory is not counted.
#
#   bench/batchapi.sh              # N=1000000 items, 50,000 a batch
#   N=200000 bench/batchapi.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-batchapi.XXXXXX")
mockpid=
cleanup() {
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch
port=$((20000 + RANDOM % 20000))
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":\"k%d\",\"prompt\":\"classify ticket %d: my card was charged twice\"}\n", i, i }' >"$work/in.jsonl"
"$bin" mock serve --addr "127.0.0.1:$port" --options batch_delay=200ms >"$work/mock.log" 2>&1 &
mockpid=$!
sleep 1
/usr/bin/time -v "$bin" run --base-url "http://127.0.0.1:$port/v1" --model mock-1 --batch-api --poll-every 200ms \
	-q --progress off -o "$work/out.jsonl" "$work/in.jsonl" 2>"$work/time.log"
echo "items: $N; result lines: $(wc -l <"$work/out.jsonl"); distinct ids: $(grep -o '"id":"[^"]*"' "$work/out.jsonl" | sort -u | wc -l)"
grep -E 'User time|System time|Elapsed|Maximum resident' "$work/time.log"
