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
top=$PWD
pack=$top/bench/build/defaults
out=${OUT:-$pack/out}
mkdir -p "$out"
trap 'echo "== END (exit $?) $(date +%T)"' EXIT
log() { echo "== $* ($(date +%T))"; }
rows=${ROWS:-1000000}

export PGB=/opt/pgb
mkdir -p $PGB && tar xJf "$pack/pg.tar.xz" -C $PGB && . $PGB/env.sh || exit 1
export PATH=/usr/local/cuda/bin:$PATH
log "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/machine.txt"
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a "$out/machine.txt"

log "build"
make -s -j"$(nproc)" with_llvm=no PG_CONFIG="$PGB/usr/lib/postgresql/15/bin/pg_config" all install 2>&1 | grep -vE "^$" | tail -5
ls "$(pg_config --pkglibdir)"/gpuidx*.so || exit 1

w=/tmp/gpuidx-defaults
rm -rf $w && mkdir -p $w/data/debian-paths
xz -T0 -dc "$pack/dpaths2m-docs.tsv.xz" > $w/data/debian-paths/docs.tsv || exit 1
cp "$pack/dpaths-queries.tsv" $w/data/debian-paths/queries.tsv
cp -a bench $w/bench
id gpuidx >/dev/null 2>&1 || useradd -m gpuidx
chown -R gpuidx $w
as_user() { runuser -u gpuidx -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"; }

log "cluster with the GPU worker"
as_user initdb -D $w/pg -A trust > /dev/null || exit 1
cat >> $w/pg/postgresql.conf <<CONF
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
port = 5432
unix_socket_directories = '$w'
max_connections = 120
shared_buffers = 4GB
fsync = off
max_wal_size = 8GB
logging_collector = off
CONF
as_user pg_ctl -D $w/pg -l $w/pg/log start > /dev/null || { cat $w/pg/log; exit 1; }
trap 'as_user pg_ctl -D $w/pg -m fast stop > /dev/null; cp $w/pg/log "$out/server.log"; echo "== END (exit $?) $(date +%T)"' EXIT
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"
as_user $P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$(as_user $P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
as_user $P -xc 'SELECT serving, engine, device, engine_note FROM gpuidx_worker_stats'

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
