#!/usr/bin/env bash
# Ranked search on the GPU machine (the device tool), carrying bench/build/rankdev:
# the bundled PostgreSQL and all of debian-paths and GCIDE, made here by
#   bash bench/rank/device.sh pack     (bench/worker/pack.sh bench, queries xz'd:
#                                      with the tree it must stay under 64 MiB)
# or PACK=bench/build/tsquery, the tsquery benchmark's pack (debian-paths as
# bare paths, numbered on the machine).  METHODS, BUILD_WORKERS, GPU_NOLIMIT,
# GPU_BACKLOGS, GPU_MIN_POSTINGS, GPU_SPLITS, RANK_CACHE_OFF, PER_QUERY, FLOOR, CLIENTS and CORPORA pass to bench/rank/run.sh; CHECKS=0
# skips the engine checks, RANKED, RANKED_LONG and INTERSECTIONS size them.
# The run goes on in its own session so that it outlives one call's ten
# minutes; each call follows it for a while:
#
#   bash bench/rank/device.sh start    build, check, then the benchmark
#   bash bench/rank/device.sh follow   wait for the run in progress
#
# The run: build and install gpuidx with the CUDA engine into the bundled
# PostgreSQL; engine_check's ranked queries on the CUDA engine against the
# CPU engine, bit for bit (random and heavy-tie cases), and under
# compute-sanitizer; then bench/rank/run.sh with GPU=on on both corpora,
# which first checks every query's top 10 and top 100 through the GPU worker
# against the CPU's, then measures GIN + ts_rank, RUM, gpuidx on the GPU and
# gpuidx on the CPU in the same run.  Logs and results: $OUT, and the last
# line of the log is "== END".
set -u
cd "$(dirname "$0")/../.."
dir=/tmp/gpuidx-rank-device
if [ "${1:-follow}" = pack ]; then
	bash bench/worker/pack.sh bench
	mkdir -p bench/build/rankdev
	for f in pg.tar.xz dpaths-docs.tsv.xz gcide-docs.tsv.xz; do ln -f bench/build/worker/$f bench/build/rankdev/$f; done
	for c in dpaths gcide; do xz -9 -c bench/build/worker/$c-queries.tsv > bench/build/rankdev/$c-queries.tsv.xz; done
	du -sh bench/build/rankdev
	exit 0
elif [ "${1:-follow}" = start ]; then
	pkill -f 'bench/rank/device.sh run' ; sleep 1
	rm -rf "$dir"; mkdir -p "$dir"
	setsid nohup bash bench/rank/device.sh run > "$dir/run.log" 2>&1 < /dev/null &
	sleep 2
elif [ "$1" = run ]; then
	trap 'echo "== END (exit $?) $(date +%T)"' EXIT
	log() { echo "== $* ($(date +%T))"; }
	export PGB=/opt/pgb
	pack=${PACK:-bench/build/rankdev}
	mkdir -p $PGB && tar xJf $pack/pg.tar.xz -C $PGB && . $PGB/env.sh || exit 1
	export PATH=/usr/local/cuda/bin:$PATH
	log "machine"
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	log "build"
	make -s -j"$(nproc)" with_llvm=no PG_CONFIG="$PGB/usr/lib/postgresql/15/bin/pg_config" all install 2>&1 | grep -vE "^$" | tail -5
	make -s -j"$(nproc)" test/gpu/build/engine_check 2>&1 | tail -3
	ls "$(pg_config --pkglibdir)"/gpuidx_cuda.so || exit 1
	ec=test/gpu/build/engine_check
	so=cuda/build/gpuidx_cuda.so
	log "the kernels' host logic (test_host)"
	make -s cuda-host-test 2>&1 | tail -2
	if [ "${CHECKS:-1}" = 1 ]; then
		log "engine_check: ranked queries, CUDA engine against the CPU engine"
		timeout 300 $ec --engine $so --reference cpu --queries 0 --ranked "${RANKED:-20000}" --max-len 200000 2>&1 | tail -6
		log "engine_check: ranked queries over segments and lists of up to 2M"
		timeout 300 $ec --engine $so --reference cpu --queries 0 --ranked "${RANKED_LONG:-1000}" --max-len 2000000 --seed 7 2>&1 | tail -6
		log "engine_check: intersections still equal"
		timeout 200 $ec --engine $so --reference cpu --queries "${INTERSECTIONS:-200000}" --max-len 200000 2>&1 | tail -4
		log "compute-sanitizer memcheck, ranked (small)"
		timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 $ec --engine $so --queries 0 --ranked 300 \
			--max-len 5000 > "$dir/memcheck.log" 2>&1; echo "memcheck exit $?"; tail -3 "$dir/memcheck.log"
	fi
	[ "${BENCH:-1}" = 1 ] || exit 0
	log "benchmark"
	data=/tmp/gpuidx-rank-data
	# the corpora carried (debian-paths as dpaths); run.sh skips a missing one
	for c in dpaths gcide; do
		d=$data/$c; [ $c = dpaths ] && d=$data/debian-paths
		if [ -f $pack/$c-docs.tsv.xz ]; then
			mkdir -p $d && xz -T0 -dc $pack/$c-docs.tsv.xz > $d/docs.tsv
		elif [ -f $pack/$c-paths.xz ]; then
			mkdir -p $d && xz -T0 -dc $pack/$c-paths.xz | awk '{ print NR "\t" $0 }' > $d/docs.tsv
		else
			continue
		fi
		if [ -f $pack/$c-queries.tsv.xz ]; then xz -dc $pack/$c-queries.tsv.xz > $d/queries.tsv; else cp $pack/$c-queries.tsv $d/queries.tsv; fi
	done
	id gpuidx > /dev/null 2>&1 || useradd -m gpuidx
	chmod -R a+rX $data
	GPUIDX_DATA=$data GPU=on BENCH_USER=gpuidx SECONDS_PER_CELL=${SECONDS_PER_CELL:-5} \
		OUT="$dir/rank-gpu.md" bash bench/rank/run.sh ${CORPORA:-debian-paths gcide} 2>&1
	cp bench/build/rank/*.csv bench/build/rank/*.txt "$dir"/ 2>/dev/null
	exit 0
fi
end=$((SECONDS + ${WAIT:-560}))
while [ $SECONDS -lt $end ] && pgrep -f 'bench/rank/device.sh run' > /dev/null; do sleep 5; done
cat "$dir/run.log"
[ -n "${OUT:-}" ] && cp "$dir"/*.log "$dir"/*.md "$dir"/*.csv "$dir"/*.txt "$OUT"/ 2>/dev/null
if pgrep -f 'bench/rank/device.sh run' > /dev/null; then echo "== STILL RUNNING"; else echo "== FINISHED"; fi
