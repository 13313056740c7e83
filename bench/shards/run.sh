#!/usr/bin/env bash
# Search over 1, 2 and 3 postgres_fdw shards on one machine, against one
# server holding every row: the set-up of docs/SCALING.md, the same queries.
#
#   bench/shards/run.sh DATA [ROWS]
#
# DATA is a corpus folder (docs.tsv, queries.tsv: scripts/data/fetch), ROWS
# its first documents (all by default).  Starts five throwaway clusters under
# WORK (/tmp/gpuidx-shards), ports BASE_PORT (5620) to BASE_PORT + 4, with
# PostgreSQL's default settings but fsync = off and autovacuum = off:
#   single   every row in one table (docs_all);
#   coord    the coordinator: for S = 1, 2, 3 a table docs_sS partitioned
#            by hash of id into S foreign tables (async_capable, extensions
#            'gpuidx', and FDW_OPTIONS: ", fetch_size '10', options '-c
#            jit=off'" as docs/SCALING.md advises for top-k search; "" for
#            postgres_fdw's defaults) on shards 1..S, and the cached global statistics of
#            docs/SCALING.md (a materialized view over the shards'
#            gpuidx_term_stats);
#   shard1..3  the partitions, each with its gpuidx indexes on body and on
#            to_tsvector('english', body).
# Rows go to the shards through the coordinator (COPY into the partitioned
# table).  Queries (NQ (200) of queries.tsv's real co-occurring words):
#   ranked  ORDER BY body <=> ... LIMIT 10: the single server's own BM25,
#           the shards' with the cached global statistics (a bm25query);
#   count   count(*) of to_tsvector('english', body) @@ plainto_tsquery:
#           on the shards summed over each partition's pushed-down count;
#   limit   the first 10 ids of the same filter.
# First every query's count and its top 10 scores through each S are
# compared with the single server's.  Then per shape and client count
# (CLIENTS, "1 2 4"): pgbench -M prepared, TIME (10) seconds, a random query
# per transaction (read by its number with \gset, passed as the statement's
# parameter), the same seed everywhere.  Prints a Markdown report on stdout,
# progress on stderr.  Run as root (the clusters run as postgres) or as a
# user who can run initdb.  KEEP=1 leaves the clusters running.
set -euo pipefail
data=${1:?DATA: corpus folder with docs.tsv and queries.tsv}
rows=${2:-0}
work=${WORK:-/tmp/gpuidx-shards}
base=${BASE_PORT:-5620}
secs=${TIME:-10}
clients=${CLIENTS:-1 2 4}
nq=${NQ:-200}
# docs/SCALING.md's settings for top-k search: rows fetched 10 at a time, no JIT on the shards
default_options=", fetch_size '10', options '-c jit=off'"
fdw_options=${FDW_OPTIONS-$default_options}
bin=$(pg_config --bindir)
. "$(dirname "$0")/../lib.sh"
names=(single coord shard1 shard2 shard3)
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
port_of() { echo $((base + $1)); }
Q() { local n=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$(port_of "$n")" -U postgres -d postgres "$@"; }
SINGLE=0 COORD=1

stop_all() {
	for i in 0 1 2 3 4; do
		[ -d "$work/${names[$i]}" ] && as_pg "$bin/pg_ctl -D $work/${names[$i]} -m immediate stop" >/dev/null 2>&1 || true
	done
}
[ "${KEEP:-0}" = 1 ] || trap 'stop_all; rm -rf "$work/tmp"' EXIT

stop_all
rm -rf "$work"
mkdir -p "$work/tmp"
chmod 777 "$work" "$work/tmp"
for i in 0 1 2 3 4; do
	as_pg "$bin/initdb -D $work/${names[$i]} -U postgres -A trust" >/dev/null
	cat >> "$work/${names[$i]}/postgresql.conf" <<EOF
port = $(port_of $i)
unix_socket_directories = '/tmp'
listen_addresses = ''
fsync = off
autovacuum = off
EOF
	as_pg "$bin/pg_ctl -D $work/${names[$i]} -l $work/${names[$i]}.log -w start" >/dev/null
done
log "five clusters on ports $base-$((base + 4))"

echo "# shards: $(basename "$data"), ${rows/#0/all} rows; $nq queries; clients: $clients; $secs s a cell; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# the shards' servers: async_capable 'true', batch_size '1000'${fdw_options:- (otherwise the defaults of postgres_fdw)}"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); every cluster on it"
Q 0 -Atc "SELECT '# ' || version()"

# the corpus and its queries, as the coordinator and the single server read
# them (CSV with a quote that never occurs: GCIDE's text holds backslashes)
docs=$work/tmp/docs.tsv
if [ "$rows" -gt 0 ]; then head -n "$rows" "$data/docs.tsv" > "$docs"; else cp "$data/docs.tsv" "$docs"; fi
head -n "$nq" "$data/queries.tsv" > "$work/tmp/queries.tsv"
chmod a+r "$docs" "$work/tmp/queries.tsv"
ndocs=$(wc -l < "$docs")

# shards: S partitions of config S, shard j holding partition j
for s in 1 2 3; do
	for j in $(seq 1 "$s"); do
		Q $((COORD + j)) <<EOF
CREATE EXTENSION IF NOT EXISTS gpuidx;
CREATE TABLE p${s}_$j (id bigint PRIMARY KEY, body text);
EOF
	done
done
Q "$COORD" <<EOF
CREATE EXTENSION gpuidx;
CREATE EXTENSION postgres_fdw;
CREATE TABLE queries (qid int PRIMARY KEY, q text);
EOF
for j in 1 2 3; do
	Q "$COORD" <<EOF
CREATE SERVER shard$j FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '/tmp', port '$(port_of $((COORD + j)))', dbname 'postgres', extensions 'gpuidx',
			 async_capable 'true', batch_size '1000'$fdw_options);
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$j OPTIONS (user 'postgres');
EOF
done
for s in 1 2 3; do
	Q "$COORD" -c "CREATE TABLE docs_s$s (id bigint, body text) PARTITION BY HASH (id)"
	for j in $(seq 1 "$s"); do
		Q "$COORD" -c "CREATE FOREIGN TABLE docs_s${s}_$j PARTITION OF docs_s$s FOR VALUES WITH (MODULUS $s, REMAINDER $((j - 1)))
			SERVER shard$j OPTIONS (table_name 'p${s}_$j')"
	done
	log "S = $s: copying $ndocs rows through the coordinator"
	Q "$COORD" -c "\\copy docs_s$s FROM '$docs' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')"
	for j in $(seq 1 "$s"); do
		Q $((COORD + j)) <<EOF
CREATE INDEX p${s}_${j}_body ON p${s}_$j USING gpuidx (body);
CREATE INDEX p${s}_${j}_tsv ON p${s}_$j USING gpuidx (to_tsvector('english', body));
VACUUM ANALYZE p${s}_$j;
CREATE VIEW p${s}_${j}_terms AS SELECT * FROM gpuidx_term_stats('p${s}_${j}_body');
EOF
		Q "$COORD" -c "CREATE FOREIGN TABLE terms_s${s}_$j (lexeme text, documents bigint, length bigint,
			config regconfig, k1 float8, b float8) SERVER shard$j OPTIONS (table_name 'p${s}_${j}_terms')"
	done
	union=$(for j in $(seq 1 "$s"); do echo "SELECT * FROM terms_s${s}_$j"; done | paste -sd'|' | sed 's/|/ UNION ALL /g')
	Q "$COORD" <<EOF
CREATE MATERIALIZED VIEW terms_s$s AS
	SELECT lexeme, sum(documents)::bigint AS documents, sum(length)::bigint AS length, config, k1, b
	FROM ($union) t GROUP BY lexeme, config, k1, b;
CREATE UNIQUE INDEX ON terms_s$s (lexeme, config, k1, b);
ANALYZE docs_s$s;
EOF
done
Q "$COORD" -c "\\copy queries FROM '$work/tmp/queries.tsv' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')"
Q "$SINGLE" <<EOF
CREATE EXTENSION gpuidx;
CREATE TABLE queries (qid int PRIMARY KEY, q text);
\\copy queries FROM '$work/tmp/queries.tsv' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')
CREATE TABLE docs_all (id bigint PRIMARY KEY, body text);
\\copy docs_all FROM '$docs' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')
CREATE INDEX docs_all_body ON docs_all USING gpuidx (body);
CREATE INDEX docs_all_tsv ON docs_all USING gpuidx (to_tsvector('english', body));
VACUUM ANALYZE docs_all;
EOF
log "loaded"

# statements: $1 the query's text.  On the coordinator the tsquery is made
# once, by a sub-select: postgres_fdw does not send a function whose text
# argument is a parameter (its collation is not a column's), so
# plainto_tsquery('english', $1) in a generic plan would filter every row
# on the coordinator; the sub-select's value is a parameter it sends.
filter="to_tsvector('english', body) @@ plainto_tsquery('english', \$1)"
sfilter="to_tsvector('english', body) @@ (SELECT plainto_tsquery('english', \$1))"
stmt() {	# shape target -> SQL with $1
	local shape=$1 t=$2
	case $shape:$t in
		ranked:all) echo "SELECT id FROM docs_all ORDER BY body <=> \$1 LIMIT 10" ;;
		ranked:s*) echo "SELECT id FROM docs_$t ORDER BY body <=> (SELECT gpuidx_bm25query(\$1, 'terms_$t')) LIMIT 10" ;;
		count:all) echo "SELECT count(*) FROM docs_all WHERE $filter" ;;
		count:s*) local n=${t#s}
			echo "SELECT sum(c)::bigint FROM ($(for j in $(seq 1 "$n"); do echo "SELECT count(*) AS c FROM docs_${t}_$j WHERE $sfilter"; done | paste -sd'|' | sed 's/|/ UNION ALL /g')) n" ;;
		limit:all) echo "SELECT id FROM docs_all WHERE $filter LIMIT 10" ;;
		limit:s*) echo "SELECT id FROM docs_$t WHERE $sfilter LIMIT 10" ;;
	esac
}
node_of() { [ "$1" = all ] && echo "$SINGLE" || echo "$COORD"; }

# the same answers: every query's count and top 10 scores (the ranked
# statement with the bm25query, or the text, a parameter)
check_fn=$(cat <<'SQL'
CREATE FUNCTION check_answers(t text) RETURNS TABLE (qid int, n bigint, scores text) LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT * FROM queries ORDER BY queries.qid LOOP
		qid := r.qid;
		EXECUTE format('SELECT count(*) FROM %I WHERE to_tsvector(''english'', body) @@ plainto_tsquery(''english'', $1)',
					   'docs_' || t) INTO n USING r.q;
		IF t = 'all' THEN
			EXECUTE 'SELECT array_agg(d ORDER BY d)::text FROM
				(SELECT body <=> $1 AS d FROM docs_all ORDER BY body <=> $1 LIMIT 10) s' INTO scores USING r.q;
		ELSE
			EXECUTE format('SELECT array_agg(d ORDER BY d)::text FROM
				(SELECT body <=> $1 AS d FROM %I ORDER BY body <=> $1 LIMIT 10) s', 'docs_' || t)
				INTO scores USING gpuidx_bm25query(r.q, ('terms_' || t)::regclass);
		END IF;
		RETURN NEXT;
	END LOOP;
END $$;
SQL
)
Q "$SINGLE" -c "$check_fn"
Q "$COORD" -c "$check_fn"
Q "$SINGLE" -Atc "SELECT * FROM check_answers('all')" > "$work/tmp/check.all"
declare -A same
for s in 1 2 3; do
	Q "$COORD" -Atc "SELECT * FROM check_answers('s$s')" > "$work/tmp/check.s$s"
	if cmp -s "$work/tmp/check.all" "$work/tmp/check.s$s"; then
		log "S = $s: counts and top-10 scores of all $nq queries equal the single server's"
		same[$s]="the same counts and top-10 scores as the single server for all $nq queries"
	else
		diff "$work/tmp/check.all" "$work/tmp/check.s$s" | head -5 >&2
		same[$s]="**differs** from the single server: $(diff "$work/tmp/check.all" "$work/tmp/check.s$s" | grep -c '^>') of $nq queries"
	fi
done
mean=$(awk -F'|' '{ s += $2 } END { printf "%.0f", s / NR }' "$work/tmp/check.all")

# one pgbench cell: shape target clients -> "tps p50_ms p99_ms transactions failed"
cell() {
	local script=$work/tmp/$1.$2.sql
	printf '\\set n random(1, %s)\nSELECT q FROM queries WHERE qid = :n \\gset\n%s;\n' "$nq" \
		"$(stmt "$1" "$2" | sed 's/\$1/:q/g')" > "$script"
	pgbench_cell "$work/tmp" "$script" "$3" "$secs" -h /tmp -p "$(port_of "$(node_of "$2")")" -U postgres postgres
}

echo
echo "$ndocs documents, $nq queries (mean count $mean)."
echo
for s in 1 2 3; do echo "- $s shard(s): ${same[$s]}."; done
echo
echo "| shape | clients | one server tps (p50 ms) | 1 shard | 2 shards | 3 shards |"
echo "|---|---:|---:|---:|---:|---:|"
for shape in ranked count limit; do
	for c in $clients; do
		line="| $shape | $c"
		for t in all s1 s2 s3; do
			read -r tps p50 p99 n fail < <(cell "$shape" "$t" "$c")
			log "$shape $t $c clients: $tps tps, p50 $p50 ms, p99 $p99 ms, $n transactions, $fail failed"
			line="$line | $tps ($p50)"
		done
		echo "$line |"
	done
done
echo
echo "The statements (\$1: the query's words):"
echo
for shape in ranked count limit; do
	for t in all s3; do echo "- $shape, $t: \`$(stmt "$shape" "$t")\`"; done
done
echo
echo "A 3-shard plan of each (the generic plan of the prepared statement), on the coordinator:"
echo
echo '```'
for shape in ranked count limit; do
	Q "$COORD" -Atc "PREPARE p(text) AS $(stmt "$shape" s3); SET plan_cache_mode = force_generic_plan; EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p('a b')"
	echo
done
echo '```'
