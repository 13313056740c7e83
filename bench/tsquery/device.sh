#!/usr/bin/env bash
# bench/tsquery on the GPU machine (the device tool), carrying bench/build/tsquery:
# the bundled PostgreSQL, all of debian-paths and of GCIDE, made here by
#   bash bench/worker/pack.sh tsquery
# The run outlives one call's ten minutes in a session of its own; each call
# follows it for up to WAIT (540) seconds, then prints its log so far:
#
#   bash bench/tsquery/device.sh start    start the run, then follow it
#   bash bench/tsquery/device.sh follow   follow the run in progress
#
# The run (bench/worker/device_cluster.sh): gpuidx built and installed into
# the bundled PostgreSQL, a cluster with the GPU worker (gpuidx.device =
# worker); then bench/tsquery/run.sh on each corpus of CORPORA ("dpaths
# gcide"): ROWS_DPATHS and ROWS_GCIDE (all) rows, TIME (5) seconds a cell,
# and run.sh's settings where they are set (run.sh's defaults otherwise):
# CLIENTS, MIXES (MIXES=shapes: the ten query shapes), NQ, STATEMENTS,
# LAYOUTS, ONE, ONE_NQ, TIMEOUT, ONE_TIMEOUT, WARMUP_TIMEOUT, CHECK_TIMEOUT, CHECK_JOBS,
# CELLS, CPU_COLUMN, GPX_WITH, PARALLEL_BUILDS; each also for one corpus
# alone, after the common one: TIME_dpaths, CLIENTS_gcide, ONE_NQ_dpaths,
# CELLS_gcide, ...  Results in $OUT after each call: CORPUS.md (the report),
# CORPUS.partial.md (the report so far, while run.sh runs or when it
# failed), CORPUS.log (progress), machine.txt, run.log, server.log and
# stats.txt (the worker's view).  Every call's last line is "== FINISHED" or "== STILL
# RUNNING"; the run's log ends with "== END (exit N)".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
dir=/tmp/gpuidx-tsquery-device
mode=${1:-follow}

if [ "$mode" = run ]; then
	pack=$PWD/bench/build/tsquery
	out=$dir
	w=/tmp/gpuidx-tsquery
	. bench/worker/device_cluster.sh
	if [ "${ENGINE_CHECK:-0}" = 1 ]; then
		# the CUDA engine against the CPU reference: AND, AND NOT and OR, searched and merged
		log "engine check"
		make -s -j"$(nproc)" cuda-engine test/gpu/build/engine_check PG_CONFIG="$PGB/usr/lib/postgresql/15/bin/pg_config" > /dev/null 2>&1
		E=test/gpu/build/engine_check S=cuda/build/gpuidx_cuda.so
		{ $E --engine $S --queries 200000 --ranked 0 --max-len 200000 &&
		  $E --engine $S --queries 30000 --ranked 0 --skip-ratio 1 --seed 2 &&
		  $E --engine $S --queries 30000 --ranked 0 --skip-ratio 1000000000 --seed 3; } > "$dir/engine_check.txt" 2>&1
		log "engine check exit $?"
		tail -4 "$dir/engine_check.txt"
	fi
	for c in ${CORPORA:-dpaths gcide}; do
		docs=$pack/$c-docs.tsv.xz
		[ $c = dpaths ] && docs=$pack/dpaths-paths.xz
		[ -r "$docs" ] || { log "$c: not packed, skipped"; continue; }
		mkdir -p "$w/data/$c"
		if [ $c = dpaths ]; then
			# packed without ids: a path's id is its line number
			xz -T0 -dc "$docs" | awk '{ print NR "\t" $0 }' > "$w/data/$c/docs.tsv" || exit 1
		else
			xz -T0 -dc "$docs" > "$w/data/$c/docs.tsv" || exit 1
		fi
		cp "$pack/$c-queries.tsv" "$w/data/$c/queries.tsv"
		chown -R gpuidx "$w/data"
		rows=$(wc -l < "$w/data/$c/docs.tsv")
		[ $c = dpaths ] && rows=${ROWS_DPATHS:-$rows}
		[ $c = gcide ] && rows=${ROWS_GCIDE:-$rows}
		log "$c: $rows rows"
		# run.sh's settings: a corpus's own (TIME_gcide) before the common one
		# (TIME), and none where neither is set (an empty one is set: CLIENTS=)
		settings=(PGHOST="$w" PGPORT=5432 MAINTENANCE_WORK_MEM=1GB)
		for v in TIME CLIENTS MIXES NQ STATEMENTS SHAPES LAYOUTS ONE ONE_NQ TIMEOUT ONE_TIMEOUT WARMUP_TIMEOUT \
			CHECK_TIMEOUT CHECK_JOBS CELLS CPU_COLUMN GPX_WITH PARALLEL_BUILDS; do
			own=${v}_$c
			if [ -n "${!own+set}" ]; then settings+=("$v=${!own}")
			elif [ -n "${!v+set}" ]; then settings+=("$v=${!v}")
			elif [ $v = TIME ]; then settings+=(TIME=5)
			fi
		done
		# the report so far after each step, in case the machine goes back first
		chown gpuidx "$dir"
		as_user env "${settings[@]}" PARTIAL_REPORT="$dir/$c.partial.md" \
			bash "$w/bench/tsquery/run.sh" "$w/data/$c" "$rows" > "$dir/$c.md" 2> "$dir/$c.log"
		rc=$?
		log "$c: run.sh exit $rc"
		[ $rc != 0 ] || rm -f "$dir/$c.partial.md"
		tail -3 "$dir/$c.log"
		{ echo "-- $c"; as_user $P -xc 'SELECT * FROM gpuidx_worker_stats'; } >> "$dir/stats.txt"
		as_user $P -c 'SELECT gpuidx_worker_stats_reset()' > /dev/null
		if [ "${FORCE_GPU_CHECK:-0}" = 1 ]; then
			# every query again with every round the worker can take on the GPU, against GIN's counts
			log "$c: same rows with every round on the GPU"
			as_user env PGOPTIONS="-c enable_seqscan=off -c gpuidx.gpu_min_postings=0 -c gpuidx.cpu_ratio_threshold=1000000000" \
				$P -Atc "SELECT count(tsq_run('gpu', layout, 'gpx', 'count', mix, n)) FROM tsq_queries,
				         (SELECT DISTINCT layout FROM tsq_runs WHERE pass = 'check') l" > /dev/null
			as_user $P -Atc "SELECT count(*) || ' counts, ' || count(*) FILTER (WHERE g.nrows = c.nrows) || ' with GIN''s count'
				FROM tsq_runs g JOIN tsq_runs c ON c.pass = 'check' AND c.ix = 'gin' AND (c.layout, c.mix, c.n) = (g.layout, g.mix, g.n)
				WHERE g.pass = 'gpu'" | tee -a "$dir/$c.gpu-check.txt"
			{ echo "-- $c, every round on the GPU"; as_user $P -xc 'SELECT requests, worker_rounds, backend_rounds, fallback_engine_error, fallback_bad_answer, fallback_timeout FROM gpuidx_worker_stats'; } | tee -a "$dir/$c.gpu-check.txt"
		fi
		as_user $P -c 'DROP TABLE IF EXISTS docs_gpx, docs_gin, docs_gpx_tsv, docs_gin_tsv, tsq_meta, tsq_queries, tsq_mixes, tsq_runs, tsq_plans, tsq_cells'
		rm -rf "$w/data/$c"
	done
	grep -E "ERROR|FATAL|PANIC" "$w/pg/log" | sort | uniq -c | sort -rn | head -20
	exit 0
fi

self=bench/tsquery/device.sh
. bench/worker/device_follow.sh
