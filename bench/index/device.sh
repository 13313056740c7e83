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
#
# RUN=curve: bench/index/curve.sh instead, on debian-paths scaled to SIZES
# ("7316650 100000000 25000000 50000000": the largest early, so that a run
# cut short by the machine's 30 minutes still has it), GIN at GIN_SIZES
# (the first), gpuidx through the GPU worker and in the backend (DEVICES,
# "worker cpu"), CLIENTS ("1 16 32"), TIME (5) s a cell (AFTER_TIME after the
# writes), and the writes at
# the largest size (WRITES, 1; VERIFY, 0, leaves gpuidx_verify out: one
# core reads the whole table).  The worker's arena (1GB) holds a
# 100M-document segment's doc lengths, its cache (GPU_CACHE, 16GB) the
# lists.  Results: curve.md, curve.log.
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
	if [ "${RUN:-build}" = curve ]; then
		cat >> "$w/pg/postgresql.conf" <<CONF
gpuidx.worker_arena_size = 1GB
gpuidx.gpu_cache_size = ${GPU_CACHE:-16GB}
CONF
		as_user pg_ctl -D "$w/pg" -l "$w/pg/log" restart > /dev/null || exit 1
		for i in $(seq 30); do [ "$(as_user $P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
		cp "$pack/dpaths-queries.tsv" "$w/data/debian-paths/queries.tsv" && chown -R gpuidx "$w/data"
		log "cost curve: ${SIZES:-7316650 100000000 25000000 50000000}"
		as_user env PGHOST="$w" PGPORT=5432 SIZES="${SIZES:-7316650 100000000 25000000 50000000}" \
			GIN_SIZES="${GIN_SIZES:-7316650}" GIN_PARTITIONS="${GIN_PARTITIONS:-1}" DEVICES="${DEVICES:-worker cpu}" CLIENTS="${CLIENTS:-1 16 32}" \
			TIME="${TIME:-5}" AFTER_TIME="${AFTER_TIME:-${TIME:-5}}" WRITES="${WRITES:-1}" VERIFY="${VERIFY:-0}" MWM="${MWM:-1GB}" \
			bash "$w/bench/index/curve.sh" "$w/data/debian-paths" > "$dir/curve.md" 2> "$dir/curve.log"
		log "curve.sh exit $?"
		cat "$dir/curve.md"
		grep -E "ERROR|FATAL|PANIC" "$w/pg/log" | sort | uniq -c | sort -rn | head -20
		exit 0
	fi
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
