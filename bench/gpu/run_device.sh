#!/usr/bin/env bash
# One call on the GPU machine (the device tool): build the CUDA engine and the
# tools, check the engine against the CPU reference (compute-sanitizer on
# small inputs, then >= 10 million random queries and every real query of the
# packs), then benchmark.  Logs and results go to $OUT (or bench/build/gpu/out).
#
#   MODE=quick  a short check (for debugging)       MODE=full (default)
#   MODE=bench  the real-query check, the benchmark, then 1M random queries
#   MODE=check  the real-query check, 10M random queries, both paths, long lists; no benchmark
#   SWEEP_RATIOS="8 128"  skip ratios benchmarked at batches of 256 in MODE=bench ("" for none)
#   PACKS="a.pack b.pack"                           default: bench/build/gpu/*.pack
#   bench/build/gpu/old/gpuidx_cuda.so, when there: an earlier engine benchmarked
#   in the same run (gpu_bench_before.md), e.g. built from a worktree of an
#   earlier commit with `make cuda-engine`
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/build/gpu/out}
mode=${MODE:-full}
mkdir -p "$out"
packs=${PACKS:-$(ls bench/build/gpu/*.pack 2>/dev/null | tr '\n' ' ')}
log() { echo "== $* ($(date +%T))"; }
export PATH=/usr/local/cuda/bin:$PATH

log "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/machine.txt"
nvcc --version | tail -1 | tee -a "$out/machine.txt"
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a "$out/machine.txt"

log "build"
make -s -j"$(nproc)" cuda-engine test/gpu/build/engine_check unit-build-test_loader 2>&1 | tail -20 || exit 1
make -s -j"$(nproc)" -C bench/gpu all ../../bench/build/gpu/membw 2>&1 | tail -20 || exit 1

log "loader"
./test/unit/build/test_loader || exit 1

ec=test/gpu/build/engine_check
so=cuda/build/gpuidx_cuda.so
# every step searched, every step merged: both paths of the intersect kernel
both_paths() {
	for ratio in 1 1000000000; do
		log "check: $1 random queries, skip ratio $ratio"
		$ec --engine $so --queries "$1" --max-len 200000 --seed "$ratio" --skip-ratio $ratio 2>&1 | tee -a "$out/check.log"
	done
}

# the full check's random part: 10M queries, both paths forced, long lists; then the end
full_check() {
	log "check: 10 million random queries, lists up to 200k postings"
	$ec --engine $so --queries 10000000 --max-len 200000 --seed 1 2>&1 | tee -a "$out/check.log"
	both_paths 1000000
	log "check: long lists (up to 4M postings)"
	$ec --engine $so --queries 50000 --max-len 4000000 --seed 2 2>&1 | tee -a "$out/check.log"
	log "done"
	exit 0
}

log "compute-sanitizer memcheck (small)"
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 $ec --engine $so --queries 2000 --max-len 3000 \
	> "$out/memcheck.log" 2>&1; echo "memcheck exit $?"; tail -4 "$out/memcheck.log"
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 $ec --engine $so --queries 1000 --max-len 3000 \
	--skip-ratio 1 > "$out/memcheck-search.log" 2>&1; echo "memcheck (every step searched) exit $?"
tail -4 "$out/memcheck-search.log"
log "compute-sanitizer racecheck (small)"
timeout 300 compute-sanitizer --tool racecheck --error-exitcode 1 $ec --engine $so --queries 300 --max-len 2000 \
	> "$out/racecheck.log" 2>&1; echo "racecheck exit $?"; tail -4 "$out/racecheck.log"

if [ "$mode" = quick ]; then
	log "quick check"
	$ec --engine $so --queries 100000 --max-len 300000 $(for p in $packs; do echo --pack $p; done) 2>&1 | tee "$out/check.log"
	both_paths 20000
	log "done"
	exit 0
fi

log "check: every real query of the packs"
$ec --engine $so --queries 0 $(for p in $packs; do echo --pack $p; done) 2>&1 | tee "$out/check.log"

if [ "$mode" = check ]; then
	full_check
fi

log "copy bandwidth"
read d2d h2d < <(bench/build/gpu/membw)
echo "device-to-device ${d2d} GB/s (read + write), pinned host-to-device ${h2d} GB/s" | tee "$out/membw.txt"

log "benchmark"
bench/build/gpu/gpu_bench --engine $so --copy-gbps "$d2d" $(for p in $packs; do echo --pack $p; done) \
	2>&1 | tee "$out/gpu_bench.md"
# the engine before a change, built elsewhere and carried: the same benchmark in the same run
if [ -f bench/build/gpu/old/gpuidx_cuda.so ]; then
	log "benchmark: the engine in bench/build/gpu/old"
	bench/build/gpu/gpu_bench --engine bench/build/gpu/old/gpuidx_cuda.so --copy-gbps "$d2d" \
		$(for p in $packs; do echo --pack $p; done) > "$out/gpu_bench_before.md" 2>&1
	grep -E "GPU \| cached|^\| [0-9]+000000 " "$out/gpu_bench_before.md"
fi

if [ "$mode" = bench ]; then
	# the merge-or-search threshold around its default (32), batches of 256, appended to gpu_bench.md
	for ratio in ${SWEEP_RATIOS-8 128}; do
		log "benchmark: skip ratio $ratio, batches of 256"
		echo "## skip ratio $ratio (default 32), batches of 256" >> "$out/gpu_bench.md"
		bench/build/gpu/gpu_bench --engine $so --copy-gbps "$d2d" --skip-ratio $ratio --batch 256 --no-long-lists \
			$(for p in $packs; do echo --pack $p; done) >> "$out/gpu_bench.md" 2>&1
	done
	log "check: 1 million random queries, lists up to 200k postings"
	$ec --engine $so --queries 1000000 --max-len 200000 --seed 3 2>&1 | tee -a "$out/check.log"
	both_paths 200000
	log "done"
	exit 0
fi

full_check
