#!/usr/bin/env bash
# soak.sh: SIGKILL a real `llmbatch run` at random instants, again and again,
# against a server that injects faults, rerunning the same command each time,
# then check the exactly-once invariant of DESIGN §3.
#
#   bench/soak.sh                          # N=20000 items, at least KILLS=25 kills
#   N=50000 KILLS=40 J=32 bench/soak.sh
#   FAIL_RATE=0.2 RESET_RATE=0.05 LATENCY=2ms JITTER=50ms bench/soak.sh
#   EXTRA=--merge bench/soak.sh            # merged requests
#
# The server is `llmbatch mock serve --fail-rate $FAIL_RATE --latency $LATENCY
# --jitter $JITTER` (500/502/503 answers and slow ones) behind `soakcheck
# proxy` (bench/soakcheck), which counts every request per prompt and resets
# a share RESET_RATE of the connections after reading the request. Each run
# is killed with SIGKILL after a random 50 to MAX_MS ms, until KILLS kills have
# landed; then a last run goes to the end. Before every run, soakcheck
# records which ids had a result line on disk and the request counts.
#
# At the end it prints one line, e.g.
#   kills=25 runs=26 items=20000 results=20000 lost=0 duplicated=0 wrong=0 ... resent_durable=0
# and exits 1 unless: every id has exactly one result line, every output is
# the mock's answer ("echo: " and the prompt cut to 200 bytes), nothing is
# torn or unknown, the errors file is empty, and no id whose result was on
# disk when a run started was requested again (resent_durable=0).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-20000}
KILLS=${KILLS:-25}
J=${J:-16}
MAX_MS=${MAX_MS:-900}
FAIL_RATE=${FAIL_RATE:-0.1}
RESET_RATE=${RESET_RATE:-0.02}
LATENCY=${LATENCY:-5ms}
JITTER=${JITTER:-20ms}
work=$(mktemp -d "${TMPDIR:-/tmp}/llmbatch-soak.XXXXXX")
mockpid= proxypid= runpid=
cleanup() {
	[[ -n $runpid ]] && kill -9 "$runpid" 2>/dev/null || true
	[[ -n $proxypid ]] && kill "$proxypid" 2>/dev/null && wait "$proxypid" 2>/dev/null || true
	[[ -n $mockpid ]] && kill -INT "$mockpid" 2>/dev/null && wait "$mockpid" 2>/dev/null || true
	if [[ ${KEEP:-} == 1 ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/llmbatch" . && go build -o "$work/soakcheck" ./bench/soakcheck)
bin=$work/llmbatch
. "$root/bench/lib.sh"
chk=$work/soakcheck

"$chk" gen -n "$N" -o "$work/in.jsonl"

start_mock --fail-rate "$FAIL_RATE" --latency "$LATENCY" --jitter "$JITTER"
mockurl=$url

"$chk" proxy -upstream "$mockurl" -reset-rate "$RESET_RATE" -addr-file "$work/proxy.addr" 2>"$work/proxy.log" &
proxypid=$!
for _ in $(seq 100); do
	[[ -s $work/proxy.addr ]] && break
	sleep 0.05
done
proxy=$(cat "$work/proxy.addr")

# EXTRA adds flags to every run, e.g. EXTRA=--merge.
read -r -a extra <<<"${EXTRA:-}"
args=(run --base-url "$proxy/v1" --model mock-1 -j "$J" --max-attempts 20 --base-delay 5ms --max-delay 200ms
	--timeout 5s --progress off -q "${extra[@]}" -o "$work/out.jsonl" "$work/in.jsonl")

kills=0 run=0
t0=$(date +%s)
while :; do
	run=$((run + 1))
	sleep 0.2 # requests of a killed run still in the proxy's hands are counted before the snapshot
	"$chk" snap -proxy "$proxy" -results "$work/out.jsonl" -o "$work/snap-$(printf %04d "$run").json"
	"$bin" "${args[@]}" 2>>"$work/runs.log" &
	runpid=$!
	if ((kills < KILLS)); then
		ms=$((50 + RANDOM % (MAX_MS - 50)))
		sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
		kill -9 "$runpid" 2>/dev/null || true
	fi
	code=0
	{ wait "$runpid"; } 2>/dev/null || code=$? # without bash's "Killed" notice
	runpid=
	if ((code == 137)); then # killed by the SIGKILL
		kills=$((kills + 1))
		continue
	fi
	if ((code != 0)); then
		echo "run $run exited $code; see below" >&2
		tail -20 "$work/runs.log" >&2
		exit 1
	fi
	if ((kills < KILLS)); then
		echo "the job finished after $kills kills, before $KILLS: raise N" >&2
		exit 1
	fi
	break
done
sleep 0.2
echo "soak: $run runs in $(($(date +%s) - t0))s; server: fail-rate $FAIL_RATE, resets $RESET_RATE, latency $LATENCY+$JITTER" >&2
"$chk" check -proxy "$proxy" -input "$work/in.jsonl" -results "$work/out.jsonl" -errors "$work/out.errors.jsonl" \
	-snaps "$work/snap-*.json" -kills "$kills"
