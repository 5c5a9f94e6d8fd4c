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
