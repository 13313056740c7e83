#!/usr/bin/env bash
# The rank benchmark's cluster, as its owner (bench/rank/run.sh copies this
# file into the working folder $1, with CORPUS-docs.tsv and
# CORPUS-queries.tsv for each corpus of $CORPORA, and sets the variables).
# Per corpus: the table, GIN, RUM and gpuidx built one after the other, the
# queries, then a pgbench cell per method, shape and client count.
# Writes results.csv (one line a cell), builds.csv, explain.txt, and adds
# the server's version and settings to info.txt.
set -euo pipefail
w=$1
cd "$w"
log() { echo "== $* ($(date +%T))" >&2; }
bindir=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
export PATH="$bindir:$PATH"
nproc=$(nproc)

initdb -D "$w/data" -A trust > /dev/null
cat >> "$w/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$w'
max_connections = 200
shared_buffers = $SHARED_BUFFERS
work_mem = 64MB
maintenance_work_mem = 1GB
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
jit = off
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 16GB
autovacuum = off
CONF
if [ "$GPU" = on ]; then
	echo "shared_preload_libraries = 'gpuidx'" >> "$w/data/postgresql.conf"
fi
pg_ctl -D "$w/data" -l "$w/data/log" -w start > /dev/null || { cat "$w/data/log" >&2; exit 1; }
trap 'pg_ctl -D "$w/data" -m fast stop > /dev/null' EXIT
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"

# RUM and gpuidx both define <=> (tsvector, tsquery): gpuidx in a schema of
# its own (docs/MIGRATING.md), after public in the search_path, so that
# RUM's query means RUM's <=> and gpuidx's (text, text) is found
$P -c 'CREATE EXTENSION rum'
if [ "$BASELINE_ONLY" = 0 ]; then
	$P -c 'CREATE SCHEMA gpuidx' -c 'CREATE EXTENSION gpuidx SCHEMA gpuidx' \
		-c 'ALTER DATABASE postgres SET search_path = "$user", public, gpuidx'
	$P -Atc "SELECT '<=>(text,text)'::regoperator" > /dev/null ||
		{ echo "session.sh: this gpuidx has no <=> operator (ranking): --baseline-only runs without it" >&2; exit 1; }
fi
if [ "$GPU" = on ]; then
	for _ in $(seq 30); do [ "$($P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
	echo "gpuidx worker: $($P -Atc "SELECT engine || ' ' || coalesce(device, '') FROM gpuidx_worker_stats")" >> info.txt
fi
{
	echo "server: $($P -Atc 'SELECT version()')"
	echo "postgresql.conf: $($P -Atc "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
		WHERE name IN ('shared_buffers', 'work_mem', 'maintenance_work_mem', 'max_parallel_workers_per_gather',
					   'max_parallel_maintenance_workers', 'jit', 'fsync', 'synchronous_commit', 'random_page_cost',
					   'effective_cache_size', 'shared_preload_libraries')")"
} >> info.txt
echo "corpus,method,shape,clients,tps,p50_ms,p99_ms,avg_ms,transactions,failed" > results.csv
echo "corpus,documents,queries,index,build_s,size_bytes" > builds.csv
echo "corpus,method,shape,clients,requests,batches,requests_per_batch,device_ms,host_ms,wait_p50_us,wait_p99_us,fallbacks" > worker.csv
: > explain.txt

# one pgbench cell, as a line of results.csv: corpus method shape clients script [PGOPTIONS];
# latencies from pgbench's log
cell() {
	local corpus=$1 method=$2 shape=$3 c=$4 script=$5 opts=${6:-}
	local j=$(( c < nproc ? c : nproc ))
	rm -f pgbench_log.*
	local r tps fail
	r=$(PGOPTIONS="$opts" pgbench -n -M prepared -c "$c" -j "$j" -T "$SECONDS_PER_CELL" --random-seed=1 \
		--log --log-prefix=pgbench_log -f "$script" -h "$w" postgres 2>&1) || true
	tps=$(echo "$r" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	fail=$(echo "$r" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	echo "$r" | grep -iE "error|abort" | head -3 >&2 || true
	# column 3 of pgbench's log: the transaction's latency in microseconds
	cat pgbench_log.* 2>/dev/null | awk '{print $3}' | sort -n | awk -v tps="${tps:-0}" -v fail="${fail:-?}" \
		-v pre="$corpus,$method,$shape,$c" '
		{ v[NR] = $1; s += $1 }
		END { if (NR == 0) { print pre "," tps ",,,,0," fail; exit }
			  p50 = v[int(0.50 * (NR - 1)) + 1]; p99 = v[int(0.99 * (NR - 1)) + 1];
			  printf "%s,%s,%.3f,%.3f,%.3f,%d,%s\n", pre, tps, p50 / 1000, p99 / 1000, s / NR / 1000, NR, fail }'
}

build() {
	local corpus=$1 name=$2 ddl=$3 t0 t1
	log "$corpus: $name"
	t0=$(date +%s.%N)
	$P -c "$ddl"
	t1=$(date +%s.%N)
	echo "$corpus,$ndocs,$nq,$name,$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }"),$($P -Atc "SELECT pg_relation_size('$name')")" >> builds.csv
}

for corpus in $CORPORA; do
	log "$corpus: load"
	$P -c "DROP TABLE IF EXISTS docs, qsrc, bench_q"
	$P -c "CREATE UNLOGGED TABLE docs (id int, body text,
			tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)"
	# one COPY a core: the stored tsvectors are computed on the way in
	split -n "l/$nproc" "$corpus-docs.tsv" part.
	for f in part.*; do
		$P -c "COPY docs (id, body) FROM '$w/$f' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')" &
	done
	wait
	rm -f part.*
	$P -c "VACUUM (FREEZE, ANALYZE) docs"
	ndocs=$($P -Atc "SELECT count(*) FROM docs")

	# The queries: the first $NQ of the corpus's query file, each cut or
	# extended to 1 + (n - 1) % 6 words with the words of the queries that
	# follow it (the file's queries have 2 to 4 words); those with no lexeme
	# (stop words only) left out.  qa: every term (plainto_tsquery), qo: any
	# term (its lexemes joined by |).
	$P -c "CREATE TABLE qsrc (qid int, terms text)"
	$P -c "COPY qsrc FROM '$w/$corpus-queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')"
	$P -c "CREATE TABLE bench_q AS
		SELECT row_number() OVER (ORDER BY qid)::int AS n, qid, q, nwords,
			   length(to_tsvector('english', q)) AS nlex, plainto_tsquery('english', q) AS qa,
			   (SELECT string_agg(quote_literal(l), ' | ') FROM unnest(tsvector_to_array(to_tsvector('english', q))) l)::tsquery AS qo
		FROM (SELECT qid, 1 + (row_number() OVER (ORDER BY qid) - 1)::int % 6 AS nwords,
					 concat_ws(' ', terms, lead(terms, 1) OVER (ORDER BY qid), lead(terms, 2) OVER (ORDER BY qid)) AS words
			  FROM qsrc ORDER BY qid LIMIT $NQ) x,
			 LATERAL (SELECT array_to_string((regexp_split_to_array(x.words, '\s+'))[1:x.nwords], ' ') AS q) y
		WHERE length(to_tsvector('english', q)) > 0;
		CREATE UNIQUE INDEX ON bench_q (n); ANALYZE bench_q"
	nq=$($P -Atc "SELECT count(*) FROM bench_q")
	log "$corpus: $ndocs documents, $nq queries ($($P -Atc "SELECT string_agg(nwords || ' words: ' || c, ', ' ORDER BY nwords)
		FROM (SELECT nwords, count(*) c FROM bench_q GROUP BY nwords) x"))"

	has() { [[ " $METHODS " == *" $1 "* ]]; }
	has gin_rank && build "$corpus" docs_gin "CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body)) WITH (fastupdate = off)"
	has rum && build "$corpus" docs_rum "CREATE INDEX docs_rum ON docs USING rum (tsv rum_tsvector_ops)"
	if [ "$BASELINE_ONLY" = 0 ] && has gpuidx; then
		build "$corpus" docs_gpx "SET max_parallel_maintenance_workers = $BUILD_WORKERS; CREATE INDEX docs_gpx ON docs USING gpuidx (body)"
	fi
	$P -c "VACUUM ANALYZE docs"

	# the scripts: the query read by its number, the same prepared statement every time
	pick() { echo "(SELECT $1 FROM bench_q WHERE n = :i)"; }
	methods=()
	for m in gin_rank rum; do has $m && methods+=($m); done
	[ "$BASELINE_ONLY" = 0 ] && has gpuidx && methods+=(gpuidx)
	for shape in any every; do
		qt=$(pick qo)
		[ $shape = every ] && qt=$(pick qa)
		printf '\\set i random(1, %s)\nSELECT id FROM docs WHERE to_tsvector('"'"'english'"'"', body) @@ %s ORDER BY ts_rank(tsv, %s) DESC LIMIT 10;\n' \
			"$nq" "$qt" "$qt" > "gin_rank_$shape.pgb"
		printf '\\set i random(1, %s)\nSELECT id FROM docs WHERE tsv @@ %s ORDER BY tsv <=> %s LIMIT 10;\n' \
			"$nq" "$qt" "$qt" > "rum_$shape.pgb"
		if [ $shape = any ]; then
			printf '\\set i random(1, %s)\nSELECT id FROM docs ORDER BY body <=> %s LIMIT 10;\n' "$nq" "$(pick q)" > gpuidx_any.pgb
		else
			printf '\\set i random(1, %s)\nSELECT id FROM docs WHERE body @@& %s ORDER BY body <=> %s LIMIT 10;\n' \
				"$nq" "$(pick q)" "$(pick q)" > gpuidx_every.pgb
		fi
	done

	# with the GPU: every query's top 10 (any term, every term) and top 100
	# through the worker, rows and scores, against the backend's own CPU ranking
	if [ "$GPU" = on ] && [ "$BASELINE_ONLY" = 0 ] && has gpuidx; then
		log "$corpus: GPU worker against the CPU, $nq queries"
		$P -c "CREATE OR REPLACE FUNCTION top_text(q text, every bool, k int) RETURNS text LANGUAGE plpgsql AS \$\$
			DECLARE r text;
			BEGIN
				IF every THEN
					EXECUTE 'SELECT string_agg(id || '':'' || s, '','') FROM (SELECT id, -(body <=> \$1) AS s FROM docs
						WHERE body @@& \$1 ORDER BY body <=> \$1 LIMIT ' || k || ') x' INTO r USING q;
				ELSE
					EXECUTE 'SELECT string_agg(id || '':'' || s, '','') FROM (SELECT id, -(body <=> \$1) AS s FROM docs
						ORDER BY body <=> \$1 LIMIT ' || k || ') x' INTO r USING q;
				END IF;
				RETURN r;
			END \$\$"
		for dev in cpu auto; do
			PGOPTIONS="-c gpuidx.device=$dev" $P -c "CREATE TABLE tops_$dev AS
				SELECT n, top_text(q, false, 10) AS any10, top_text(q, true, 10) AS every10, top_text(q, false, 100) AS any100
				FROM bench_q"
		done
		{
			echo "-- $corpus: GPU worker against the CPU: queries whose top 10 (any, every) or top 100 differ"
			$P -Atc "SELECT count(*) || ' of ' || (SELECT count(*) FROM bench_q) FROM tops_cpu c JOIN tops_auto g USING (n)
				WHERE (c.any10, c.every10, c.any100) IS DISTINCT FROM (g.any10, g.every10, g.any100)"
			$P -xc 'SELECT * FROM gpuidx_worker_stats'
		} | tee -a checks.txt >&2
		$P -c "DROP TABLE tops_cpu, tops_auto"
	fi

	# PER_QUERY=1 (with the GPU): each query timed alone, best of 3, through
	# the worker (gpuidx.device = auto) and in the backend, with its terms'
	# list lengths and the worker requests it made: perquery.csv, for the
	# placement rules (src/sched/placement.c)
	if [ "$GPU" = on ] && [ "${PER_QUERY:-0}" = 1 ] && [ "$BASELINE_ONLY" = 0 ] && has gpuidx; then
		log "$corpus: each query alone, worker and backend"
		$P -c "CREATE TABLE perq_t (n int, shape text, device text, ms float8, requests bigint)" \
		   -c "CREATE OR REPLACE FUNCTION time_queries(dev text) RETURNS void LANGUAGE plpgsql AS \$\$
			DECLARE r record; t0 timestamptz; best float8; req0 bigint; req1 bigint; x int; sql text;
			BEGIN
				FOR r IN SELECT n, q FROM bench_q ORDER BY n LOOP
					FOREACH sql IN ARRAY ARRAY['SELECT count(*) FROM (SELECT id FROM docs ORDER BY body <=> \$1 LIMIT 10) s',
						'SELECT count(*) FROM (SELECT id FROM docs WHERE body @@& \$1 ORDER BY body <=> \$1 LIMIT 10) s'] LOOP
						best := 1e9;
						SELECT requests INTO req0 FROM gpuidx_worker_stats;
						FOR i IN 1..3 LOOP
							t0 := clock_timestamp();
							EXECUTE sql INTO x USING r.q;
							best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000);
						END LOOP;
						SELECT requests INTO req1 FROM gpuidx_worker_stats;
						INSERT INTO perq_t VALUES (r.n, CASE WHEN sql LIKE '%@@&%' THEN 'every' ELSE 'any' END, dev, best,
												  req1 - req0);
					END LOOP;
				END LOOP;
			END \$\$"
		for dev in cpu auto; do
			PGOPTIONS="-c gpuidx.device=$dev" $P -c "SELECT time_queries('$dev')" > /dev/null
		done
		$P -c "CREATE TABLE perq_df AS SELECT lexeme, documents FROM gpuidx_term_stats('docs_gpx')"
		$P -c "\copy (SELECT t.n, t.shape, b.nlex, (SELECT string_agg(coalesce(d.documents, 0)::text, ' ' ORDER BY coalesce(d.documents, 0))
				FROM unnest(tsvector_to_array(to_tsvector('english', b.q))) w LEFT JOIN perq_df d ON d.lexeme = w) AS dfs,
				t.ms AS cpu_ms, a.ms AS worker_ms, a.requests AS worker_requests
				FROM perq_t t JOIN perq_t a ON a.n = t.n AND a.shape = t.shape AND a.device = 'auto'
				JOIN bench_q b ON b.n = t.n WHERE t.device = 'cpu' ORDER BY t.shape, t.n) TO 'perquery-$corpus.csv' WITH (FORMAT csv, HEADER)"
		$P -c "DROP TABLE perq_t, perq_df"
	fi

	# gpuidx through the GPU worker and in the backend when the worker is loaded
	runs=()
	for m in "${methods[@]}"; do
		if [ "$m" = gpuidx ] && [ "$GPU" = on ]; then
			runs+=("gpuidx_gpu:gpuidx:-c gpuidx.device=auto" "gpuidx_cpu:gpuidx:-c gpuidx.device=cpu")
			# GPU_NOLIMIT=1: also every large segment to the worker, however busy
			[ "${GPU_NOLIMIT:-0}" = 1 ] && runs+=("gpuidx_gpu_nolimit:gpuidx:-c gpuidx.device=auto -c gpuidx.gpu_rank_backlog=0")
			# GPU_BACKLOGS="N ...": also with gpuidx.gpu_rank_backlog = N postings
			for b in ${GPU_BACKLOGS:-}; do
				runs+=("gpuidx_gpu_backlog_$b:gpuidx:-c gpuidx.device=auto -c gpuidx.gpu_rank_backlog=$b")
			done
			# GPU_SPLITS="N ...": also every ranking of N postings or more to the worker however busy, the others in the backend
			for m in ${GPU_SPLITS:-}; do
				runs+=("gpuidx_gpu_split_$m:gpuidx:-c gpuidx.device=auto -c gpuidx.gpu_rank_backlog=0 -c gpuidx.gpu_min_postings=$m")
			done
			# GPU_MIN_POSTINGS="N ...": also with gpuidx.gpu_min_postings = N (rankings of fewer stay in the backend)
			for m in ${GPU_MIN_POSTINGS:-}; do
				runs+=("gpuidx_gpu_min_$m:gpuidx:-c gpuidx.device=auto -c gpuidx.gpu_min_postings=$m")
			done
		else
			runs+=("$m:$m:")
		fi
		# RANK_CACHE_OFF=1: also gpuidx in the backend reading every list each query
		if [ "$m" = gpuidx ] && [ "${RANK_CACHE_OFF:-0}" = 1 ]; then
			runs+=("gpuidx_cpu_nocache:gpuidx:-c gpuidx.device=cpu -c gpuidx.rank_cache_size=0")
		fi
	done
	for shape in any every; do
		{
			n=$($P -Atc "SELECT n FROM bench_q WHERE nlex >= 2 ORDER BY n LIMIT 1")
			echo "-- $corpus, $shape: query $n, '$($P -Atc "SELECT q FROM bench_q WHERE n = $n")'"
			for r in "${runs[@]}"; do
				IFS=: read -r name m opts <<< "$r"
				echo "-- $name"
				sed -n '2s/:i/'"$n"'/gp' "${m}_$shape.pgb" | sed 's/^/EXPLAIN (ANALYZE, COSTS OFF, BUFFERS) /' \
					| PGOPTIONS="$opts" $P 2>&1
			done
		} >> explain.txt
		for r in "${runs[@]}"; do
			IFS=: read -r name m opts <<< "$r"
			log "$corpus: $name, $shape"
			# warm-up: the index and the table into shared buffers (and the GPU's list cache)
			cell "$corpus" "$name" "$shape" "$(( nproc < 8 ? nproc : 8 ))" "${m}_$shape.pgb" "$opts" > /dev/null
			for c in $CLIENTS; do
				[ "$GPU" = on ] && $P -Atc 'SELECT gpuidx_worker_stats_reset()' > /dev/null
				cell "$corpus" "$name" "$shape" "$c" "${m}_$shape.pgb" "$opts" | tee -a results.csv >&2
				# what the worker did in the cell: its batches, their size and device time
				[ "$GPU" = on ] && $P -Atc "SELECT '$corpus,$name,$shape,$c,' || requests || ',' || batches || ',' ||
						round(requests::numeric / greatest(batches, 1), 1) || ',' || batch_device_ms || ',' ||
						batch_host_ms || ',' || wait_p50_us || ',' || wait_p99_us || ',' ||
						(fallback_absent + fallback_queue_full + fallback_arena_full + fallback_timeout +
						 fallback_engine_error + fallback_worker_lost + fallback_cancelled + fallback_cache_lost +
						 fallback_bad_answer)
					FROM gpuidx_worker_stats" >> worker.csv
			done
		done
	done
	# FLOOR=1: the same transaction with words no document has (each query's
	# words prefixed), ranked in the backend: what pgbench, PostgreSQL and the
	# statement cost with no list read and nothing ranked, the most any way of
	# ranking could give
	if [ "${FLOOR:-0}" = 1 ] && [ "$BASELINE_ONLY" = 0 ] && has gpuidx; then
		cat > gpuidx_floor.pgb <<EOF
\\set i random(1, $nq)
SELECT id FROM docs ORDER BY body <=> (SELECT regexp_replace(q, '(\\S+)', 'zqxjw\\1', 'g') FROM bench_q WHERE n = :i) LIMIT 10;
EOF
		log "$corpus: floor"
		for c in $CLIENTS; do
			cell "$corpus" gpuidx_floor floor "$c" gpuidx_floor.pgb "-c gpuidx.device=cpu" | tee -a results.csv >&2
		done
	fi
	$P -c "DROP TABLE docs, qsrc, bench_q"
done
log "bench done"
