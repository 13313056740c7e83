#!/usr/bin/env bash
# rank_bench on the GPU machine (the device tool), carrying bench/build/tsquery
# (the bundled PostgreSQL, for PGXS, and all of debian-paths with its queries):
#
#   bash bench/gpu/rank_device.sh                 build, then rank_bench
#   PROFILE=1 bash bench/gpu/rank_device.sh       and each kernel's time under ncu
#   CHECK=1 bash bench/gpu/rank_device.sh         and engine_check (CUDA against CPU, memcheck)
#
# BASELINE_SRC=DIR also measures the engine built from another tree there.
# RB_ARGS pass to rank_bench, split on spaces, so lists take commas
# (RB_ARGS="--nqueries 500 --batches 1,10"; default: 1,000 queries, batches of
# 1, 10 and 32, any term and every term); NCU_ARGS to the profiled run.
# Results go to $OUT.
set -u
cd "$(dirname "$0")/../.."
trap 'echo "== END (exit $?) $(date +%T)"' EXIT
log() { echo "== $* ($(date +%T))"; }
pack=${PACK:-bench/build/tsquery}
out=${OUT:-/tmp/rank-bench}
mkdir -p "$out" /opt/pgb
tar xJf $pack/pg.tar.xz -C /opt/pgb && . /opt/pgb/env.sh || exit 1
export PATH=/usr/local/cuda/bin:$PATH
log "build"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
make -s -j"$(nproc)" with_llvm=no cuda/build/gpuidx_cuda.so 2>&1 | tail -5
make -s -C bench/gpu all 2>&1 | tail -3
[ -x bench/build/gpu/rank_bench ] && [ -f cuda/build/gpuidx_cuda.so ] || exit 1
docs=/tmp/rank-bench-docs.txt
[ -s $docs ] || xz -T0 -dc $pack/dpaths-paths.xz > $docs
rb_data="--docs $docs --queries $pack/dpaths-queries.tsv"
rb="bench/build/gpu/rank_bench --engine cuda/build/gpuidx_cuda.so $rb_data"
# shellcheck disable=SC2086
bench_engine() {	# ENGINE REPORT: rank_bench on ENGINE with RB_ARGS, the report to $out/REPORT
	bench/build/gpu/rank_bench --engine "$1" $rb_data ${RB_ARGS:---nqueries 1000 --batches 1,10,32 --reps 3} |
		tee "$out/$2"
}
if [ -n "${BASELINE_SRC:-}" ]; then
	# the engine of another tree (e.g. git archive REV cuda include src Makefile Makefile.cuda ...), in the same run
	log "build the baseline engine from $BASELINE_SRC"
	make -s -C "$BASELINE_SRC" -j"$(nproc)" with_llvm=no cuda/build/gpuidx_cuda.so 2>&1 | tail -3
	log "rank_bench, the baseline engine"
	bench_engine "$BASELINE_SRC/cuda/build/gpuidx_cuda.so" rank-bench-baseline.md
fi
log "rank_bench"
bench_engine cuda/build/gpuidx_cuda.so rank-bench.md
if [ "${PROFILE:-0}" = 1 ]; then
	log "ncu: each kernel's time, batches of 10"
	timeout 400 ncu --clock-control none --cache-control none --print-summary per-kernel \
		--metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors.sum,dram__bytes.sum \
		${NCU_ARGS:-} $rb --nqueries 200 --batches 10 --reps 1 --shapes any > "$out/ncu.txt" 2>&1
	echo "ncu exit $?"
	# each kernel's launches and total time
	python3 - "$out/ncu.txt" <<'PY'
import re, sys
cur, agg = None, {}
for line in open(sys.argv[1]):
    m = re.match(r'  (\w+)\(.*Invocations (\d+)', line)
    if m:
        cur, n = m.group(1), int(m.group(2)); agg.setdefault(cur, [0, 0.0]); agg[cur][0] += n; continue
    f = line.split()
    if cur and f and f[0] == 'gpu__time_duration.sum':
        avg = float(f[-1].replace(',', '')) * {'ms': 1000, 'us': 1, 'ns': 0.001}[f[1]]
        agg[cur][1] += avg * n
for k, (n, t) in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"{k:28s} launches {n:5d}  total {t:9.1f} us  mean {t / n:7.1f} us")
PY
fi
if [ "${CHECK:-0}" = 1 ]; then
	log "engine_check: ranked queries, the CUDA engine against the CPU engine"
	make -s -j"$(nproc)" with_llvm=no test/gpu/build/engine_check 2>&1 | tail -3
	ec=test/gpu/build/engine_check
	timeout 200 $ec --engine cuda/build/gpuidx_cuda.so --reference cpu --queries 0 --ranked 20000 --max-len 200000 2>&1 | tail -2
	timeout 200 $ec --engine cuda/build/gpuidx_cuda.so --reference cpu --queries 0 --ranked 1000 --max-len 2000000 --seed 7 2>&1 | tail -2
	timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 $ec --engine cuda/build/gpuidx_cuda.so \
		--queries 0 --ranked 300 --max-len 5000 > "$out/memcheck.log" 2>&1; echo "memcheck exit $?"; tail -2 "$out/memcheck.log"
fi
if [ -n "${DETAIL:-}" ]; then
	log "ncu: the sections of kernel $DETAIL"
	timeout 300 ncu --clock-control none --cache-control none -k "$DETAIL" --launch-skip ${SKIP:-30} --launch-count 2 \
		--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
		--section LaunchStats $rb --nqueries 200 --batches 10 --reps 1 --shapes any > "$out/ncu-detail.txt" 2>&1
	echo "ncu exit $?"; grep -vE "^==PROF==|^\s*$|----" "$out/ncu-detail.txt" | grep -vE "^\|" | tail -120
fi
if [ -n "${SASS:-}" ]; then
	log "ncu: kernel $SASS instruction by instruction (stall samples)"
	timeout 300 ncu --clock-control none --cache-control none -k "$SASS" --launch-skip ${SKIP:-30} --launch-count 1 \
		--section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
		$rb --nqueries 200 --batches 10 --reps 1 --shapes any > "$out/ncu-sass.csv" 2> "$out/ncu-sass.err"
	echo "ncu exit $?"; head -c 600 "$out/ncu-sass.csv"; tail -3 "$out/ncu-sass.err"
fi
