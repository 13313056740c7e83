#!/usr/bin/env bash
# bench/index/parallel_build.sh on the GPU machine's 16 cores (the device
# tool), carrying bench/build/tsquery (bash bench/worker/pack.sh tsquery: the
# bundled PostgreSQL and debian-paths):
#
#   bash bench/index/device.sh start    start the run, then follow it
#   bash bench/index/device.sh follow   follow the run in progress
#
# The run (bench/worker/device_cluster.sh): gpuidx built and installed into
# the bundled PostgreSQL, a cluster allowed 16 parallel workers; then
# parallel_build.sh on all of debian-paths with WORKERS ("0 1 3 7 15"), and
# for each of SCALED (debian-paths scaled by scripts/data/scale to that many
# rows, "14633300") with WORKERS_SCALED ("0 15"), without GIN.  Results in $OUT after each
# call: dpaths-ROWS.md (the report), dpaths-ROWS.log, machine.txt, run.log,
# server.log.  Every call's last line is "== FINISHED" or "== STILL RUNNING";
# the run's log ends with "== END (exit N)".
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=/tmp/gpuidx-index-device
mode=${1:-follow}

if [ "$mode" = run ]; then
	pack=$PWD/bench/build/tsquery
	out=$dir
	w=/tmp/gpuidx-index
	. bench/worker/device_cluster.sh
	cp -a scripts "$w/scripts"
	cat >> "$w/pg/postgresql.conf" <<CONF
max_worker_processes = 24
max_parallel_workers = 16
max_parallel_maintenance_workers = 16
CONF
	as_user pg_ctl -D "$w/pg" -l "$w/pg/log" restart > /dev/null || exit 1
	mkdir -p "$w/data/debian-paths"
	# packed without ids: a path's id is its line number
	xz -T0 -dc "$pack/dpaths-paths.xz" | awk '{ print NR "\t" $0 }' > "$w/data/debian-paths/docs.tsv" || exit 1
	chown -R gpuidx "$w"
	for rows in 0 ${SCALED-14633300}; do
		workers=${WORKERS:-0 1 3 7 15} gin=1
		[ "$rows" = 0 ] || { workers=${WORKERS_SCALED:-0 15}; gin=0; }
		log "debian-paths, ${rows/#0/all} rows, workers $workers"
		as_user env PGHOST="$w" PGPORT=5432 WORKERS="$workers" MWM="${MWM:-1GB}" GIN=$gin \
			bash "$w/bench/index/parallel_build.sh" "$w/data/debian-paths" "$rows" \
			> "$dir/dpaths-$rows.md" 2> "$dir/dpaths-$rows.log"
		log "parallel_build.sh exit $?"
		cat "$dir/dpaths-$rows.md"
	done
	grep -E "ERROR|FATAL|PANIC" "$w/pg/log" | sort | uniq -c | sort -rn | head -20
	exit 0
fi

self=bench/index/device.sh
. bench/worker/device_follow.sh
