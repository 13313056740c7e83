#!/usr/bin/env bash
# scale.sh: gpuidx on a generated table of ROWS rows (default 100,000,000):
# CREATE INDEX, a 100 MB document, a million-row INSERT, a merge, and a
# DELETE of a tenth of the rows with VACUUM, each with the peak private
# memory of the backend doing it (anonymous RSS, sampled every 0.1 s; shared
# buffers excluded) beside the setting it must stay within.  Writes
# bench/results/scale.md.  Run as root on Debian 12 (a throwaway cluster runs
# as postgres under $WORK); about an hour on 2 cores, ~60 GB of disk.
#
#   ROWS=N         rows to generate (default 100000000)
#   WORK=DIR       where the cluster lives (default /var/tmp/gpuidx-scale)
#   MWM=SIZE       maintenance_work_mem (default 64MB, PostgreSQL's)
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$(pwd)
rows=${ROWS:-100000000}
work=${WORK:-/var/tmp/gpuidx-scale}
mwm=${MWM:-64MB}
port=5488
bindir=$(pg_config --bindir)
out=bench/results/scale.md
log=bench/build/scale.log
mkdir -p bench/build bench/results
: > "$log"

note() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$log" >&2; }

make -s -j"$(nproc)" && make -s install
rm -rf "$work"
mkdir -p "$work"
chown postgres "$work"
as_pg() { su postgres -s /bin/bash -c "$*"; }
as_pg "$bindir/initdb -D '$work/data' -A trust >/dev/null"
cat >> "$work/data/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$work'
listen_addresses = ''
shared_buffers = 2GB
maintenance_work_mem = $mwm
work_mem = 4MB
max_wal_size = 64GB
checkpoint_timeout = 1h
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
jit = off
EOF
as_pg "$bindir/pg_ctl -D '$work/data' -l '$work/server.log' -w start >/dev/null"
trap 'as_pg "$bindir/pg_ctl -D \"$work/data\" -m fast stop" >/dev/null 2>&1 || true' EXIT
psql_cmd=(psql -X -q -At -h "$work" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1)

# run SQL in a backend of its own while sampling that backend's private
# memory; prints "seconds peak_kb"
measure()
{
	local name=$1 sql=$2 pid peak=0 start end
	start=$(date +%s.%N)
	PGAPPNAME="scale_$name" "${psql_cmd[@]}" -c "$sql" >>"$log" 2>&1 &
	local client=$!
	pid=
	while [ -z "$pid" ] && kill -0 "$client" 2>/dev/null; do
		pid=$("${psql_cmd[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'scale_$name'" || true)
		sleep 0.05
	done
	while kill -0 "$client" 2>/dev/null; do
		if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
			local kb
			kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
		fi
		sleep 0.1
	done
	wait "$client"
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" -v p="$peak" 'BEGIN { printf "%.1f %d\n", e - s, p }'
}

note "generating $rows rows"
"${psql_cmd[@]}" <<'EOF'
CREATE EXTENSION gpuidx;
CREATE TABLE docs (id int, body text) WITH (autovacuum_enabled = off);
EOF
# words of every frequency: 7 in a seventh of the rows each, 97 in about 1%,
# 10,007 rare ones, 1,000,003 very rare, and one word of each row's own
chunk=10000000
for ((from = 1; from <= rows; from += chunk)); do
	to=$((from + chunk - 1)); [ "$to" -gt "$rows" ] && to=$rows
	"${psql_cmd[@]}" -c "INSERT INTO docs SELECT g, 'w' || (g % 7) || ' f' || ((g::bigint * 31) % 97)
		|| ' m' || ((g::bigint * 2654435761) % 10007) || ' r' || ((g::bigint * 40503) % 1000003)
		|| ' u' || g FROM generate_series($from, $to) g"
	note "  $to rows"
done
"${psql_cmd[@]}" -c "VACUUM ANALYZE docs"
table_size=$("${psql_cmd[@]}" -c "SELECT pg_size_pretty(pg_relation_size('docs'))")

note "CREATE INDEX"
read -r build_s build_kb < <(measure build "CREATE INDEX docs_idx ON docs USING gpuidx (body)")
build_stats=$("${psql_cmd[@]}" -c "SELECT build_runs || ' runs spilled, accumulator and writer peak ' || build_peak_kb || ' kB, ' || pg_size_pretty(total_bytes) || ', ' || terms || ' terms, ' || postings || ' postings' FROM gpuidx_index_stats('docs_idx')")
note "  $build_s s, peak $build_kb kB; $build_stats"

# each INSERT also into a table without the index: PostgreSQL's own share
# (the statement's executor, the 100 MB value built, toasted and copied)
"${psql_cmd[@]}" -c "CREATE TABLE plain (id int, body text) WITH (autovacuum_enabled = off)"
big_doc="SELECT 0, string_agg('bigword' || (g % 200000), ' ') FROM generate_series(1, 12000000) g"
rows_sql="SELECT g, 'w' || (g % 7) || ' newrow u' || g FROM generate_series($rows + 1, $rows + 1000000) g"

note "a 100 MB document"
read -r doc_s doc_kb < <(measure bigdoc "INSERT INTO docs $big_doc")
read -r pdoc_s pdoc_kb < <(measure plaindoc "INSERT INTO plain $big_doc")
note "  $doc_s s, peak $doc_kb kB (without the index: $pdoc_s s, $pdoc_kb kB)"

note "a million rows in one INSERT"
read -r ins_s ins_kb < <(measure insert "INSERT INTO docs $rows_sql")
read -r pins_s pins_kb < <(measure plaininsert "INSERT INTO plain $rows_sql")
note "  $ins_s s, peak $ins_kb kB (without the index: $pins_s s, $pins_kb kB)"

note "gpuidx_merge_pending"
read -r merge_s merge_kb < <(measure merge "SELECT gpuidx_merge_pending('docs_idx')")
note "  $merge_s s, peak $merge_kb kB"

note "DELETE a tenth, VACUUM"
"${psql_cmd[@]}" -c "DELETE FROM docs WHERE id % 10 = 3"
read -r vac_s vac_kb < <(measure vacuum "VACUUM docs")
vac_stats=$("${psql_cmd[@]}" -c "SELECT segments || ' segments, ' || docs || ' docs, ' || dead_docs || ' dead, ' || pending_entries || ' pending' FROM gpuidx_index_stats('docs_idx')")
note "  $vac_s s, peak $vac_kb kB; $vac_stats"

note "queries"
queries=$("${psql_cmd[@]}" <<'EOF'
\timing on
SELECT 'w3 f40', count(*) FROM docs WHERE body @@& 'w3 f40';
SELECT 'm77 w1', count(*) FROM docs WHERE body @@& 'm77 w1';
SELECT 'r12345', count(*) FROM docs WHERE body @@& 'r12345';
SELECT 'u5000000', count(*) FROM docs WHERE body @@& 'u5000000';
SELECT 'bigword77', count(*) FROM docs WHERE body @@& 'bigword77';
SELECT 'newrow w2', count(*) FROM docs WHERE body @@& 'newrow w2';
EOF
)
note "$queries"

mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
{
	echo "# gpuidx at scale: $(printf "%'d" "$rows") generated rows"
	echo
	echo "- run: \`ROWS=$rows MWM=$mwm bash bench/index/scale.sh\` ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo "- machine: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB"
	echo "- tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (with uncommitted changes)')"
	echo "- server: shared_buffers = 2GB, maintenance_work_mem = $mwm, work_mem = 4MB, fsync off (a benchmark), autovacuum off"
	echo "- table: $(printf "%'d" "$rows") rows of five words ($table_size): 7 words in a seventh of the rows each, 97 in about 1%, 10,007 in 0.01%, 1,000,003 in about 100 rows each, and one word per row (so $(printf "%'d" "$rows") distinct words)"
	echo "- memory: the peak anonymous RSS of the backend doing the work (private memory: shared buffers excluded), sampled every 0.1 s; it includes PostgreSQL's own (catalog caches, the executor, VACUUM's dead-TID array) besides gpuidx's"
	echo
	echo "| work | setting it must stay within | peak private memory | the same without the index | time (without) |"
	echo "|---|---|---:|---:|---:|"
	echo "| CREATE INDEX | maintenance_work_mem = $mwm | $(mb "$build_kb") MB | | ${build_s%.*} s |"
	echo "| INSERT of one 100 MB document (200,000 distinct words) | work_mem = 4MB beyond PostgreSQL's own | $(mb "$doc_kb") MB | $(mb "$pdoc_kb") MB | ${doc_s%.*} s (${pdoc_s%.*} s) |"
	echo "| INSERT of 1,000,000 rows (merges past pending_list_limit) | work_mem = 4MB beyond PostgreSQL's own | $(mb "$ins_kb") MB | $(mb "$pins_kb") MB | ${ins_s%.*} s (${pins_s%.*} s) |"
	echo "| gpuidx_merge_pending | maintenance_work_mem = $mwm | $(mb "$merge_kb") MB | | ${merge_s%.*} s |"
	echo "| VACUUM after deleting a tenth of the rows | maintenance_work_mem = $mwm (PostgreSQL's dead-TID array included) | $(mb "$vac_kb") MB | | ${vac_s%.*} s |"
	echo
	echo "Index after the build: $build_stats."
	echo "After VACUUM: $vac_stats."
	echo
	echo "Queries through the index afterwards (term, rows, time):"
	echo
	echo '```'
	echo "$queries"
	echo '```'
	echo
	echo "Progress log: \`bench/build/scale.log\`."
} > "$out"
note "wrote $out"
