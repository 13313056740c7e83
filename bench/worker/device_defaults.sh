#!/usr/bin/env bash
# What users run, on the GPU machine in one device call: prepared statements
# under default planner settings (bench/plans) and reads while rows arrive
# (bench/writes), gpuidx with the GPU worker, gpuidx on the CPU and GIN, on
# the first rows of debian-paths.
#
# Here:   bash bench/worker/pack.sh defaults     (bundle + corpus into bench/build/defaults)
# Device: bash bench/worker/device_defaults.sh   carry: bench/build/defaults
# Settings: PLANS (1; 0 skips bench/plans), ROWS (1000000), PLAN_TXNS (1000), PLAN_REPS (2), MIX_SECS (10), COPY_ROWS (300000).
# Logs and results in $OUT (default bench/build/defaults/out); the last line is "== END".
set -uo pipefail
cd "$(dirname "$0")/../.."
pack=$PWD/bench/build/defaults
out=${OUT:-$pack/out}
mkdir -p "$out"
rows=${ROWS:-1000000}
w=/tmp/gpuidx-defaults
. bench/worker/device_cluster.sh

mkdir -p $w/data/debian-paths
xz -T0 -dc "$pack/dpaths2m-docs.tsv.xz" > $w/data/debian-paths/docs.tsv || exit 1
cp "$pack/dpaths-queries.tsv" $w/data/debian-paths/queries.tsv
chown -R gpuidx $w/data

[ "${PLANS:-1}" = 1 ] && log "plans: every shape, custom / generic / auto plans, forced, GIN ($rows rows)"
[ "${PLANS:-1}" = 1 ] && as_user env PGHOST=$w PGPORT=5432 CLIENTS=1 TXNS=${PLAN_TXNS:-1000} REPS=${PLAN_REPS:-2} bash $w/bench/plans/run.sh $w/data/debian-paths "$rows" 2>&1 | tee "$out/plans.md"

log "writes: read-only, 90/10, 50/50 at 32 clients, GPU worker / CPU / GIN, and COPY"
as_user env PGHOST=$w PGPORT=5432 BIN="$PGB/usr/lib/postgresql/15/bin" GPUIDX_DATA=$w/data CORPUS=debian-paths \
	ROWS="$rows" CLIENTS=32 SECS=${MIX_SECS:-10} MODES="gpu cpu" COPY_ROWS=${COPY_ROWS:-300000} \
	LABEL=h100 OUT=$w/writes WORK=$w/writes-work bash $w/bench/writes/run.sh 2>&1 | tee "$out/writes.log"
python3 $w/bench/writes/report.py $w/writes && cat $w/writes/summary.md
mkdir -p "$out/writes" && cp $w/writes/results.csv $w/writes/summary.md $w/writes/reads.svg "$out/writes/"
as_user $P -xc 'SELECT * FROM gpuidx_worker_stats'
grep -E "gpuidx engine|ERROR|FATAL|PANIC" $w/pg/log | sort | uniq -c | sort -rn | head -20
log "done"
