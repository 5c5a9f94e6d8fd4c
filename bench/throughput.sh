#!/usr/bin/env bash
# throughput.sh: items/s and peak RSS of `llmbatch run --provider mock`.
#
#   bench/throughput.sh [N ...]     # default: $N, else 100000
#   J=32 bench/throughput.sh 100000 1000000
#
# For each N it builds nothing new (the binary is built once), writes N
# records, runs `llmbatch run --provider mock -j $J -q` (checkpointing is
# always on) under /usr/bin/time -v, checks that the run exited 0 with N
# result lines, and prints wall time, items/s and peak RSS. Without
# /usr/bin/time it samples VmHWM from /proc instead. The mock provider runs
# in the same process, so its cost is included in both figures.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
J=${J:-32}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch

gen() { # n: n records with distinct ids and prompts of about 60 bytes
	awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++)
		printf "{\"id\":\"t-%d\",\"prompt\":\"Classify ticket %d: my card was charged twice this month\"}\n", i, i }'
}

now() { date +%s.%N; }

# measure n: runs the job on $work/in.jsonl and sets wall, rss_kb, user, sys.
measure() {
	local n=$1 t0 t1 code=0
	rm -f "$work"/out.*
	t0=$(now)
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -v -o "$work/time.txt" "$bin" run --provider mock -j "$J" -q \
			-o "$work/out.jsonl" "$work/in.jsonl" || code=$?
		t1=$(now)
		rss_kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
		user=$(awk -F': ' '/User time/ { print $2 }' "$work/time.txt")
		sys=$(awk -F': ' '/System time/ { print $2 }' "$work/time.txt")
	else
		"$bin" run --provider mock -j "$J" -q -o "$work/out.jsonl" "$work/in.jsonl" &
		local pid=$! hwm
		rss_kb=0
		while kill -0 "$pid" 2>/dev/null; do
			hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
			[[ -n $hwm && $hwm -gt $rss_kb ]] && rss_kb=$hwm
			sleep 0.02
		done
		wait "$pid" || code=$?
		t1=$(now)
		user=? sys=?
	fi
	wall=$(echo "$t1 - $t0" | bc -l)
	if [[ $code -ne 0 ]]; then
		echo "llmbatch exited $code" >&2
		exit 1
	fi
	local got
	got=$(wc -l <"$work/out.jsonl")
	if [[ $got -ne $n ]]; then
		echo "llmbatch wrote $got result lines for $n items" >&2
		exit 1
	fi
}

printf '%-9s %8s %10s %9s %7s %7s  %s\n' items wall_s items/s rss_MB user_s sys_s targets
for n in "${@:-${N:-100000}}"; do
	gen "$n" >"$work/in.jsonl"
	measure "$n"
	rate=$(echo "$n / $wall" | bc -l)
	mb=$(echo "$rss_kb / 1024" | bc -l)
	verdict=""
	(($(echo "$rate >= 5000" | bc -l))) || verdict+=" items/s<5000"
	(($(echo "$mb < 100" | bc -l))) || verdict+=" RSS>=100MB"
	printf '%-9d %8.2f %10.0f %9.1f %7s %7s  %s\n' "$n" "$wall" "$rate" "$mb" "$user" "$sys" "${verdict:-met}"
	rm -f "$work"/in.jsonl "$work"/out.*
done
