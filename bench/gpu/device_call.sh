#!/usr/bin/env bash
# The device tool ends a command after 10 minutes, and the whole GPU run
# (build, sanitizers, >= 10M checked queries, benchmark) can take longer.  So
# the run goes on in its own session and each call follows it for a while:
#
#   bash bench/gpu/device_call.sh start     kill any earlier run, start afresh
#   bash bench/gpu/device_call.sh follow    wait for the run in progress
#
# Each call copies the logs so far to $OUT.  WAIT (default 560) bounds the
# seconds one call follows.
set -u
cd "$(dirname "$0")/../.."
dir=/tmp/gpuidx-device
if [ "${1:-follow}" = start ]; then
	pkill -f run_device.sh; sleep 1
	rm -rf "$dir"; mkdir -p "$dir"
	OUT=$dir setsid nohup bash bench/gpu/run_device.sh > "$dir/run.log" 2>&1 < /dev/null &
fi
end=$((SECONDS + ${WAIT:-560}))
while [ $SECONDS -lt $end ] && pgrep -f run_device.sh > /dev/null; do sleep 5; done
cat "$dir/run.log"
[ -n "${OUT:-}" ] && cp "$dir"/*.txt "$dir"/*.log "$dir"/*.md "$OUT"/ 2>/dev/null
if pgrep -f run_device.sh > /dev/null; then echo "== STILL RUNNING"; else echo "== FINISHED"; fi
