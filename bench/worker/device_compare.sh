#!/usr/bin/env bash
# Two builds of gpuidx side by side on the GPU machine, in one device call:
# this tree ("new") and an earlier commit's source ("old", a tarball made
# with git archive), each installed into its own copy of the bundled
# PostgreSQL and serving GCIDE from its own cluster with the GPU worker at its
# default settings.  The same pgbench scripts run against each, in turns
# (new, old, new, old), one cluster at a time: count(*) of the index's real
# queries and their ranked top 10, at 1 and 32 clients.  Throughput, and
# latency p50/p99 from pgbench's per-transaction logs.
#
# Here:   bash bench/worker/pack.sh
#         git archive REV | xz > bench/build/worker/old-src.tar.xz
# Device: bash bench/worker/device_compare.sh       carry: bench/build/worker
# Results in $OUT (default bench/build/worker/out); the last line is "== END".
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
out=${OUT:-$PWD/bench/build/worker/out}
seconds=${BENCH_SECONDS:-10}
mkdir -p "$out"
trap 'echo "== END (exit $?) $(date +%T)"' EXIT
log() { echo "== $* ($(date +%T))"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/machine.txt"
export PATH=/usr/local/cuda/bin:$PATH
for v in new old; do
	mkdir -p /opt/pgb-$v && tar xJf bench/build/worker/pg.tar.xz -C /opt/pgb-$v || exit 1
	PGB=/opt/pgb-$v . /opt/pgb-$v/env.sh
done
rm -rf /tmp/gpx-old && mkdir -p /tmp/gpx-old && xz -dc bench/build/worker/old-src.tar.xz | tar xf - -C /tmp/gpx-old || exit 1
log "build new and old"
make -s -j"$(nproc)" with_llvm=no PG_CONFIG=/opt/pgb-new/usr/lib/postgresql/15/bin/pg_config all install 2>&1 | grep -E "error" | head
(cd /tmp/gpx-old && make -s -j"$(nproc)" with_llvm=no PG_CONFIG=/opt/pgb-old/usr/lib/postgresql/15/bin/pg_config all install 2>&1 | grep -E "error" | head)
ls /opt/pgb-new/usr/lib/postgresql/15/lib/gpuidx* /opt/pgb-old/usr/lib/postgresql/15/lib/gpuidx*

w=/tmp/gpx-compare
rm -rf $w && mkdir -p $w
xz -T0 -dc bench/build/worker/gcide-docs.tsv.xz > $w/docs.tsv || exit 1
cp bench/build/worker/gcide-queries.tsv $w/queries.tsv
id gpuidx >/dev/null 2>&1 || useradd -m gpuidx
chown -R gpuidx $w

# one round: the cluster of build $1 loaded, the four cells measured, the cluster dropped
cat > $w/round.sh <<'ROUND'
set -uo pipefail
v=$1; w=$2; seconds=$3; round=$4
export PATH=/opt/pgb-$v/usr/lib/postgresql/15/bin:$PATH
d=$w/data-$v
rm -rf $d; initdb -D $d -A trust > /dev/null || exit 1
cat >> $d/postgresql.conf <<CONF
shared_preload_libraries = 'gpuidx'
port = 5440
unix_socket_directories = '$w'
max_connections = 120
shared_buffers = 4GB
jit = off
fsync = off
autovacuum = off
CONF
pg_ctl -D $d -l $d/log start > /dev/null || { cat $d/log; exit 1; }
P="psql -h $w -p 5440 -d postgres -X -q -v ON_ERROR_STOP=1"
$P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
$P -c "CREATE TABLE src (id int, body text); COPY src FROM '$w/docs.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
       CREATE TABLE qsrc (id int, terms text); COPY qsrc FROM '$w/queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
       CREATE TABLE docs AS SELECT id, body FROM src;
       CREATE INDEX docs_idx ON docs USING gpuidx (body);
       CREATE TABLE iq AS SELECT row_number() OVER (ORDER BY id)::int AS n, terms FROM qsrc;" -c "VACUUM ANALYZE docs"
ni=$($P -Atc 'SELECT count(*) FROM iq')
cat > $w/count.pgb <<PGB
\set i random(1, $ni)
SELECT quote_literal(terms) AS t FROM iq WHERE n = :i \gset
SELECT count(*) FROM docs WHERE body @@& :t;
PGB
cat > $w/ranked.pgb <<PGB
\set i random(1, $ni)
SELECT quote_literal(terms) AS t FROM iq WHERE n = :i \gset
SELECT id FROM docs ORDER BY body <=> :t LIMIT 10;
PGB
# warm: the device's list cache, the buffers
pgbench -n -c 16 -j 16 -T 5 -f $w/count.pgb -h $w -p 5440 postgres > /dev/null 2>&1
pgbench -n -c 16 -j 16 -T 5 -f $w/ranked.pgb -h $w -p 5440 postgres > /dev/null 2>&1
for shape in count ranked; do
	for c in 1 32; do
		rm -f $w/pgbench_log.*
		tps=$(cd $w && pgbench -n -c $c -j $c -T $seconds -l -f $w/$shape.pgb -h $w -p 5440 postgres 2>&1 |
			awk '/^tps/ {print $3}')
		# per-transaction logs: the latency (us) is the third field
		pct=$(cat $w/pgbench_log.* | awk '{print $3}' | sort -n |
			awk '{a[NR]=$1} END {printf "%.3f %.3f", a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000}')
		echo "$round $v $shape $c $tps $pct"
	done
done
$P -Atc "SELECT 'engine ' || engine || ' on ' || device || ', requests ' || requests || ', fallbacks ' ||
                (fallback_absent + fallback_queue_full + fallback_arena_full + fallback_timeout + fallback_engine_error +
                 fallback_worker_lost + fallback_cancelled + fallback_cache_lost) FROM gpuidx_worker_stats" >&2
pg_ctl -D $d -m fast stop > /dev/null
ROUND
chown gpuidx $w/round.sh

log "rounds: round build shape clients tps p50_ms p99_ms"
echo "round build shape clients tps p50_ms p99_ms" > "$out/compare.txt"
for round in 1 2; do
	for v in new old; do
		runuser -u gpuidx -- env LD_LIBRARY_PATH="/opt/pgb-$v/syslib" bash $w/round.sh $v $w $seconds $round | tee -a "$out/compare.txt"
	done
done
log "summary: new / old"
python3 - "$out/compare.txt" <<'PY'
import sys, collections
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:] if l.strip()]
cells = collections.defaultdict(list)
for r, v, shape, c, tps, p50, p99 in rows:
    cells[(shape, int(c), v)].append((float(tps), float(p50), float(p99)))
print("shape clients | tps new / old (ratio) | p50 ms new / old | p99 ms new / old   (mean of the rounds)")
for shape in ("count", "ranked"):
    for c in (1, 32):
        def mean(v, i):
            xs = [x[i] for x in cells[(shape, c, v)]]
            return sum(xs) / len(xs) if xs else float('nan')
        print(f"{shape} {c:>2} | {mean('new',0):9.0f} / {mean('old',0):9.0f} ({mean('new',0)/mean('old',0):.2f}) | "
              f"{mean('new',1):.3f} / {mean('old',1):.3f} | {mean('new',2):.3f} / {mean('old',2):.3f}")
PY
