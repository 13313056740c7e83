#!/usr/bin/env bash
# tsvector @@ tsquery as users write it, through a gpuidx index and through
# GIN: the same query mixes, the same statements, default planner settings.
#
#   bench/tsquery/run.sh [-h HOST] [-p PORT] [-d DB] DATA ROWS
#
# DATA is a corpus folder (docs.tsv, queries.tsv: scripts/data/fetch).  Its
# first ROWS documents are loaded into two tables of the same rows in the
# same heap order, docs_gpx with a gpuidx index and docs_gin with a GIN
# index, both on to_tsvector('english', body) (reused while DATA and ROWS
# are unchanged; RELOAD=1 redoes them).  Query mixes (queries.sql, NQ (200)
# queries each, from queries.tsv's real co-occurring words):
#   bool    to_tsquery: a & b, a | b, a & !b, (a | b) & c, a & (b | c) & !d
#   prefix  to_tsquery: p:* and p:* & b, p 3 to 6 letters of a real word
#   phrase  phraseto_tsquery: 2 words of a query; 2 and 3 words as they
#           follow a query's word in the first document that has it
#   web     websearch_to_tsquery: quotes, or, -
# First, for every query of every mix, the count through each index
# (enable_seqscan = off in that check only): "same rows" and the mean number
# of matches.  Then per mix (MIXES), shape (SHAPES: count, limit) and client
# count (CLIENTS, "1 8 32 64"), or only the cells CELLS names ("bool:limit
# web:count": all of MIXES are checked): pgbench -M prepared, TIME (10) seconds, a
# random query of the mix per transaction (\set, read by its number with
# \gset, then passed as the statement's parameter), the same seed in every
# cell, gpuidx then GIN.  tps and the transaction latency's p50 and p99
# from pgbench's per-transaction log.  CPU_COLUMN=1 adds a labelled extra
# column: gpuidx again with gpuidx.device = cpu (no GPU worker).  GPX_WITH
# ("positions = on") builds the gpuidx index with those storage options.  The floor:
# per client count, the same transaction with SELECT 1 for the statement,
# what PostgreSQL and pgbench cost whatever the index.  Prints a Markdown
# report on stdout, progress on stderr.
set -euo pipefail
host=${PGHOST:-/tmp}; port=${PGPORT:-5432}; db=${PGDATABASE:-postgres}
while getopts h:p:d: o; do
	case $o in h) host=$OPTARG ;; p) port=$OPTARG ;; d) db=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
data=${1:?DATA: corpus folder with docs.tsv and queries.tsv}
rows=${2:?ROWS: documents to load}
secs=${TIME:-10}
clients=${CLIENTS:-1 8 32 64}
mixes=${MIXES:-bool prefix phrase web}
shapes=${SHAPES:-count limit}
nq=${NQ:-200}
mwm=${MAINTENANCE_WORK_MEM:-256MB}
gpx_with=${GPX_WITH:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }

echo "# tsquery: $(basename "$data"), $rows rows; mixes: $mixes; $nq queries a mix; shapes: $shapes;"
echo "# clients: $clients; $secs s a cell; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"${P[@]}" -Atc "SELECT '# ' || version()"
"${P[@]}" -Atc "SELECT '# ' || string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name) FROM pg_settings WHERE name IN
    ('shared_buffers', 'work_mem', 'random_page_cost', 'effective_cache_size', 'max_parallel_workers_per_gather',
     'jit', 'plan_cache_mode', 'gpuidx.device', 'shared_preload_libraries')"

# load and build: each index alone, timed here
tag="$data $rows $gpx_with"
loaded=$("${P[@]}" -Atc "SELECT v FROM tsq_meta WHERE k = 'loaded'" 2>/dev/null || true)
if [ "${RELOAD:-0}" = 1 ] || [ "$loaded" != "$tag" ]; then
	log "load: first $rows rows of $data"
	head -n "$rows" "$data/docs.tsv" | "${P[@]}" -f "$here/load.sql"
	for ix in gpx gin; do
		am=gpuidx; with=${gpx_with:+ WITH ($gpx_with)}
		[ $ix = gin ] && { am=gin; with=; }
		log "build: $am$with"
		start=$(date +%s.%N)
		PGOPTIONS="-c maintenance_work_mem=$mwm" "${P[@]}" \
			-c "CREATE INDEX docs_${ix}_ix ON docs_$ix USING $am (to_tsvector('english', body))$with"
		end=$(date +%s.%N)
		"${P[@]}" -c "INSERT INTO tsq_meta VALUES ('build_$ix', round($end - $start, 1))"
	done
	"${P[@]}" -c "VACUUM (FREEZE, ANALYZE) docs_gpx" -c "VACUUM (FREEZE, ANALYZE) docs_gin" \
		-c "INSERT INTO tsq_meta VALUES ('loaded', \$t\$$tag\$t\$)"
fi
"${P[@]}" -v queries="$data/queries.tsv" -v nq="$nq" -f "$here/queries.sql"

fn_of() { "${P[@]}" -Atc "SELECT min(fn) FROM tsq_queries WHERE mix = '$1'"; }
statement() {	# table shape fn -> the statement, the query as :q
	local pred="to_tsvector('english', body) @@ $3('english', :q)"
	case $2 in
		count) echo "SELECT count(*) FROM $1 WHERE $pred" ;;
		limit) echo "SELECT id FROM $1 WHERE $pred LIMIT 10" ;;
		*) echo "unknown shape $2" >&2; exit 2 ;;
	esac
}

# every query of each mix through both indexes (the index path forced here
# only), in CHECK_JOBS sessions at once: a phrase of frequent words rechecks
# many rows, through either index
log "check: every query's count through gpuidx and through GIN"
"${P[@]}" <<'SQL'
SET client_min_messages = warning;
CREATE OR REPLACE FUNCTION tsq_count(tbl text, fn text, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %I WHERE to_tsvector(''english'', body) @@ %I(''english'', %L)', tbl, fn, q) INTO n;
	RETURN n;
END $$;
DROP TABLE IF EXISTS tsq_check;
CREATE TABLE tsq_check (mix text, n int, gpx bigint, gin bigint);
SQL
jobs=${CHECK_JOBS:-$(( $(nproc) < 8 ? $(nproc) : 8 ))}
pids=()
for k in $(seq 0 $((jobs - 1))); do
	PGOPTIONS="-c enable_seqscan=off" "${P[@]}" -c "INSERT INTO tsq_check
		SELECT mix, n, tsq_count('docs_gpx', fn, q), tsq_count('docs_gin', fn, q) FROM tsq_queries
		WHERE mix = ANY (string_to_array('$mixes', ' ')) AND n % $jobs = $k" &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
[ "$("${P[@]}" -Atc "SELECT count(*) FROM tsq_check")" = \
  "$("${P[@]}" -Atc "SELECT count(*) FROM tsq_queries WHERE mix = ANY (string_to_array('$mixes', ' '))")" ] ||
	{ log "check: some queries were not counted"; exit 1; }

# the scan nodes a statement runs with: its sixth execution, prepared, the mix's first query
plan() {	# mix statement
	"${P[@]}" -At <<SQL | grep -v 'Bitmap Index Scan' | grep -oE '(Parallel )?(Seq Scan|Bitmap Heap Scan|Custom Scan \([a-z ]+\)|Index Scan|Index Only Scan)' | sort -u | paste -sd+ -
SELECT q FROM tsq_queries WHERE mix = '$1' AND n = 1 \gset
PREPARE s(text) AS ${2//:q/\$1};
EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q'); EXECUTE s(:'q');
EXPLAIN (COSTS OFF) EXECUTE s(:'q');
SQL
}

# one pgbench cell: script clients [PGOPTIONS] -> "tps p50_ms p99_ms transactions failed"
cell() {
	PGOPTIONS="${3:-}" pgbench_cell "$work" "$1" "$2" "$secs" -h "$host" -p "$port" "$db"
}

results=()
cpu_results=()
plans=()
for mix in $mixes; do
	fn=$(fn_of "$mix")
	[ -n "$fn" ] || { log "mix $mix: no queries"; continue; }
	nmix=$("${P[@]}" -Atc "SELECT count(*) FROM tsq_queries WHERE mix = '$mix'")
	for shape in $shapes; do
		[ -z "${CELLS:-}" ] || [[ " $CELLS " == *" $mix:$shape "* ]] || continue
		for ix in gpx gin; do
			stmt=$(statement "docs_$ix" "$shape" "$fn")
			printf '\\set i random(1, %s)\nSELECT q FROM tsq_queries WHERE mix = '"'%s'"' AND n = :i \\gset\n%s;\n' \
				"$nmix" "$mix" "$stmt" > "$work/$ix.pgb"
		done
		plans+=("$mix|$shape|$(plan "$mix" "$(statement docs_gpx "$shape" "$fn")")|$(plan "$mix" "$(statement docs_gin "$shape" "$fn")")")
		for c in $clients; do
			g=$(cell "$work/gpx.pgb" "$c"); n=$(cell "$work/gin.pgb" "$c")
			results+=("$mix $shape $c $g $n")
			log "$mix $shape $c clients: gpuidx $g, GIN $n (tps p50 p99 transactions failed)"
			if [ "${CPU_COLUMN:-0}" = 1 ]; then
				u=$(cell "$work/gpx.pgb" "$c" "-c gpuidx.device=cpu")
				cpu_results+=("$mix $shape $c $u")
				log "$mix $shape $c clients: gpuidx on the CPU $u"
			fi
		done
	done
done
# the floor: the lookup and SELECT 1
nbool=$("${P[@]}" -Atc "SELECT count(*) FROM tsq_queries WHERE mix = 'bool'")
printf '\\set i random(1, %s)\nSELECT q FROM tsq_queries WHERE mix = '"'bool'"' AND n = :i \\gset\nSELECT 1;\n' "$nbool" > "$work/floor.pgb"
floors=()
for c in $clients; do
	f=$(cell "$work/floor.pgb" "$c")
	floors+=("$c $f")
	log "floor $c clients: $f"
done

# the report
echo
echo "## Tables and indexes"
echo
echo "Two tables of the same $rows rows in the same order, one index each on \`to_tsvector('english', body)\`;"
[ -z "$gpx_with" ] || echo "the gpuidx index built \`WITH ($gpx_with)\`;"
echo "build times with maintenance_work_mem = $mwm, one build at a time."
echo
echo "| table | index | build (s) | index size | table size |"
echo "|---|---|---:|---:|---:|"
"${P[@]}" -At -F' | ' <<'SQL' | sed 's/^/| /; s/$/ |/'
SELECT t, CASE t WHEN 'docs_gpx' THEN 'gpuidx' || coalesce(' (' || array_to_string(c.reloptions, ', ') || ')', '') ELSE 'GIN' END,
       (SELECT v FROM tsq_meta WHERE k = 'build_' || right(t, 3)),
       pg_size_pretty(pg_relation_size((t || '_ix')::regclass)), pg_size_pretty(pg_table_size(t::regclass))
FROM unnest(ARRAY['docs_gpx', 'docs_gin']) t JOIN pg_class c ON c.oid = (t || '_ix')::regclass
SQL
echo
echo "## Query mixes"
echo
echo "Same rows: queries whose count through gpuidx equals GIN's (both through their index)."
echo
echo "| mix | function | queries | example | mean matches | no match | same rows |"
echo "|---|---|---:|---|---:|---:|---:|"
"${P[@]}" -At -F' | ' <<SQL | sed 's/^/| /; s/$/ |/'
SELECT q.mix, min(q.fn), count(*), '\`' || replace(min(q.q) FILTER (WHERE q.n = 1), '|', '\|') || '\`',
       round(avg(c.gin), 1), count(*) FILTER (WHERE c.gin = 0),
       count(*) FILTER (WHERE c.gpx = c.gin) || '/' || count(*)
FROM tsq_queries q JOIN tsq_check c USING (mix, n)
WHERE q.mix = ANY (string_to_array('$mixes', ' '))
GROUP BY q.mix ORDER BY array_position(string_to_array('$mixes', ' '), q.mix)
SQL
echo
echo "Plans (the sixth execution of the prepared statement, the mix's first query):"
echo
echo "| mix | shape | gpuidx | GIN |"
echo "|---|---|---|---|"
for p in "${plans[@]}"; do echo "| ${p//|/ | } |"; done
echo
echo "## pgbench"
echo
echo "\`pgbench -M prepared -T $secs\`, default planner settings; a transaction is the query's lookup by"
echo "its number and the statement.  Ratios: above 1 is gpuidx better (tps gpuidx / GIN; latency GIN / gpuidx)."
echo "Transactions: gpuidx's / GIN's in the cell (few transactions: a few slow queries decide the cell)."
echo
echo "| mix | shape | clients | gpuidx tps | p50 ms | p99 ms | GIN tps | p50 ms | p99 ms | tps ratio | p50 ratio | p99 ratio | transactions | failed |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in "${results[@]}"; do
	echo "$r" | awk '
		function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
		{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %d |\n",
		  $1, $2, $3, $4, $5, $6, $9, $10, $11, ratio($4, $9), ratio($10, $5), ratio($11, $6), $7, $12, $8 + $13 }'
done
if [ ${#cpu_results[@]} -gt 0 ]; then
	echo
	echo "Extra, labelled: gpuidx with \`gpuidx.device = cpu\` (every round in the backend, no GPU worker), same cells."
	echo
	echo "| mix | shape | clients | gpuidx on the CPU tps | p50 ms | p99 ms | transactions |"
	echo "|---|---|---:|---:|---:|---:|---:|"
	for r in "${cpu_results[@]}"; do
		echo "$r" | awk '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }'
	done
fi
echo
echo "The floor: the same transaction with \`SELECT 1\` for the statement (the lookup, two round trips,"
echo "pgbench), what a transaction costs whatever the index."
echo
echo "| clients | tps | p50 ms | p99 ms |"
echo "|---:|---:|---:|---:|"
for r in "${floors[@]}"; do
	echo "$r" | awk '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
done
echo
echo "Statements: \`SELECT count(*) FROM docs_gpx WHERE to_tsvector('english', body) @@ FN('english', \$1)\` (count)"
echo "and \`SELECT id FROM ... LIMIT 10\` (limit), FN the mix's function; docs_gin for GIN."
