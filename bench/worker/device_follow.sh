# Sourced by the device scripts (bench/tsquery/device.sh, bench/index/device.sh)
# for their start and follow modes, with $dir (the run's folder), $mode and
# $self (the script, from the tree's top) set.  start: the script's run mode
# in a session of its own (it outlives the device tool's call), then follow;
# follow: wait up to WAIT (540) seconds for the run, print its log and copy
# its results (*.md, *.log, *.txt) to $OUT.  The last line printed is
# "== FINISHED" or "== STILL RUNNING".
running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2> /dev/null; }
trap 'if running; then echo "== STILL RUNNING"; else echo "== FINISHED"; fi' EXIT
if [ "$mode" = start ]; then
	if running; then
		echo "a run is in progress (pid $(cat "$dir/pid")): follow it, or end it first"
		exit 1
	fi
	rm -rf "$dir" && mkdir -p "$dir"
	setsid nohup bash "$self" run > "$dir/run.log" 2>&1 < /dev/null &
	echo $! > "$dir/pid"
	sleep 2
elif [ "$mode" != follow ]; then
	echo "usage: $self start|follow" >&2
	exit 2
fi
end=$((SECONDS + ${WAIT:-540}))
while [ $SECONDS -lt $end ] && running; do sleep 5; done
cat "$dir/run.log"
[ -n "${OUT:-}" ] && cp "$dir"/*.md "$dir"/*.log "$dir"/*.txt "$OUT"/ 2> /dev/null
exit 0
