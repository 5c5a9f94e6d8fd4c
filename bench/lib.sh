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
		url=$(grep -o 'http://[^ ]*/v1' "$work/mock.log" || true)
		[[ -n $url ]] && return 0
		sleep 0.05
	done
	echo "mock did not start:" >&2
	cat "$work/mock.log" >&2
	exit 1
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
