#!/usr/bin/env bash
# Runs the libFuzzer targets of test/fuzz for SECONDS each (FUZZ_JOBS at a
# time) over their growing corpus and seeds, then prints one line per target
# (executions, coverage, crashes); exits non-zero when any target crashed.
# Usage: test/fuzz/run.sh SECONDS TARGET...   (make fuzz / make fuzz-ci call it)
set -uo pipefail
cd "$(dirname "$0")"
build=build
seconds=$1; shift
jobs=${FUZZ_JOBS:-1}
# per input; a hang past it is reported as a crash (timeout-*)
timeout=${FUZZ_TIMEOUT:-20}
# stacks for UBSan reports too, so that a finding names its function
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# -max_len per target; gen_seeds.c keeps its seeds below these
max_len() {
    case $1 in
      fuzz_list_open) echo 32768 ;;
      fuzz_list_ops) echo 65536 ;;
      fuzz_index_pages) echo 8192 ;;
      *) echo 16384 ;;
    esac
}
# value profiles help with the structure checks' exact comparisons (they
# need the comparison tracing that only fuzz_list_open is built with)
extra_flags() {
    case $1 in
      fuzz_list_open) echo -use_value_profile=1 ;;
    esac
}

run_one() {
    local t=$1 seeds=$build/seeds/${1#fuzz_}
    mkdir -p "$build/corpus/$t" "$build/artifacts/$t" "$build/logs"
    local before; before=$(ls "$build/artifacts/$t" | wc -l)
    # -jobs/-workers stay 1: FUZZ_JOBS runs whole targets side by side instead
    "$build/$t" -max_total_time="$seconds" -print_final_stats=1 -timeout="$timeout" \
        -rss_limit_mb=2048 -max_len="$(max_len "$t")" $(extra_flags "$t") \
        -artifact_prefix="$build/artifacts/$t/" \
        "$build/corpus/$t" "$seeds" > "$build/logs/$t.log" 2>&1
    local rc=$?
    local log=$build/logs/$t.log
    local execs; execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    local rate; rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    local cov ft corp
    cov=$(grep -o ' cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    ft=$(grep -o ' ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    corp=$(grep -o ' corp: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    local after; after=$(ls "$build/artifacts/$t" | wc -l)
    printf '%-18s %6ss  execs %-10s exec/s %-7s cov %-6s ft %-7s corpus %-6s new artifacts %s  rc %s\n' \
        "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
        "$((after - before))" "$rc" > "$build/logs/$t.summary"
    if [ "$rc" -ne 0 ]; then
        echo "--- $t failed (rc $rc); end of $log:" >> "$build/logs/$t.summary"
        grep -E 'ERROR|SUMMARY|runtime error|fuzz check failed|Test unit written' "$log" | head -20 >> "$build/logs/$t.summary"
    fi
    return "$rc"
}

status=0
pids=()
names=()
for t in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_one "$t" &
    pids+=($!)
    names+=("$t")
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
done
echo "fuzz results ($seconds s per target, logs in test/fuzz/$build/logs, crashes in test/fuzz/$build/artifacts):"
for t in "${names[@]}"; do cat "$build/logs/$t.summary"; done
exit $status
