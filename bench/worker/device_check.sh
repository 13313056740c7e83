#!/usr/bin/env bash
# The GPU worker with the CUDA engine, on the GPU machine, in one device call:
# build and install gpuidx into the bundled PostgreSQL, start a cluster with
# the worker, and run test/worker's checks (every answer through the worker
# equal to the backend's CPU answer: all of GCIDE's real queries as lists,
# its index queries, generated lists), then 32 clients checking answers while
# the engine process is killed, then a first look at throughput.
#
# Here:   bash bench/worker/pack.sh [bench]   (bundle + corpora into bench/build/worker)
# Device: [MODE=bench] bash bench/worker/device_check.sh     carry: bench/build/worker
# MODE=bench runs device_bench.sh instead: all of debian-paths and GCIDE under
# pgbench, GPU worker / gpuidx on the CPU / GIN (CORPORA, BENCH_SECONDS, SWEEP).
# Logs in $OUT (default bench/build/worker/out); the last line is "== END".
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/bench/build/worker/out}
mkdir -p "$out"
trap 'echo "== END (exit $?) $(date +%T)"' EXIT
log() { echo "== $* ($(date +%T))"; }

export PGB=/opt/pgb
mkdir -p $PGB && tar xJf bench/build/worker/pg.tar.xz -C $PGB && . $PGB/env.sh || exit 1
export PATH=/usr/local/cuda/bin:$PATH
log "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/machine.txt"
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a "$out/machine.txt"

log "build"
make -s -j"$(nproc)" with_llvm=no PG_CONFIG="$PGB/usr/lib/postgresql/15/bin/pg_config" all install 2>&1 | grep -vE "^$" | tail -5
ls "$(pg_config --pkglibdir)"/gpuidx*.so || exit 1

# MODE=check (default): GCIDE and device_session.sh; MODE=bench: device_bench.sh on every corpus packed
mode=${MODE:-check}
if [ "$mode" = check ]; then
	# the engine ABI on the GPU first: every result mode against the CPU engine, and memcheck
	log "engine_check: CUDA engine against the CPU engine (all ids, first n, count)"
	make -s -j"$(nproc)" test/gpu/build/engine_check 2>&1 | tail -3
	timeout 300 test/gpu/build/engine_check --engine cuda/build/gpuidx_cuda.so --reference cpu \
		--queries "${CHECK_QUERIES:-100000}" --ranked "${CHECK_RANKED:-5000}" --max-len 200000 2>&1 | tee "$out/engine_check.txt"
	timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 test/gpu/build/engine_check \
		--engine cuda/build/gpuidx_cuda.so --queries 2000 --max-len 3000 > "$out/memcheck.log" 2>&1
	echo "memcheck exit $?"; tail -2 "$out/memcheck.log"
fi
w=/tmp/gpuidx-worker
rm -rf $w && mkdir -p $w
if [ "$mode" = bench ]; then
	session=device_bench.sh
	for f in bench/build/worker/*-docs.tsv.xz; do
		name=$(basename "$f" -docs.tsv.xz)
		xz -T0 -dc "$f" > $w/$name-docs.tsv || exit 1
		cp bench/build/worker/$name-queries.tsv $w/
	done
else
	session=device_session.sh
	xz -T0 -dc bench/build/worker/gcide-docs.tsv.xz > $w/docs.tsv || exit 1
	cp bench/build/worker/gcide-queries.tsv $w/queries.tsv
fi
cp test/worker/*.sql bench/worker/$session $w/
if [ "$(id -u)" = 0 ]; then
	id gpuidx >/dev/null 2>&1 || useradd -m gpuidx
	chown -R gpuidx $w
	runuser -u gpuidx -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
		BENCH_SECONDS="${BENCH_SECONDS:-5}" CORPORA="${CORPORA:-dpaths gcide}" SWEEP="${SWEEP:-1}" \
		bash $w/$session $w 2>&1 | tee "$out/session.log"
else
	bash $w/$session $w 2>&1 | tee "$out/session.log"
fi
cp $w/*.txt $w/*.csv "$out"/ 2>/dev/null
cp $w/data/log "$out"/server.log 2>/dev/null
exit 0
