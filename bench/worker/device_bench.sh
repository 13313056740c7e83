#!/usr/bin/env bash
# MODE=bench of device_check.sh, as the cluster's owner: all of debian-paths
# ($1/docs.tsv, $1/queries.tsv) under a gpuidx index and a GIN index, then
# pgbench at 1, 8, 32 and 64 clients, each transaction one of the corpus's
# 10,000 real queries at random: count(*) and the first 100 ids, through
# gpuidx with the GPU worker (gpuidx.device = auto), gpuidx on the CPU
# (gpuidx.device = cpu) and GIN, in the same run.
set -uo pipefail
w=$1
cd $w
log() { echo "== $* ($(date +%T))"; }
secs=${BENCH_SECONDS:-10}
initdb -D $w/data -A trust > /dev/null || exit 1
cat >> $w/data/postgresql.conf <<CONF
shared_preload_libraries = 'gpuidx'
port = 5432
unix_socket_directories = '$w'
max_connections = 200
shared_buffers = 16GB
work_mem = 64MB
maintenance_work_mem = 1GB
max_parallel_workers_per_gather = 0
jit = off
fsync = off
synchronous_commit = off
max_wal_size = 16GB
autovacuum = off
CONF
pg_ctl -D $w/data -l $w/data/log start > /dev/null || { cat $w/data/log; exit 1; }
trap 'pg_ctl -D $w/data -m fast stop > /dev/null' EXIT
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"
$P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
$P -Atc 'SELECT engine, device FROM gpuidx_worker_stats'

log "load"
$P -c "CREATE UNLOGGED TABLE docs (id int, body text); CREATE TABLE qs (qid int, q text)"
split -n l/16 docs.tsv part.
for f in part.*; do
	$P -c "COPY docs FROM '$w/$f' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')" &
done
wait
$P -c "COPY qs FROM '$w/queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')"
$P -Atc "SELECT 'docs ' || count(*) FROM docs"
log "indexes (side by side)"
$P -c "\timing on" -c "CREATE INDEX docs_gpx ON docs USING gpuidx (body)" &
$P -c "\timing on" -c "CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body)) WITH (fastupdate = off)" &
wait
$P -c "VACUUM ANALYZE docs"
$P -Atc "SELECT relname || ' ' || pg_size_pretty(pg_relation_size(oid)) FROM pg_class WHERE relname IN ('docs', 'docs_gpx', 'docs_gin')"

cat > gpx_count.pgb <<PGB
\set i random(1, 10000)
SELECT quote_literal(q) AS t FROM qs WHERE qid = :i \gset
SELECT count(*) FROM docs WHERE body @@& :t;
PGB
cat > gin_count.pgb <<PGB
\set i random(1, 10000)
SELECT quote_literal(q) AS t FROM qs WHERE qid = :i \gset
SELECT count(*) FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', :t);
PGB
sed 's/SELECT count(\*) FROM docs WHERE \(.*\);/SELECT id FROM docs WHERE \1 LIMIT 100;/' gpx_count.pgb > gpx_ids.pgb
sed 's/SELECT count(\*) FROM docs WHERE \(.*\);/SELECT id FROM docs WHERE \1 LIMIT 100;/' gin_count.pgb > gin_ids.pgb

log "pgbench, ${secs} s each"
echo "| shape | clients | gpuidx GPU worker tps | gpuidx CPU tps | GIN tps | GPU / GIN | GPU / CPU | latency ms GPU / CPU / GIN |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for shape in count ids; do
	for c in 1 8 32 64; do
		j=$(( c < 16 ? c : 16 ))
		declare -A tps lat
		for mode in gpu cpu gin; do
			f=gpx_$shape.pgb; opt="-c gpuidx.device=auto"
			[ $mode = cpu ] && opt="-c gpuidx.device=cpu"
			[ $mode = gin ] && f=gin_$shape.pgb
			r=$(PGOPTIONS="$opt -c enable_seqscan=off" pgbench -n -c $c -j $j -T $secs -f $f -h $w postgres 2>&1)
			tps[$mode]=$(echo "$r" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
			lat[$mode]=$(echo "$r" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
			echo "$r" | grep -E "failed|abort" | grep -v "failed transactions: 0 " >&2
		done
		echo "| $shape | $c | ${tps[gpu]} | ${tps[cpu]} | ${tps[gin]} | $(awk "BEGIN {printf \"%.2f\", ${tps[gpu]:-0} / (${tps[gin]:-0} + 1e-9)}") | $(awk "BEGIN {printf \"%.2f\", ${tps[gpu]:-0} / (${tps[cpu]:-0} + 1e-9)}") | ${lat[gpu]} / ${lat[cpu]} / ${lat[gin]} |"
	done
done
$P -xc 'SELECT * FROM gpuidx_worker_stats'
$P -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM docs WHERE body @@& 'usr share doc'"
grep -E "ERROR|FATAL|PANIC" $w/data/log | sort | uniq -c | sort -rn | head
log "bench done"
