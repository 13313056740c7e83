#!/usr/bin/env bash
# The worker benchmark, as the cluster's owner, on the GPU machine: $1 is a
# working folder with CORPUS-docs.tsv and CORPUS-queries.tsv for each corpus
# named in CORPORA (default "dpaths gcide").  Per corpus: the documents in a
# table, a gpuidx index and a GIN index side by side, then pgbench over the
# corpus's real queries (one at random per transaction, a single prepared
# statement that reads the query text in a sub-select), for three shapes:
#   count  SELECT count(*) FROM docs WHERE ...
#   ids100 SELECT id FROM docs WHERE ... LIMIT 100
#   ids    SELECT id FROM docs WHERE ...           (every matching id)
# at 1, 8, 32 and 64 clients, each through gpuidx with the GPU worker
# (gpuidx.device = auto), gpuidx on the CPU (gpuidx.device = cpu) and GIN,
# in the same run, with default planner settings (at 32 clients also the
# GPU worker with the index path forced, enable_seqscan = off: setting
# "forced", for reference).  Then, on the queries with two or more frequent terms
# (df >= 1% of the documents): count(*) at 32 clients in the three modes,
# batched against one launch per query at 64 clients, and sweeps of the
# placement and batching settings.  Latencies are per transaction, from
# pgbench's log.  Results: results.csv (one line a cell), stats.txt (the
# worker's view after each part), explain.txt.
set -uo pipefail
w=$1
cd "$w"
log() { echo "== $* ($(date +%T))"; }
secs=${BENCH_SECONDS:-5}
corpora=${CORPORA:-dpaths gcide}
clients=${BENCH_CLIENTS:-1 8 32 64}

initdb -D "$w/data" -A trust > /dev/null || exit 1
cat >> "$w/data/postgresql.conf" <<CONF
shared_preload_libraries = 'gpuidx'
port = 5432
unix_socket_directories = '$w'
max_connections = 200
shared_buffers = 16GB
work_mem = 64MB
maintenance_work_mem = 1GB
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
jit = off
fsync = off
synchronous_commit = off
max_wal_size = 16GB
autovacuum = off
gpuidx.worker_arena_size = 256MB
CONF
pg_ctl -D "$w/data" -l "$w/data/log" start > /dev/null || { cat "$w/data/log"; exit 1; }
trap 'pg_ctl -D "$w/data" -m fast stop > /dev/null' EXIT
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"
$P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
$P -Atc 'SELECT engine, device FROM gpuidx_worker_stats'
echo "corpus,part,shape,clients,mode,setting,tps,p50_ms,p99_ms,avg_ms,transactions,failed" > results.csv

# one pgbench cell: corpus part shape clients mode setting script [PGOPTIONS]
cell() {
	local corpus=$1 part=$2 shape=$3 c=$4 mode=$5 setting=$6 script=$7 opts=${8:-}
	local j=$(( c < 16 ? c : 16 ))
	rm -f pgbench_log.*
	local r
	r=$(PGOPTIONS="$opts" pgbench -n -M prepared -c "$c" -j "$j" -T "$secs" \
		--log --log-prefix=pgbench_log -f "$script" -h "$w" postgres 2>&1)
	local tps fail
	tps=$(echo "$r" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	fail=$(echo "$r" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	echo "$r" | grep -iE "error|abort" | head -3 >&2
	# column 3 of pgbench's log: the transaction's latency in microseconds
	cat pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="${tps:-0}" -v fail="${fail:-?}" \
		-v pre="$corpus,$part,$shape,$c,$mode,$setting" '
		{ v[NR] = $1; s += $1 }
		END { if (NR == 0) { print pre "," tps ",,,,0," fail; exit }
			  p50 = v[int(0.50 * (NR - 1)) + 1]; p99 = v[int(0.99 * (NR - 1)) + 1];
			  printf "%s,%s,%.3f,%.3f,%.3f,%d,%s\n", pre, tps, p50 / 1000, p99 / 1000, s / NR / 1000, NR, fail }' \
		| tee -a results.csv
}

# the scripts of one corpus: the query text by its number, from qs (every query) or qh (the heavy ones)
scripts() {
	local n=$1 nh=$2
	for set in all heavy; do
		local pick="(SELECT q FROM qs WHERE qid = :i)" max=$n
		[ $set = heavy ] && pick="(SELECT q FROM qh WHERE n = :i)" max=$nh
		local gpx="body @@& $pick"
		local gin="to_tsvector('english', body) @@ plainto_tsquery('english', $pick)"
		for m in gpx gin; do
			local cond=$gpx
			[ $m = gin ] && cond=$gin
			printf '\\set i random(1, %s)\nSELECT count(*) FROM docs WHERE %s;\n' "$max" "$cond" > "${m}_${set}_count.pgb"
			printf '\\set i random(1, %s)\nSELECT id FROM docs WHERE %s LIMIT 100;\n' "$max" "$cond" > "${m}_${set}_ids100.pgb"
			printf '\\set i random(1, %s)\nSELECT id FROM docs WHERE %s;\n' "$max" "$cond" > "${m}_${set}_ids.pgb"
		done
	done
}

mode_opts() {
	case $1 in
		gpu) echo "-c gpuidx.device=auto" ;;
		cpu) echo "-c gpuidx.device=cpu" ;;
		*) echo "" ;;
	esac
}

stats() {
	echo "-- $*" >> stats.txt
	$P -xc 'SELECT * FROM gpuidx_worker_stats' >> stats.txt
	$P -c 'SELECT gpuidx_worker_stats_reset()' > /dev/null
}

for corpus in $corpora; do
	log "$corpus: load"
	$P -c "DROP TABLE IF EXISTS docs, qs, qh, lexdf"
	$P -c "CREATE UNLOGGED TABLE docs (id int, body text); CREATE TABLE qs (qid int PRIMARY KEY, q text)"
	split -n l/16 "$corpus-docs.tsv" part.
	for f in part.*; do
		$P -c "COPY docs FROM '$w/$f' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')" &
	done
	wait
	rm -f part.*
	$P -c "COPY qs FROM '$w/$corpus-queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')"
	ndocs=$($P -Atc "SELECT count(*) FROM docs")
	nq=$($P -Atc "SELECT count(*) FROM qs")
	echo "$corpus: $ndocs documents, $nq queries"
	log "$corpus: indexes, side by side"
	$P -c "\timing on" -c "CREATE INDEX docs_gpx ON docs USING gpuidx (body)" | sed "s/^/$corpus gpuidx build: /" &
	$P -c "\timing on" -c "CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body)) WITH (fastupdate = off)" | sed "s/^/$corpus GIN build: /" &
	wait
	$P -c "VACUUM ANALYZE docs"
	$P -Atc "SELECT '$corpus size ' || relname || ' ' || pg_size_pretty(pg_relation_size(oid)) FROM pg_class WHERE relname IN ('docs', 'docs_gpx', 'docs_gin')"

	# frequent terms: df >= 1% of the documents, counted through the index
	$P -c "SET gpuidx.device = cpu; CREATE TABLE lexdf AS SELECT l, (SELECT count(*) FROM docs WHERE body @@& l) AS df
	       FROM (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', q))) AS l FROM qs) x"
	$P -c "CREATE TABLE qh AS SELECT row_number() OVER (ORDER BY qid) AS n, qid, q FROM qs
	       WHERE (SELECT count(*) FROM lexdf WHERE l = ANY (tsvector_to_array(to_tsvector('english', q)))
	              AND df >= $ndocs / 100) >= 2; CREATE UNIQUE INDEX ON qh (n)"
	nh=$($P -Atc "SELECT count(*) FROM qh")
	echo "$corpus: $nh queries with two or more terms in >= 1% of the documents"
	scripts "$nq" "$nh"

	log "$corpus: warm-up (shared buffers, the GPU list cache)"
	for m in gpu cpu; do cell "$corpus" warmup count 16 $m default gpx_all_count.pgb "$(mode_opts $m)" > /dev/null; done
	cell "$corpus" warmup count 16 gin default gin_all_count.pgb > /dev/null
	stats "$corpus warm-up"

	log "$corpus: every query, three shapes, $clients clients, ${secs} s a cell"
	for shape in count ids100 ids; do
		for c in $clients; do
			for m in gpu cpu gin; do
				s=gpx_all_$shape.pgb
				[ $m = gin ] && s=gin_all_$shape.pgb
				cell "$corpus" all $shape "$c" $m default $s "$(mode_opts $m)"
			done
			# the index path forced, for reference (setting "forced"): one client count
			[ "$c" = 32 ] && cell "$corpus" all $shape "$c" gpu forced gpx_all_$shape.pgb "$(mode_opts gpu) -c enable_seqscan=off"
		done
	done
	stats "$corpus every query"

	if [ "$nh" -gt 0 ]; then
		log "$corpus: queries with two or more frequent terms"
		for m in gpu cpu gin; do
			s=gpx_heavy_count.pgb
			[ $m = gin ] && s=gin_heavy_count.pgb
			cell "$corpus" heavy count 32 $m default $s "$(mode_opts $m)"
		done
		stats "$corpus heavy, 32 clients"
		log "$corpus: batched against one launch per query, 64 clients"
		for b in 1 1024; do
			$P -c "ALTER SYSTEM SET gpuidx.batch_max_requests = $b" -c "SELECT pg_reload_conf()" > /dev/null
			sleep 1
			cell "$corpus" batching count 64 gpu "batch_max_requests=$b" gpx_heavy_count.pgb "$(mode_opts gpu)"
			stats "$corpus batch_max_requests=$b"
		done
		$P -c "ALTER SYSTEM RESET gpuidx.batch_max_requests" -c "SELECT pg_reload_conf()" > /dev/null
	fi

	if [ "${SWEEP:-1}" = 1 ]; then
		log "$corpus: settings, 32 clients, count(*) of every query"
		for mp in 0 4096 16384 65536 262144; do
			cell "$corpus" sweep count 32 gpu "gpu_min_postings=$mp" gpx_all_count.pgb "$(mode_opts gpu) -c gpuidx.gpu_min_postings=$mp"
		done
		for bw in 0 50 200 1000; do
			$P -c "ALTER SYSTEM SET gpuidx.batch_window = $bw" -c "SELECT pg_reload_conf()" > /dev/null
			sleep 1
			cell "$corpus" sweep count 32 gpu "batch_window=$bw" gpx_all_count.pgb "$(mode_opts gpu)"
		done
		$P -c "ALTER SYSTEM RESET gpuidx.batch_window" -c "SELECT pg_reload_conf()" > /dev/null
		stats "$corpus sweeps"
	fi

	{
		echo "-- $corpus: the most frequent query's count through the GPU worker"
		q=$($P -Atc "SELECT q FROM qs ORDER BY (SELECT count(*) FROM lexdf WHERE l = ANY (tsvector_to_array(to_tsvector('english', q))) AND df >= $ndocs / 100) DESC, qid LIMIT 1")
		$P -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM docs WHERE body @@& '$q'"
		$P -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM docs WHERE body @@& '$q' LIMIT 100"
		$P -c "SET gpuidx.device = cpu" -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM docs WHERE body @@& '$q'"
		$P -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', '$q')"
	} >> explain.txt 2>&1
done
grep -E "ERROR|FATAL|PANIC" "$w/data/log" | sort | uniq -c | sort -rn | head
log "bench done"
