#!/usr/bin/env bash
# Plans under default planner settings: every query shape with the query as
# a parameter of a prepared statement, as drivers run them, planned as a
# custom plan (the query known), as a generic plan (the query unknown), with
# plan_cache_mode = auto (what a driver's statement cache gets), with the
# index path forced (enable_seqscan = off, a reference only; custom and
# generic), and the same
# shape through a GIN index on the same stored tsvector (default settings).
#
#   bench/plans/run.sh [-h HOST] [-p PORT] [-d DB] DATA ROWS
#
# DATA is a corpus folder (docs.tsv, queries.tsv: scripts/data/fetch);
# ROWS its first rows are loaded into "plans_docs" (reused while ROWS is
# unchanged; RELOAD=1 redoes it).  Queries: the first NQ (500) lines of
# queries.tsv of 2 to 5 words.  Each cell is pgbench -M prepared, one
# client (CLIENTS), TXNS (1000) transactions each, a random query each (read by \gset,
# then passed as the statement's parameter), from the same seed in every
# cell: every cell runs the same queries, REPS (3) times, the best kept.
# Also: of the NQ queries, how many custom plans scan the table (EXPLAIN
# only, so not subject to a busy machine's noise).  Prints a Markdown table.
set -euo pipefail
host=${PGHOST:-/tmp}; port=${PGPORT:-5432}; db=${PGDATABASE:-postgres}
while getopts h:p:d: o; do
	case $o in h) host=$OPTARG ;; p) port=$OPTARG ;; d) db=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
data=${1:?DATA: corpus folder with docs.tsv and queries.tsv}
rows=${2:?ROWS: documents to load}
txns=${TXNS:-1000}
reps=${REPS:-3}
clients=${CLIENTS:-1}
nq=${NQ:-500}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")

echo "# plans: $(basename "$data"), $rows rows, $nq queries of 2-5 words, $txns transactions a cell, $clients client(s); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"${P[@]}" -Atc "SELECT version()"
"${P[@]}" -Atc "SELECT string_agg(name || ' = ' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN
    ('shared_buffers', 'work_mem', 'random_page_cost', 'effective_cache_size', 'max_parallel_workers_per_gather',
     'jit', 'enable_seqscan', 'plan_cache_mode')"

loaded=$("${P[@]}" -Atc "SELECT obj_description('plans_docs'::regclass)" 2>/dev/null || true)
if [ "${RELOAD:-0}" = 1 ] || [ "$loaded" != "$data $rows" ]; then
	start=$(date +%s)
	head -n "$rows" "$data/docs.tsv" | "${P[@]}" -v queries="$data/queries.tsv" -v nq="$nq" \
		-v tag="$data $rows" -f "$here/load.sql"
	echo "# loaded and indexed in $(( $(date +%s) - start ))s"
fi
"${P[@]}" -Atc "SELECT '# ' || count(*) || ' queries, ' || round(avg(array_length(regexp_split_to_array(q, '\s+'), 1)), 2)
    || ' words each on average' FROM plans_queries"
nq=$("${P[@]}" -Atc "SELECT count(*) FROM plans_queries")

# one script a shape and index: the query by its number, then the statement with it as $1
gpx_pred="tsv @@& :q"
gin_pred="tsv @@ plainto_tsquery('english', :q)"
script() {	# name statement
	printf '\\set i random(1, %s)\nSELECT q FROM plans_queries WHERE n = :i \\gset\n%s;\n' "$nq" "$2" > "$work/$1.pgb"
}
for ix in gpx gin; do
	pred=$gpx_pred; [ $ix = gin ] && pred=$gin_pred
	script "${ix}_count" "SELECT count(*) FROM plans_docs WHERE $pred"
	script "${ix}_exists" "SELECT EXISTS (SELECT 1 FROM plans_docs WHERE $pred)"
	script "${ix}_limit" "SELECT id FROM plans_docs WHERE $pred LIMIT 10"
	script "${ix}_ids" "SELECT id FROM plans_docs WHERE $pred"
done
script gpx_ranked "SELECT id FROM plans_docs ORDER BY tsv <=> :q LIMIT 10"
script gpx_ranked_all "SELECT id FROM plans_docs WHERE $gpx_pred ORDER BY tsv <=> :q LIMIT 10"
script gin_ranked_all "SELECT id FROM plans_docs WHERE $gin_pred
    ORDER BY ts_rank(tsv, plainto_tsquery('english', :q)) DESC LIMIT 10"

# one pgbench cell: script, PGOPTIONS -> transactions per second, the best of REPS runs
cell() {
	local best=0 t
	for _ in $(seq "$reps"); do
		t=$(PGOPTIONS="$2" nice pgbench -n -M prepared -c "$clients" -j "$clients" -t "$txns" --random-seed=1 -f "$work/$1.pgb" \
			-h "$host" -p "$port" "$db" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
		best=$(awk -v a="$best" -v b="${t:-0}" 'BEGIN { printf "%.0f", (b > a ? b : a) }')
	done
	echo "$best"
}
# of the queries, how many custom plans scan the table: PGOPTIONS, statement with :q
seqs() {
	PGOPTIONS="$1" "${P[@]}" -At <<SQL
CREATE OR REPLACE FUNCTION pg_temp.seq(stmt text, q text) RETURNS boolean LANGUAGE plpgsql AS \$\$
DECLARE l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(stmt, ':q', quote_literal(q)) LOOP
		IF l LIKE '%Seq Scan on plans_docs%' THEN RETURN true; END IF;
	END LOOP;
	RETURN false;
END \$\$;
SELECT count(*) FILTER (WHERE pg_temp.seq(\$s\$$2\$s\$, q)) FROM plans_queries;
SQL
}
# the plan a cell ran: EXPLAIN of the statement prepared, sixth execution
plan() {
	local sql=$1 opts=$2
	PGOPTIONS="$opts" "${P[@]}" -At <<SQL | grep -v 'Bitmap Index Scan' | grep -oE 'Seq Scan|Bitmap Heap Scan|Custom Scan \([a-z ]+\)|Index Scan|Index Only Scan' | sort -u | paste -sd+ -
SELECT q FROM plans_queries WHERE n = 1 \gset
PREPARE s(text) AS ${sql//:q/\$1};
EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q');
EXPLAIN (COSTS OFF) EXECUTE s(:'q');
SQL
}

custom="-c plan_cache_mode=force_custom_plan"
generic="-c plan_cache_mode=force_generic_plan"
forced="-c enable_seqscan=off"
"${P[@]}" -c "SELECT count(*) FROM plans_docs WHERE tsv @@& 'warm'" > /dev/null
cells=()
for shape in count exists limit ids ranked ranked_all; do
	gin=gin_$shape; [ -f "$work/$gin.pgb" ] || gin=
	stmt=$(sed -n 3p "$work/gpx_$shape.pgb"); stmt=${stmt%;}
	c=$(cell gpx_$shape "$custom"); g=$(cell gpx_$shape "$generic"); a=$(cell gpx_$shape "")
	fc=$(cell gpx_$shape "$custom $forced"); fg=$(cell gpx_$shape "$generic $forced")
	n=${gin:+$(cell $gin "")}
	pc=$(plan "$stmt" "$custom"); pg=$(plan "$stmt" "$generic"); sc=$(seqs "" "$stmt")
	cells+=("$shape|$c|$g|$a|$fc|$fg|${n:--}|$pc|$pg|$sc")
	echo "# $shape done ($(date +%T))" >&2
done

echo
echo "Transactions per second, the best of $reps runs of the same $txns transactions (each"
echo "transaction also reads the query text by its number; $clients client(s)):"
echo
echo "| shape | custom | generic | auto | forced, custom | forced, generic | GIN | custom / forced custom | generic / forced generic | auto / forced (better) | GIN / custom | GIN / generic | GIN / auto | custom plan | generic plan | custom plans scanning the table |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"
for row in "${cells[@]}"; do
	IFS='|' read -r shape c g a fc fg n pc pg sc <<< "$row"
	r() { awk -v x="$1" -v y="$2" 'BEGIN { if (x == "-" || y == "-" || x + 0 == 0 || y + 0 == 0) print "-"; else printf "%.2f", x / y }'; }
	fb=$(( fc > fg ? fc : fg ))
	# time ratios: forced's tps over the cell's; GIN's time over gpuidx's (above 1: gpuidx faster)
	echo "| $shape | $c | $g | $a | $fc | $fg | $n | $(r "$fc" "$c") | $(r "$fg" "$g") | $(r "$fb" "$a") | $(r "$c" "$n") | $(r "$g" "$n") | $(r "$a" "$n") | $pc | $pg | $sc of $nq |"
done
echo
echo "Ratios are times (the inverse of tps): custom / forced above 1 is slower than the forced index path;"
echo "GIN / custom above 1 is gpuidx faster than GIN.  ranked (any term) has no GIN counterpart;"
echo "ranked_all's GIN is ts_rank over the GIN matches."
