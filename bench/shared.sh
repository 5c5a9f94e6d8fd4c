#!/usr/bin/env bash
# shared.sh: several llmbatch jobs on one key at once (DESIGN §9): how long
# until the last one finishes, against the ideal the key's limit allows, and
# how many of their requests the server refused.
#
#   bench/shared.sh                          # 3 jobs x 200 items, server 20 req/s, told --rpm 1200
#   CLIENT_RPM=0 bench/shared.sh             # told nothing
#   REDIS=1 bench/shared.sh                  # the jobs share the limit through a real redis-server
#   JOBS=4 N=300 SERVER_RPM=30 bench/shared.sh
#
# It starts `llmbatch mock serve --rpm $SERVER_RPM --window 1s
# --no-limit-headers` on a free loopback port and, with REDIS=1, a
# redis-server on another (installed from Debian's package if missing), then
# JOBS processes of N items each with `--rpm $CLIENT_RPM -j $J`. The ideal is
# JOBS*N over the server's rate. 429s are counted from each client's debug
# "retry" lines with status 429.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-3}
N=${N:-200}
SERVER_RPM=${SERVER_RPM:-20}
CLIENT_RPM=${CLIENT_RPM:-1200}
J=${J:-16}
REDIS=${REDIS:-0}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-shared.XXXXXX")
mockpid=
redispid=
cleanup() {
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null
	[[ -n $redispid ]] && kill "$redispid" 2>/dev/null && wait "$redispid" 2>/dev/null
	[[ -n ${KEEP:-} ]] && cp -r "$work" "$KEEP"; rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" .)
bin=$work/llmbatch
. "$root/bench/lib.sh"

redis_args=()
if [[ $REDIS == 1 ]]; then
	if ! command -v redis-server >/dev/null; then
		echo "installing redis-server (Debian package)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server >/dev/null
	fi
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
	redispid=$!
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
	redis_args=(--redis "redis://127.0.0.1:$port/0")
fi

for j in $(seq "$JOBS"); do
	awk -v n="$N" -v j="$j" 'BEGIN { srand(j); for (i = 1; i <= n; i++) {
		len = 50 + int(rand() * 351); s = ""
		while (length(s) < len) s = s "lorem ipsum dolor sit amet "
		printf "{\"id\":\"j%d-%d\",\"prompt\":\"%s\"}\n", j, i, substr(s, 1, len) } }' >"$work/in$j.jsonl"
done

start_mock --rpm "$SERVER_RPM" --window 1s --no-limit-headers

t0=$(date +%s.%N)
pids=()
for j in $(seq "$JOBS"); do
	( code=0
	  LLMBATCH_API_KEY=sk-shared-bench "$bin" run --base-url "$url" --model mock-1 -j "$J" --rpm "$CLIENT_RPM" \
		"${redis_args[@]}" --progress off -v --log-format json -o "$work/out$j.jsonl" "$work/in$j.jsonl" \
		2>"$work/client$j.log" || code=$?
	  echo "$code $(date +%s.%N)" >"$work/end$j" ) &
	pids+=($!)
done
wait "${pids[@]}"

last=0
total_429=0
results=0
for j in $(seq "$JOBS"); do
	read -r code end <"$work/end$j"
	took=$(echo "$end - $t0" | bc -l)
	n429=$(grep '"msg":"retry"' "$work/client$j.log" | grep -c '"status":429' || true)
	lines=$(wc -l <"$work/out$j.jsonl" 2>/dev/null || echo 0)
	printf 'job %d: exit %d, %d results, %.2fs, %d 429s\n' "$j" "$code" "$lines" "$took" "$n429"
	total_429=$((total_429 + n429))
	results=$((results + lines))
	last=$(echo "if ($took > $last) $took else $last" | bc -l)
done
rate=$(echo "$SERVER_RPM" | bc -l)
ideal=$(echo "$JOBS * $N / $rate" | bc -l)
requests=$((results + total_429))
printf 'server: %d requests/s; %d jobs x %d items, --rpm %d, -j %d, redis: %s\n' \
	"$SERVER_RPM" "$JOBS" "$N" "$CLIENT_RPM" "$J" "$([[ $REDIS == 1 ]] && echo yes || echo no)"
printf 'last job done at %.2fs, ideal %.2fs: %.2fx; 429s %d of %d requests (%.1f%%)\n' \
	"$last" "$ideal" "$(echo "$last / $ideal" | bc -l)" "$total_429" "$requests" \
	"$(echo "100 * $total_429 / $requests" | bc -l)"
