#!/usr/bin/env bash
# The part of device_check.sh that runs as the cluster's owner: $1 is its
# working folder (docs.tsv, queries.tsv, test/worker's SQL).
set -uo pipefail
w=$1
cd $w
log() { echo "== $* ($(date +%T))"; }
initdb -D $w/data -A trust > /dev/null || exit 1
cat >> $w/data/postgresql.conf <<CONF
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
gpuidx.gpu_min_postings = 0
port = 5432
unix_socket_directories = '$w'
max_connections = 120
shared_buffers = 4GB
jit = off
fsync = off
max_wal_size = 8GB
autovacuum = off
logging_collector = off
CONF
pg_ctl -D $w/data -l $w/data/log start > /dev/null || { cat $w/data/log; exit 1; }
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"
trap 'pg_ctl -D $w/data -m fast stop > /dev/null' EXIT
$P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
$P -xc 'SELECT serving, engine, device, engine_pid, engine_note FROM gpuidx_worker_stats'
grep "gpuidx engine" $w/data/log
# the engine process: the exec'd program, its parent the supervisor, none of PostgreSQL's shared memory
epid=$($P -Atc 'SELECT engine_pid FROM gpuidx_worker_stats')
echo "engine process $epid: exe $(readlink /proc/$epid/exe), parent $(awk '/^PPid/{print $2}' /proc/$epid/status)"
echo "its shared mappings:"; awk '$2 ~ /s$/' /proc/$epid/maps | awk '{print $2, $6, $7, $8}' | sort | uniq -c
# PostgreSQL's shared memory: the postmaster's shared mappings (the GPU driver maps its own /dev/zero too)
pm=$(head -1 $w/data/postmaster.pid)
shared=$(awk '$2 ~ /s$/ && $5 != 0 {print $5}' /proc/$pm/maps | sort -u)
found=$(for ino in $shared; do awk -v i=$ino '$2 ~ /s$/ && $5 == i' /proc/$epid/maps; done | grep -v 'memfd:gpuidx queue')
if [ -n "$found" ]; then echo "CHECK FAILED: the engine maps PostgreSQL's shared memory: $found"; else echo "none of the postmaster's shared mappings (inodes $(echo $shared | tr '\n' ' ')) but the queue in the engine process"; fi

log "load GCIDE, build the lists and the index"
$P -f lists.sql > /dev/null
$P -c "CREATE TABLE src (id int, body text); COPY src FROM '$w/docs.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
       CREATE TABLE qsrc (id int, terms text); COPY qsrc FROM '$w/queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');"
$P -f gcide.sql > /dev/null || exit 1
$P -Atc "SELECT 'queries ' || (SELECT count(*) FROM queries) || ', index queries ' || (SELECT count(*) FROM iq) || ', docs ' || (SELECT count(*) FROM docs)"

log "check: every real query's lists, every index query, 5000 generated triples (worker = CPU)"
$P -Atc "SELECT 'list queries differing: ' || count(*) FROM queries WHERE check_query(n) IS NULL" || echo "CHECK FAILED"
$P -Atc "SELECT 'index queries differing: ' || count(*) FROM iq WHERE check_index(n) IS NULL" || echo "CHECK FAILED"
$P -Atc "SELECT 'generated differing: ' || count(*) FROM (SELECT 1 + (random() * 122)::int a, 1 + (random() * 122)::int b, 1 + (random() * 122)::int c FROM generate_series(1, 5000)) g WHERE check_generated(a, b, c) IS NULL" || echo "CHECK FAILED"
$P -Atc "SELECT 'index vs seq scan differing (40 queries): ' || count(*) FROM iq WHERE n % 25 = 0 AND count_by(terms, 'seq') <> count_by(terms, 'index')" || echo "CHECK FAILED"
$P -c "VACUUM docs"
$P -Atc "SELECT 'index counts (count mode) differing: ' || count(*) FROM iq WHERE check_count(n) IS NULL" || echo "CHECK FAILED"
$P -Atc "SELECT 'first 7 rows under LIMIT differing: ' || count(*) FROM iq WHERE check_limit(n, 7) IS NULL" || echo "CHECK FAILED"
$P -c "DELETE FROM docs WHERE id % 7 = 0"
$P -Atc "SELECT 'after deletes, counts and first rows differing: ' || count(*) FROM iq WHERE n % 2 = 0 AND (check_count(n) IS NULL OR check_limit(n, 7) IS NULL)" || echo "CHECK FAILED"
$P -c "VACUUM docs"
$P -Atc "SELECT 'after VACUUM, counts and first rows differing: ' || count(*) FROM iq WHERE n % 2 = 1 AND (check_count(n) IS NULL OR check_limit(n, 7) IS NULL)" || echo "CHECK FAILED"
$P -Atc "SELECT 'ranked top 1, 10, 100 (rows, order, scores) differing: ' || count(*) FROM iq WHERE check_ranked(n, 1) IS NULL OR check_ranked(n, 10) IS NULL OR check_ranked(n, 100) IS NULL" || echo "CHECK FAILED"
$P -xc 'SELECT * FROM gpuidx_worker_stats'

nq=$($P -Atc 'SELECT count(*) FROM queries')
ni=$($P -Atc 'SELECT count(*) FROM iq')
cat > check.pgb <<PGB
\set a random(1, 123)
\set b random(1, 123)
\set c random(1, 123)
SELECT check_generated(:a, :b, :c);
\set q random(1, $nq)
SELECT check_query(:q);
\set i random(1, $ni)
SELECT check_index(:i);
PGB
log "32 clients checking answers, 20 s"
pgbench -n -c 32 -j 16 -T 20 -f check.pgb -h $w postgres 2>&1 | grep -E "processed|failed|tps|abort|error"
log "the same, the engine process SIGKILLed 4 times"
pgbench -n -c 32 -j 16 -T 20 -f check.pgb -h $w postgres > kill.txt 2>&1 &
for k in 1 2 3 4; do sleep 3.5; pid=$($P -Atc 'SELECT engine_pid FROM gpuidx_worker_stats'); [ -n "$pid" ] && kill -9 $pid && echo "killed $pid"; done
wait
grep -E "processed|failed|tps|abort|error" kill.txt
for i in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
$P -xc 'SELECT * FROM gpuidx_worker_stats'

log "the same, the engine process stopped (SIGSTOP): replaced within gpuidx.engine_stall_timeout (10 s)"
pgbench -n -c 32 -j 16 -T 20 -f check.pgb -h $w postgres > stall.txt 2>&1 &
sleep 2; pid=$($P -Atc 'SELECT engine_pid FROM gpuidx_worker_stats'); kill -STOP $pid; t0=$(date +%s.%N)
for i in $(seq 300); do n=$($P -Atc "SELECT serving AND engine_pid <> $pid FROM gpuidx_worker_stats"); [ "$n" = t ] && break; sleep 0.1; done
echo "stopped engine $pid replaced after $(awk "BEGIN{print $(date +%s.%N) - $t0}") s"
wait
grep -E "processed|failed|tps|abort|error" stall.txt
$P -xc 'SELECT engine, engine_starts, engine_stalls, fallback_timeout, fallback_worker_lost, fallback_bad_answer FROM gpuidx_worker_stats'

log "first look at throughput: count(*) of index queries, 32 clients, 15 s each"
cat > count.pgb <<PGB
\set i random(1, $ni)
SELECT quote_literal(terms) AS t FROM iq WHERE n = :i \gset
SELECT count(*) FROM docs WHERE body @@& :t;
PGB
for dev in worker cpu; do
	for mp in 0 16384; do
		echo "device=$dev gpu_min_postings=$mp"
		PGOPTIONS="-c gpuidx.device=$dev -c gpuidx.gpu_min_postings=$mp" \
			pgbench -n -c 32 -j 16 -T 15 -f count.pgb -h $w postgres 2>&1 | grep -E "tps|latency average|failed"
	done
done
$P -xc 'SELECT * FROM gpuidx_worker_stats'
grep -E "gpuidx engine|ERROR|FATAL|PANIC" $w/data/log | sort | uniq -c | sort -rn | head -20
log "session done"
