# lib.sh: shared by the bench scripts (sourced, not run). They set bin, the
# built llmbatch, and work, their temporary directory, first.

# start_mock ARGS... starts `llmbatch mock serve --addr 127.0.0.1:0 ARGS...`
# in the background, logging to $work/mock.log, and sets mockpid and url
# (its base URL) once it listens; it exits the script if it never does.
start_mock() {
	"$bin" mock serve --addr 127.0.0.1:0 "$@" 2>"$work/mock.log" &
	mockpid=$!
	url=
	for _ in $(seq 100); do
		url=$(grep -o 'http://[^ ]*/v1' "$work/mock.log" 2>/dev/null || true)
		[[ -n $url ]] && return 0
		sleep 0.05
	done
	echo "mock did not start:" >&2
	cat "$work/mock.log" >&2
	exit 1
}

# limited_setup, for the benches of a real limiter in front of the mock,
# builds llmbatch into $work (sets bin), writes N items of 50-400
# characters, seeded, to $work/in.jsonl, and starts the mock with LATENCY
# (sets url and mockaddr, its host:port). The script sets root, work, N
# and LATENCY first.
limited_setup() {
	export PATH=$PATH:/usr/local/go/bin
	(cd "$root" && go build -o "$work/llmbatch" .)
	bin=$work/llmbatch
	awk -v n="$N" 'BEGIN {
		srand(1)
		split("the of and to in is that for it as with was on be by at this from or an are which", w, " ")
		for (i = 1; i <= n; i++) {
			size = 50 + int(rand() * 351)
			s = "item " i
			while (length(s) < size) s = s " " w[1 + int(rand() * 22)]
			printf "{\"id\":\"n-%d\",\"prompt\":\"%s\"}\n", i, substr(s, 1, size)
		}
	}' >"$work/in.jsonl"
	start_mock --latency "$LATENCY"
	mockaddr=${url#http://}
	mockaddr=${mockaddr%/v1}
}

# seconds DURATION prints a Go-style duration such as 1s, 500ms or 1m in
# seconds.
seconds() {
	awk -v w="$1" 'BEGIN { if (w ~ /ms$/) print substr(w, 1, length(w)-2)/1000;
		else if (w ~ /m$/) print substr(w, 1, length(w)-1)*60; else print substr(w, 1, length(w)-1) }'
}

# alive PID: the process exists and is not a zombie waiting to be reaped.
alive() {
	local s
	s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
	[[ -n $s && $s != Z ]]
}

# stop PID SIGNAL sends SIGNAL, waits up to 5 s, then SIGKILL, and reaps it.
stop() {
	kill -"$2" "$1" 2>/dev/null || return 0
	for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# free_port prints a loopback port nothing listens on (nginx retries on a race).
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p" && return 0; }
	done
	echo "no free port found" >&2
	exit 1
}

# field NAME DIR prints the first number named NAME in DIR's --report, or "?".
field() {
	local v
	v=$(grep -o "\"$1\": *[0-9]*" "$2/report.json" 2>/dev/null | head -n 1 | grep -o '[0-9]*$') || v=
	echo "${v:-?}"
}

# limited_run LABEL [FLAGS...] runs $work/in.jsonl through the limiter in
# front of the mock (on $port) and prints the figures: the wall time against
# the ideal, and what the limiter's own log counted. The script defines
# limiter (its name), limiter_burst (requests it lets through at once),
# served (an awk condition for the log lines of API requests),
# start_limiter, stop_limiter and limiter_log (the log's path), and sets
# bin, work, N, RATE, J, CLIENT_RPM, and worst (set to 1 on a failed run).
limited_run() {
	local label=$1 dir=$work/$1 code=0 t0 t1
	shift
	mkdir -p "$dir"
	start_limiter
	t0=$(date +%s.%N)
	"$bin" run --base-url "http://127.0.0.1:$port/v1" --model mock-1 -j "$J" "$@" --progress off \
		-v --log-format json --report "$dir/report.json" -o "$dir/out.jsonl" "$work/in.jsonl" 2>"$dir/client.log" &
	clientpid=$!
	wait "$clientpid" || code=$?
	clientpid=
	t1=$(date +%s.%N)
	stop_limiter
	cp "$(limiter_log)" "$dir/access.log"
	limited_report "$label" "$code" "$t0" "$t1" "$dir" "$@"
}

# limited_report LABEL CODE T0 T1 DIR [FLAGS...] prints one run's figures.
limited_report() {
	local label=$1 code=$2 t0=$3 t1=$4 dir=$5 wall ideal rate total refused other done_n failed
	shift 5
	total=$(awk "$served" "$dir/access.log" | wc -l)
	refused=$(awk "($served) && \$2 == 429" "$dir/access.log" | wc -l)
	other=$(awk "($served) && \$2 != 429 && \$2 != 200" "$dir/access.log" | wc -l)
	done_n=0
	[[ -f $dir/out.jsonl ]] && done_n=$(wc -l <"$dir/out.jsonl")
	failed=0
	[[ -f $dir/out.errors.jsonl ]] && failed=$(wc -l <"$dir/out.errors.jsonl")
	wall=$(echo "$t1 - $t0" | bc -l)
	rate=$RATE
	[[ $label == told ]] && rate=$(echo "r = $CLIENT_RPM / 60; if (r < $RATE) r else $RATE" | bc -l)
	ideal=$(echo "n = $N - $limiter_burst; if (n < 1) n = 1; n / $RATE" | bc -l)
	[[ $rate != "$RATE" ]] && ideal=$(echo "$N / $rate" | bc -l)
	printf '%s (%s): wall %.1fs, ideal %.1fs, %.2fx ideal; exit code %d\n' \
		"$label" "${*:-told nothing}" "$wall" "$ideal" "$(echo "$wall / $ideal" | bc -l)" "$code"
	printf '  %s saw %d requests, 429s %d (%.1f%%), other non-200 %d; items done %d, failed %d of %d\n' \
		"$limiter" "$total" "$refused" "$(echo "100 * $refused / ($total + ($total == 0))" | bc -l)" "$other" "$done_n" "$failed" "$N"
	printf '  client counted %s rate-limited; its pace at the end: %s/min (the limit: %d/min)\n' \
		"$(field rate_limited "$dir")" "$(field rpm "$dir")" "$((RATE * 60))"
	if [[ $code != 0 ]]; then
		worst=1
		echo "  llmbatch failed; the end of its log:" && tail -n 3 "$dir/client.log" | sed 's/^/    /'
	fi
}

# find_sbin NAME prints NAME's path; /usr/sbin is not on every user's PATH.
find_sbin() {
	command -v "$1" 2>/dev/null || { [[ -x /usr/sbin/$1 ]] && echo "/usr/sbin/$1"; }
}

# apt_install NAME [QUIET] installs Debian's package NAME with apt-get, as
# root or with sudo, unless find_sbin finds it. QUIET=1: a policy-rc.d
# answering 101 (removed again if made here) keeps the package from starting
# Debian's own NAME service; otherwise that service may start, unused.
apt_install() {
	local name=$1 quiet=${2:-} as=() made_policy=
	find_sbin "$name" >/dev/null && return 0
	command -v apt-get >/dev/null || { echo "no $name and no apt-get: install $name first" >&2 && exit 1; }
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null || { echo "no $name: install it (apt-get install $name) as root" >&2 && exit 1; }
		as=(sudo)
	fi
	echo "$name is not installed: installing Debian's package $name with apt-get (non-interactive)." >&2
	if [[ -z $quiet ]]; then
		echo "(Debian may start its own $name service; this script neither uses nor stops it.)" >&2
	elif [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${as[@]}" tee /usr/sbin/policy-rc.d >/dev/null
		"${as[@]}" chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
	local get=("${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	"${get[@]}" install --no-install-recommends "$name" >&2 ||
		{ "${get[@]}" update >&2 && "${get[@]}" install --no-install-recommends "$name" >&2; } || true
	[[ -n $made_policy ]] && "${as[@]}" rm -f /usr/sbin/policy-rc.d
	find_sbin "$name" >/dev/null || { echo "apt-get installed no $name" >&2 && exit 1; }
}

# healthz PORT: GET /healthz through the limiter (routed to the mock's
# /v1/models, outside its limit) gets 200, so both the limiter and the
# mock answer.
healthz() (
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	IFS= read -r -t 2 line <&3 || exit 1
	[[ $line == HTTP/1.?' 200'* ]]
) 2>/dev/null

# limited_traps makes every exit run limited_cleanup: it stops the client
# ($clientpid), the limiter (stop_limiter) and the mock ($mockpid), copies
# $work to $KEEP if that is set, and removes $work.
limited_traps() {
	trap limited_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
}

# shellcheck disable=SC2317 # run from the EXIT trap
limited_cleanup() {
	[[ -n $clientpid ]] && stop "$clientpid" INT
	stop_limiter
	[[ -n $mockpid ]] && stop "$mockpid" INT
	[[ -n ${KEEP:-} && -d $work ]] && cp -r "$work" "$KEEP" && echo "kept logs in $KEEP" >&2
	rm -rf "$work"
}
