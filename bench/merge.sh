#!/usr/bin/env bash
# merge.sh: requests and prompt tokens with --merge against without, on N
# short texts (20 to 200 characters), through the built-in mock provider,
# which answers merged requests as a well-behaved model does.
#
#   bench/merge.sh            # N=10000
#   N=2000 SYSTEM='Answer with one word.' bench/merge.sh
#
# Target: requests with --merge at most 1.05 x ceil(N/20).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-10000}
SYSTEM=${SYSTEM:-"Classify the text as billing, bug, account or other. Answer with the label only."}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-merge.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/llmbatch" .)

# N texts of 20 to 200 characters, from a fixed seed.
awk -v n="$N" 'BEGIN { srand(7); w = "card charged twice refund login blank screen invoice missing vat email change app crash upload photo slow delete account password reset"
	split(w, words, " "); for (i = 1; i <= n; i++) { len = 20 + int(rand() * 181); s = "";
	while (length(s) < len) s = s words[1 + int(rand() * length(words))] " "; s = substr(s, 1, len);
	printf "{\"id\":\"m-%d\",\"prompt\":\"%s\"}\n", i, s } }' > "$work/in.jsonl"

run() { # name, extra flags...: runs the job and prints requests and prompt tokens
	local name=$1; shift
	rm -f "$work"/out.* "$work/report.json"
	"$work/llmbatch" run --provider mock -j 16 -q --system "$SYSTEM" --report "$work/report.json" \
		-o "$work/out.jsonl" "$@" "$work/in.jsonl"
	local lines requests tokens
	lines=$(wc -l < "$work/out.jsonl")
	requests=$(grep -o '"requests": [0-9]*' "$work/report.json" | grep -o '[0-9]*$')
	tokens=$(grep -A2 '"tokens"' "$work/report.json" | grep -o '"prompt": [0-9]*' | grep -o '[0-9]*$')
	printf '%-10s %8d results %8d requests %10d prompt tokens\n' "$name" "$lines" "$requests" "$tokens"
	echo "$requests $tokens" > "$work/$name.fig"
}

echo "N=$N texts of 20-200 characters; system prompt of ${#SYSTEM} characters"
run single
run merged --merge
read -r rs ts < "$work/single.fig"
read -r rm tm < "$work/merged.fig"
ideal=$(( (N + 19) / 20 ))
awk -v rm="$rm" -v ideal="$ideal" -v rs="$rs" -v ts="$ts" -v tm="$tm" 'BEGIN {
	printf "merged requests: %d = %.3f x ceil(N/20) = %d (target <= 1.05): %s\n", rm, rm / ideal, ideal, (rm <= 1.05 * ideal ? "met" : "MISSED")
	printf "requests: %.1fx fewer; prompt tokens: %.2fx of the unmerged run\n", rs / rm, tm / ts }'
