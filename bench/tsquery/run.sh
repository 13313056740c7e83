#!/usr/bin/env bash
# tsvector @@ tsquery as users write it, through a gpuidx index and through
# GIN: the same queries, the same statements, default planner settings.
#
#   bench/tsquery/run.sh [-h HOST] [-p PORT] [-d DB] DATA ROWS > report.md
#
# DATA is a corpus folder (docs.tsv, queries.tsv: scripts/data/fetch).  Its
# first ROWS documents are loaded (load.sql), for each layout of LAYOUTS,
# into two tables of the same rows in the same heap order, one with a gpuidx
# index and one with GIN: expr, docs_gpx and docs_gin, the index on
# to_tsvector('english', body); column, docs_gpx_tsv and docs_gin_tsv, the
# index on a stored tsvector column tsv.  Builds one at a time and timed
# (PARALLEL_BUILDS=1: all at once); the tables are reused while DATA, ROWS,
# LAYOUTS and GPX_WITH are unchanged (RELOAD=1 redoes them).
# Query mixes (queries.sql, NQ queries each, from queries.tsv's real
# co-occurring words), MIXES naming mixes or the set "shapes":
#   bool    to_tsquery: a & b, a | b, a & !b, (a | b) & c, a & (b | c) & !d
#   prefix  to_tsquery: p:* and p:* & b, p 3 to 6 letters of a real word
#   phrase  phraseto_tsquery: 2 words of a query; 2 and 3 words as they
#           follow a query's word in the first document that has it
#   web     websearch_to_tsquery: quotes, or, -
#   shapes  the ten shapes, a mix each: "a b" c, a or b, a b -c
#           (websearch_to_tsquery), a & (b | c), pre:* & b, a & !b, a <-> b
#           (to_tsquery), plainto_tsquery, (a | b) & !c, phraseto_tsquery
# Then, for the statements of STATEMENTS (count: count(*); limit: LIMIT 10
# ids):
# 1. the check: every query's count through each index (enable_seqscan = off
#    here only), CHECK_JOBS sessions, CHECK_TIMEOUT a query;
# 2. ONE=1: one query at a time, in one session per layout and statement: a
#    warm-up pass (WARMUP_TIMEOUT a query), then each of the first ONE_NQ
#    queries of each mix through gpuidx and then GIN, timed in the server
#    (runs.sql's tsq_run), ONE_TIMEOUT (TIMEOUT) a query;
# 3. pgbench -M prepared per layout, mix, statement and client count
#    (CLIENTS; empty: none), or only the cells CELLS names ("mix:stmt" or
#    "layout:mix:stmt"), TIME seconds, a random query of the mix per
#    transaction (\set, read by its number with \gset, then passed as the
#    statement's parameter), the same seed in every cell, gpuidx then GIN,
#    TIMEOUT a statement; tps and the transaction latency's p50 and p99 from
#    pgbench's per-transaction log.  CPU_COLUMN=1 adds a labelled extra
#    column: gpuidx again with gpuidx.device = cpu.  The floor: per client
#    count, the same transaction with SELECT 1 for the statement.
# GPX_WITH ("positions = on") builds the gpuidx indexes with those storage
# options.  MIXES=shapes changes the defaults (README's settings table).
# Prints a Markdown report on stdout (report.sql: a summary against the
# targets, then each part), progress on stderr; PARTIAL_REPORT=FILE: the
# report so far into FILE after each step.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
parse_conn "$@"
shift "$conn_shift"
data=${1:?DATA: corpus folder with docs.tsv and queries.tsv}
rows=${2:?ROWS: documents to load}
mixes=${MIXES:-bool prefix phrase web}
shapes=0
[[ " $mixes " == *" shapes "* ]] && shapes=1
pick() { if [ $shapes = 1 ]; then echo "$2"; else echo "$1"; fi; }	# the default without and with shapes
secs=${TIME:-10}
clients=${CLIENTS-$(pick "1 8 32 64" "1 32")}
stmts=${STATEMENTS:-${SHAPES:-count limit}}
nq=${NQ:-$(pick 200 300)}
layouts=${LAYOUTS:-$(pick expr "expr column")}
one=${ONE:-$(pick 0 1)}
one_nq=${ONE_NQ:-$nq}
timeout=${TIMEOUT:-10s}
# the same in milliseconds (a number with ms, s or min, as statement_timeout takes it)
timeout_ms=$(awk -v t="$timeout" 'BEGIN { n = t + 0; u = t; sub(/^[0-9.]+ */, "", u)
	print int(n * (u == "min" ? 60000 : u == "s" ? 1000 : 1)) }')
one_timeout=${ONE_TIMEOUT:-$timeout}
warm_timeout=${WARMUP_TIMEOUT:-1s}
check_timeout=${CHECK_TIMEOUT:-0}
check_jobs=${CHECK_JOBS:-$(( $(nproc) < 8 ? $(nproc) : 8 ))}
mwm=${MAINTENANCE_WORK_MEM:-256MB}
gpx_with=${GPX_WITH:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")
# the drivers of the check and the timings go on past a statement that fails (tsq_run records it)
R=(psql -X -q -h "$host" -p "$port" -d "$db")
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }
sql() { "${P[@]}" -Atc "$1"; }

cmd="TIME=$secs CLIENTS=\"$clients\" MIXES=\"$mixes\" STATEMENTS=\"$stmts\" NQ=$nq LAYOUTS=\"$layouts\""
cmd+=" ONE=$one ONE_NQ=$one_nq TIMEOUT=$timeout${ONE_TIMEOUT:+ ONE_TIMEOUT=$one_timeout} WARMUP_TIMEOUT=$warm_timeout CHECK_TIMEOUT=$check_timeout"
cmd+=" MAINTENANCE_WORK_MEM=$mwm${gpx_with:+ GPX_WITH=\"$gpx_with\"}${CELLS:+ CELLS=\"$CELLS\"}"
cmd+="${CPU_COLUMN:+ CPU_COLUMN=$CPU_COLUMN}${PARALLEL_BUILDS:+ PARALLEL_BUILDS=$PARALLEL_BUILDS}"
cmd+=" bench/tsquery/run.sh -h $host -p $port -d $db $data $rows"
gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2> /dev/null | head -1 || true)
{
	echo "# tsquery: $(basename "$data"), $rows rows; mixes: $mixes; $nq queries a mix; statements: $stmts; layouts: $layouts;"
	echo "# clients: ${clients:-none}; $secs s a cell; one query at a time: $([ "$one" = 1 ] && echo "$one_nq a mix" || echo no); timeout $timeout; $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/^Mem:/ { print $2 }') GB; GPU: ${gpu:-none}"
	sql "SELECT '# ' || version()"
	sql "SELECT '# ' || string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name) FROM pg_settings WHERE name IN
	    ('shared_buffers', 'work_mem', 'random_page_cost', 'effective_cache_size', 'max_parallel_workers_per_gather',
	     'jit', 'plan_cache_mode', 'gpuidx.device', 'shared_preload_libraries')"
	echo
	echo "Command:"
	echo
	echo '```sh'
	echo "$cmd"
	echo '```'
} > "$work/header.md"
# the report of what is measured so far; PARTIAL_REPORT (a file): written
# there after each step too, for a run that may not reach its end
report() {
	cat "$work/header.md"
	"${P[@]}" -At -v layouts="$layouts" -v stmts="$stmts" -v rows="$rows" -v mwm="$mwm" -v timeout="$timeout" \
		-v one_timeout="$one_timeout" -v secs="$secs" -v one_nq="$one_nq" -v gpx_with="$gpx_with" -f "$here/report.sql"
}
partial() {
	[ -z "${PARTIAL_REPORT:-}" ] || { report > "$PARTIAL_REPORT.tmp" && mv "$PARTIAL_REPORT.tmp" "$PARTIAL_REPORT"; }
}

"${P[@]}" -f "$here/runs.sql"

# load and build: each index timed here
build() {	# layout ix
	local tbl am=gpuidx with=${gpx_with:+ WITH ($gpx_with)} start end
	tbl=$(sql "SELECT tsq_table('$1', '$2')")
	[ "$2" = gin ] && { am=gin; with=; }
	log "build: $tbl $am$with"
	start=$(date +%s.%N)
	PGOPTIONS="-c maintenance_work_mem=$mwm" "${P[@]}" \
		-c "CREATE INDEX ${tbl}_ix ON $tbl USING $am ($(sql "SELECT tsq_doc('$1')"))$with"
	end=$(date +%s.%N)
	"${P[@]}" -c "INSERT INTO tsq_meta VALUES ('build_$tbl', round($end - $start, 1))"
}
tag="$data $rows $gpx_with $layouts"
loaded=$(sql "SELECT v FROM tsq_meta WHERE k = 'loaded'" 2> /dev/null || true)
if [ "${RELOAD:-0}" = 1 ] || [ "$loaded" != "$tag" ]; then
	log "load: first $rows rows of $data, layouts $layouts"
	head -n "$rows" "$data/docs.tsv" | "${P[@]}" -v layouts="$layouts" -f "$here/load.sql"
	pids=()
	for layout in $layouts; do
		for ix in gpx gin; do
			if [ "${PARALLEL_BUILDS:-0}" = 1 ]; then build "$layout" "$ix" & pids+=($!); else build "$layout" "$ix"; fi
		done
	done
	for pid in "${pids[@]}"; do wait "$pid"; done
	"${P[@]}" -c "INSERT INTO tsq_meta VALUES ('parallel_builds', '${PARALLEL_BUILDS:-0}')"
	for layout in $layouts; do
		for ix in gpx gin; do "${P[@]}" -c "VACUUM (FREEZE, ANALYZE) $(sql "SELECT tsq_table('$layout', '$ix')")"; done
	done
	"${P[@]}" -c "INSERT INTO tsq_meta VALUES ('loaded', \$t\$$tag\$t\$)"
fi
first=${layouts%% *}
log "queries: $mixes, $nq a mix"
"${P[@]}" -v queries="$data/queries.tsv" -v nq="$nq" -v mixes="$mixes" \
	-v src="$(sql "SELECT tsq_table('$first', 'gin')")" -v doc="$(sql "SELECT tsq_doc('$first')")" -f "$here/queries.sql"
mixes=$(sql "SELECT string_agg(mix, ' ' ORDER BY ord) FROM tsq_mixes")
[ -n "$mixes" ] || { log "no queries"; exit 1; }

# tsq_run's calls, a line each, for pass $1, statement $2, the queries (q)
# that the condition $3 picks and the layouts $4, in their order: a query
# through gpuidx and then GIN, the next query, ...
run_lines() {
	sql "SELECT format('SELECT tsq_run(%L, %L, %L, %L, %L, %s);', '$1', l.layout, i.ix, '$2', q.mix, q.n)
	     FROM tsq_queries q JOIN tsq_mixes m USING (mix),
	          unnest(string_to_array('$4', ' ')) WITH ORDINALITY l(layout, lo), (VALUES (1, 'gpx'), (2, 'gin')) i(io, ix)
	     WHERE $3 ORDER BY l.lo, m.ord, q.n, i.io"
}

# 1. every query through each index, in check_jobs sessions at once: a
# phrase of frequent words rechecks many rows, through either index
log "check: every query's count through each index, $check_jobs sessions"
pids=()
for k in $(seq 0 $((check_jobs - 1))); do
	{ echo "SET enable_seqscan = off; SET statement_timeout = '$check_timeout';"
	  run_lines check count "q.n % $check_jobs = $k" "$layouts"; } > "$work/check.$k.sql"
	"${R[@]}" -f "$work/check.$k.sql" > /dev/null 2>> "$work/check.err" &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
[ ! -s "$work/check.err" ] || { log "check: psql said"; sort "$work/check.err" | uniq -c | head >&2; }
log "check: $(sql "SELECT count(*) FILTER (WHERE status = 'ok') || ' counts, ' || count(*) FILTER (WHERE status = 'timeout')
                    || ' timed out, ' || count(*) FILTER (WHERE status LIKE 'error%') || ' errors' FROM tsq_runs WHERE pass = 'check'")"
partial

# 2. one query at a time: per layout and statement, in a session of its own,
# the warm-up pass and then the timed one
if [ "$one" = 1 ]; then
	for layout in $layouts; do
		for stmt in $stmts; do
			log "one at a time: $layout $stmt, $one_nq queries a mix"
			{ echo "SET statement_timeout = '$warm_timeout';"
			  run_lines warm "$stmt" "q.n <= $one_nq" "$layout"
			  echo "SET statement_timeout = '$one_timeout';"
			  run_lines time "$stmt" "q.n <= $one_nq" "$layout"; } > "$work/one.sql"
			"${R[@]}" -f "$work/one.sql" > /dev/null 2>> "$work/one.err"
			partial
		done
	done
	[ ! -s "$work/one.err" ] || { log "one at a time: psql said"; sort "$work/one.err" | uniq -c | head >&2; }
fi

# the scan nodes a statement runs with: its sixth plan, prepared, the mix's
# first query (the first five are custom plans; EXPLAIN EXECUTE counts as
# one for the plan cache's choice, without running the statement)
plan() {	# mix statement
	local s=$2
	"${P[@]}" -At <<SQL | grep -v 'Bitmap Index Scan' | grep -oE '(Parallel )?(Seq Scan|Bitmap Heap Scan|Custom Scan \([a-z ]+\)|Index Scan|Index Only Scan)' | sort -u | paste -sd+ -
SELECT q FROM tsq_queries WHERE mix = '$1' AND n = 1 \gset
PREPARE s(text) AS $s;
\o /dev/null
EXPLAIN EXECUTE s(:'q'); EXPLAIN EXECUTE s(:'q'); EXPLAIN EXECUTE s(:'q'); EXPLAIN EXECUTE s(:'q'); EXPLAIN EXECUTE s(:'q');
\o
EXPLAIN (COSTS OFF) EXECUTE s(:'q');
SQL
}
statement() { sql "SELECT tsq_statement('$1', '$2', '$3', fn) FROM tsq_mixes WHERE mix = '$4'"; }	# layout ix stmt mix
for layout in $layouts; do
	for mix in $mixes; do
		for stmt in $stmts; do
			"${P[@]}" -c "INSERT INTO tsq_plans VALUES ('$layout', '$mix', '$stmt',
				\$p\$$(plan "$mix" "$(statement "$layout" gpx "$stmt" "$mix")")\$p\$, \$p\$$(plan "$mix" "$(statement "$layout" gin "$stmt" "$mix")")\$p\$)"
		done
	done
done

# 3. pgbench: one cell (script clients [PGOPTIONS]) into tsq_cells as layout mix stmt ix
cell() {
	local r tps p50 p99 txns failed
	r=$(PGOPTIONS="-c statement_timeout=$timeout ${3:-}" PGBENCH_FAILED_MS=$timeout_ms PGBENCH_P99_MIN=100 \
		pgbench_cell "$work" "$1" "$2" "$secs" -h "$host" -p "$port" "$db")
	read -r tps p50 p99 txns failed <<< "$r"
	"${P[@]}" -c "INSERT INTO tsq_cells VALUES ('$4', '$5', '$6', $2, '$7', NULLIF('$tps', '-')::float8,
		NULLIF('$p50', '-')::float8, NULLIF('$p99', '-')::float8, $txns, NULLIF('$failed', '-')::bigint)"
	echo "$r"
}
wanted() { [ -z "${CELLS:-}" ] || [[ " $CELLS " == *" $2:$3 "* ]] || [[ " $CELLS " == *" $1:$2:$3 "* ]]; }	# layout mix stmt
for layout in $layouts; do
	for mix in $mixes; do
		nmix=$(sql "SELECT count(*) FROM tsq_queries WHERE mix = '$mix'")
		for stmt in $stmts; do
			wanted "$layout" "$mix" "$stmt" || continue
			for ix in gpx gin; do
				s=$(statement "$layout" "$ix" "$stmt" "$mix")
				printf '\\set i random(1, %s)\nSELECT q FROM tsq_queries WHERE mix = '"'%s'"' AND n = :i \\gset\n%s;\n' \
					"$nmix" "$mix" "${s//\$1/:q}" > "$work/$ix.pgb"
			done
			for c in $clients; do
				g=$(cell "$work/gpx.pgb" "$c" "" "$layout" "$mix" "$stmt" gpx)
				n=$(cell "$work/gin.pgb" "$c" "" "$layout" "$mix" "$stmt" gin)
				log "$layout $mix $stmt $c clients: gpuidx $g, GIN $n (tps p50 p99 transactions failed)"
				if [ "${CPU_COLUMN:-0}" = 1 ]; then
					u=$(cell "$work/gpx.pgb" "$c" "-c gpuidx.device=cpu" "$layout" "$mix" "$stmt" cpu)
					log "$layout $mix $stmt $c clients: gpuidx on the CPU $u"
				fi
			done
			partial
		done
	done
done
# the floor: the lookup and SELECT 1
if [ -n "$clients" ]; then
	first_mix=${mixes%% *}
	printf '\\set i random(1, %s)\nSELECT q FROM tsq_queries WHERE mix = '"'%s'"' AND n = :i \\gset\nSELECT 1;\n' \
		"$(sql "SELECT count(*) FROM tsq_queries WHERE mix = '$first_mix'")" "$first_mix" > "$work/floor.pgb"
	for c in $clients; do log "floor $c clients: $(cell "$work/floor.pgb" "$c" "" "" "" "" floor)"; done
fi

report
