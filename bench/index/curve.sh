#!/usr/bin/env bash
# The cost curve: gpuidx (and GIN where its build is asked for) on
# debian-paths scaled to each of SIZES documents, one table at a time:
# build time, index size, and count(*) and ranked top-10 latency and
# throughput over the corpus's real queries.
#
#   bench/index/curve.sh [-h HOST] [-p PORT] [-d DB] DATA
#
# DATA: a corpus folder (scripts/data/fetch); SIZES ("7316650 25000000
# 50000000 100000000") are made from it by scripts/data/scale (the corpus
# itself first).  Per size: the table loaded, gpuidx built on body with
# maintenance_work_mem = MWM (1GB) and PostgreSQL's choice of parallel
# workers; GIN on to_tsvector('english', body) at the sizes of GIN_SIZES
# (the first size; none: no GIN).  Then pgbench -M prepared, TIME (10) s a
# cell, CLIENTS ("1 32"), a random one of NQ (200) queries per transaction
# passed as the statement's parameter, default planner settings:
#   count   gpuidx: SELECT count(*) WHERE body @@& $1
#           GIN:    SELECT count(*) WHERE to_tsvector('english', body) @@ plainto_tsquery('english', $1)
#   ranked  gpuidx: ORDER BY body <=> $1 LIMIT 10
# DEVICES ("worker cpu", say): gpuidx's cells once for each gpuidx.device,
# a row each (empty: the server's setting, one row); a device may carry
# settings of its own, comma-separated ("worker,gpu_rank_backlog=0"); with the GPU worker
# loaded, its counters after each row go to stderr.  WRITES=1: at the
# largest size (when GIN is not built there), after its cells, the index
# lives on: a hundredth more rows inserted (copies of the first ones under
# new ids), the pending area merged, a tenth of the rows deleted, VACUUM,
# and gpuidx_verify (unless VERIFY=0), each timed, then the cells at the
# largest of CLIENTS again, AFTER_TIME (TIME) s each: every new connection
# counts the dead docs in its terms' lists once, and the first ranked query
# sends the worker the segment's doc lengths again, so short cells measure
# mostly that.
# GIN partitioned: an entry of GIN_SIZES may be SIZE:P, and GIN_PARTITIONS=P
# (> 1) makes P the default: GIN is built on a copy of the table partitioned
# by id ranges into P partitions, one CREATE INDEX per partition at once
# (GIN's build in PostgreSQL 15 is one process: at 100M documents it takes
# most of an hour, this about the time of one partition's), and counted
# through the partitioned table: every query reads each partition's index,
# as much posting data as one index over all rows holds, plus a scan's fixed
# cost per partition (on all 7.3M debian-paths, 16 partitions counted at
# 0.68x to 0.78x one index's rate), so measure both at a size where both
# build: GIN_SIZES="7316650 7316650:16 100000000:16" builds one GIN and then
# 16 partitions at 7.3M, 16 partitions at 100M.
# CHECK=1 compares every query's answers through the worker with the
# backend's before the cells (check_answers, below).
# Prints a Markdown report on stdout, progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
parse_conn "$@"
shift "$conn_shift"
data=${1:?DATA: corpus folder with docs.tsv and queries.tsv}
sizes=${SIZES:-7316650 25000000 50000000 100000000}
gin_sizes=${GIN_SIZES:-${sizes%% *}}
[ "$gin_sizes" = none ] && gin_sizes=""
secs=${TIME:-10}
after_secs=${AFTER_TIME:-$secs}
clients=${CLIENTS:-1 32}
nq=${NQ:-200}
mwm=${MWM:-1GB}
gin_parts=${GIN_PARTITIONS:-1}
devices=${DEVICES:-}
writes=${WRITES:-0}
for e in $gin_sizes $gin_parts; do
	case ${e#*:} in
	'' | *[!0-9]* | 0) echo "curve.sh: GIN_SIZES ($gin_sizes) and GIN_PARTITIONS ($gin_parts) take positive numbers" >&2; exit 2 ;;
	esac
done
# shellcheck disable=SC2086
largest=$(printf '%s\n' $sizes | sort -n | tail -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }
now() { date +%s.%N; }
corpus_rows=$(wc -l < "$data/docs.tsv")

echo "# cost curve: $(basename "$data") scaled to $sizes documents (scripts/data/scale; the first $corpus_rows are the corpus); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ { print $2 }') GB"
"${P[@]}" -Atc "SELECT '# ' || version()"
"${P[@]}" -Atc "SELECT '# maintenance_work_mem = $mwm; ' || string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'max_parallel_maintenance_workers', 'max_parallel_workers_per_gather', 'gpuidx.device')"
echo "# $nq queries of queries.tsv; pgbench -M prepared, $secs s a cell; tps, then p50 / p99 in ms"
echo

"${P[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuidx"
"${P[@]}" -c "DROP TABLE IF EXISTS curve_q; CREATE TABLE curve_q (n int PRIMARY KEY, q text)"
head -n "$nq" "$data/queries.tsv" | "${P[@]}" -c "\\copy curve_q FROM pstdin WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')"

cell() {	# statement clients [device] -> "tps p50 p99 transactions failed"
	printf '\\set n random(1, %s)\nSELECT q FROM curve_q WHERE n = :n \\gset\n%s;\n' "$nq" "$1" > "$work/s.sql"
	local opts="" o
	# a device with settings: worker,gpu_rank_backlog=0 is gpuidx.device=worker, gpuidx.gpu_rank_backlog=0
	if [ -n "${3:-}" ]; then
		opts="-c gpuidx.device=${3%%,*}"
		[ "${3#*,}" = "$3" ] || for o in $(echo "${3#*,}" | tr , ' '); do opts="$opts -c gpuidx.$o"; done
	fi
	PGOPTIONS="$opts" pgbench_cell "$work" "$work/s.sql" "$2" "$secs" -h "$host" -p "$port" "$db"
}
cells() {	# count ranked device clients... -> " tps (p50 / p99) |" per cell
	local count=$1 ranked=$2 device=$3 c tps p50 p99 out=""
	shift 3
	for c in "$@"; do
		read -r tps p50 p99 _ < <(cell "$count" "$c" "$device")
		log "$n $kind${device:+ ($device)} count $c clients: $tps tps, p50 $p50, p99 $p99"
		out="$out $tps ($p50 / $p99) |"
	done
	for c in "$@"; do
		if [ -n "$ranked" ]; then
			read -r tps p50 p99 _ < <(cell "$ranked" "$c" "$device")
			log "$n $kind${device:+ ($device)} ranked $c clients: $tps tps, p50 $p50, p99 $p99"
			out="$out $tps ($p50 / $p99) |"
		else
			out="$out |"
		fi
	done
	echo "$out"
}
worker_counters() {	# the GPU worker's counters so far, when it is loaded
	"${P[@]}" -Atc "SELECT 'worker: ' || row_to_json(s)::text FROM (SELECT engine, device, batches, requests,
		worker_rounds, backend_rounds, cache_hits, cache_misses, cache_evictions, cache_bytes, fallback_arena_full,
		fallback_timeout, fallback_engine_error, batch_device_ms FROM gpuidx_worker_stats) s" 2> /dev/null |
		while read -r l; do log "$l"; done
	# what placed the ranked segments: each shape and size's costs a posting
	"${P[@]}" -Atc "SELECT 'placement: ' || row_to_json(p)::text FROM gpuidx_rank_placement p" 2> /dev/null |
		while read -r l; do log "$l"; done
}
# CHECK=1: every query's count and ranked top 10 (any term) through the
# worker, every ranking it may take sent to it (gpu_rank_backlog = 0,
# gpu_min_postings = 0: a superuser's settings), against the backend's
# (device = cpu), before the cells; the worker's counters after show how
# many it answered and what its cache evicted
check_answers() {
	log "check: $nq queries' count and ranked top 10, worker against backend"
	"${P[@]}" -Atc "DO \$\$
	DECLARE
		r record; c_w bigint; c_b bigint; t_w bigint[]; t_b bigint[]; bad int := 0; done int := 0;
	BEGIN
		FOR r IN SELECT q FROM curve_q ORDER BY n LOOP
			PERFORM set_config('gpuidx.device', 'worker', true), set_config('gpuidx.gpu_rank_backlog', '0', true),
				set_config('gpuidx.gpu_min_postings', '0', true);
			SELECT count(*) INTO c_w FROM curve_docs WHERE body @@& r.q;
			SELECT array_agg(id) INTO t_w FROM (SELECT id FROM curve_docs ORDER BY body <=> r.q LIMIT 10) s;
			PERFORM set_config('gpuidx.device', 'cpu', true);
			SELECT count(*) INTO c_b FROM curve_docs WHERE body @@& r.q;
			SELECT array_agg(id) INTO t_b FROM (SELECT id FROM curve_docs ORDER BY body <=> r.q LIMIT 10) s;
			done := done + 1;
			IF c_w IS DISTINCT FROM c_b OR t_w IS DISTINCT FROM t_b THEN
				bad := bad + 1;
				RAISE WARNING 'check: % differs: count % against %, top 10 % against %', r.q, c_w, c_b, t_w, t_b;
			END IF;
		END LOOP;
		RAISE WARNING 'check: % of % queries differ', bad, done;
	END \$\$" > "$work/check.log" 2>&1 || { cat "$work/check.log" >&2; log "check: could not run"; exit 1; }
	while read -r l; do log "$l"; done < "$work/check.log"
	worker_counters
}
timed() {	# label SQL: runs it, logs and appends "| label | seconds | output |" to $work/writes.md
	local t0 t1 out
	t0=$(now)
	out=$(PGOPTIONS="-c maintenance_work_mem=$mwm" "${P[@]}" -Atc "$2")
	t1=$(now)
	log "$1: $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') s ${out:+($out)}"
	echo "| $1 | $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') | ${out} |" >> "$work/writes.md"
}

# GIN over a copy of curve_docs partitioned by id into $2 ranges:
# the copy and each partition's build at once; sets build (s), workers (the
# partitions built at once), mb, and count (over the partitioned table)
gin_partitioned() {
	local n=$1 nparts=$2 i lo hi step pids=()
	step=$(( (n + nparts - 1) / nparts ))
	log "$n documents: gin, a copy in $nparts partitions"
	"${P[@]}" -c "DROP TABLE IF EXISTS curve_gin; CREATE TABLE curve_gin (id bigint, body text) PARTITION BY RANGE (id)"
	for ((i = 0; i < nparts; i++)); do
		lo=$((i * step + 1)); hi=$(((i + 1) * step + 1))
		[ $i = 0 ] && lo=MINVALUE
		[ $i = $((nparts - 1)) ] && hi=MAXVALUE
		"${P[@]}" -c "CREATE TABLE curve_gin_$i PARTITION OF curve_gin FOR VALUES FROM ($lo) TO ($hi) WITH (autovacuum_enabled = off)"
	done
	for ((i = 0; i < nparts; i++)); do
		"${P[@]}" -c "INSERT INTO curve_gin SELECT id, body FROM curve_docs WHERE id > $((i * step)) AND id <= $(((i + 1) * step))" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	[ "$("${P[@]}" -Atc "SELECT count(*) = (SELECT count(*) FROM curve_docs) FROM curve_gin")" = t ] ||
		{ log "gin: the partitioned copy lacks rows"; exit 1; }
	"${P[@]}" -c "VACUUM ANALYZE curve_gin"
	log "$n documents: gin build, $nparts partitions at once"
	"${P[@]}" -c "CHECKPOINT"
	pids=()
	t0=$(now)
	for ((i = 0; i < nparts; i++)); do
		"${P[@]}" -c "SET maintenance_work_mem = '$mwm'; CREATE INDEX ON curve_gin_$i $def" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	t1=$(now)
	build=$(echo "$t0 $t1" | awk '{ printf "%.0f", $2 - $1 }')
	workers=$nparts
	mb=$("${P[@]}" -Atc "SELECT round(sum(pg_relation_size(x.indexrelid)) / 1048576.0) FROM pg_inherits h
		JOIN pg_index x ON x.indrelid = h.inhrelid WHERE h.inhparent = 'curve_gin'::regclass")
	count="SELECT count(*) FROM curve_gin WHERE to_tsvector('english', body) @@ plainto_tsquery('english', :q)"
}

header="| documents | index | build s | workers | size MB |"
sep="|---:|---|---:|---:|---:|"
for c in $clients; do header="$header count $c cl. |"; sep="$sep---:|"; done
for c in $clients; do header="$header ranked $c cl. |"; sep="$sep---:|"; done
echo "$header"
echo "$sep"
for n in $sizes; do
	log "$n documents: loading"
	"${P[@]}" -c "DROP TABLE IF EXISTS curve_docs; CREATE TABLE curve_docs (id bigint, body text) WITH (autovacuum_enabled = off)"
	load_docs "$data" "$n" curve_docs "${P[@]}"
	"${P[@]}" -c "VACUUM ANALYZE curve_docs"
	# the indexes at this size: gpuidx, then each GIN of GIN_SIZES (gin:P, P partitions)
	variants=gpuidx
	for e in $gin_sizes; do
		[ "${e%%:*}" = "$n" ] || continue
		p=$gin_parts
		[ "${e#*:}" = "$e" ] || p=${e#*:}
		variants="$variants gin:$p"
	done
	for variant in $variants; do
		kind=${variant%%:*} parts=${variant#*:}
		if [ $kind = gin ]; then
			def="USING gin (to_tsvector('english', body))"
			count="SELECT count(*) FROM curve_docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', :q)"
			ranked=""
		else
			def="USING gpuidx (body)"
			count="SELECT count(*) FROM curve_docs WHERE body @@& :q"
			ranked="SELECT id FROM curve_docs ORDER BY body <=> :q LIMIT 10"
		fi
		if [ $kind = gin ] && [ "$parts" -gt 1 ]; then
			gin_partitioned "$n" "$parts"
		else
			log "$n documents: $kind build"
			"${P[@]}" -c "CHECKPOINT"
			t0=$(now)
			workers=$("${P[@]}" -c "SET maintenance_work_mem = '$mwm'; SET client_min_messages = debug1; CREATE INDEX curve_idx ON curve_docs $def" 2>&1 |
				sed -n 's/.*in [0-9]* ranges, \([0-9]*\) of [0-9]* parallel workers launched.*/\1/p')
			t1=$(now)
			build=$(echo "$t0 $t1" | awk '{ printf "%.0f", $2 - $1 }')
			mb=$("${P[@]}" -Atc "SELECT round(pg_relation_size('curve_idx') / 1048576.0)")
		fi
		[ $kind = gpuidx ] && [ "${CHECK:-0}" = 1 ] && check_answers
		for device in ${devices:-""}; do
			[ $kind = gin ] && [ "$device" != "${devices%% *}" ] && continue
			label=$kind
			[ $kind = gpuidx ] && [ -n "$device" ] && label="$kind ($device)"
			[ $kind = gin ] && [ "$parts" -gt 1 ] && label="gin ($parts partitions)"
			[ $kind = gin ] && device=""
			# shellcheck disable=SC2086
			echo "| $n | $label | $build | ${workers:-0} | $mb |$(cells "$count" "$ranked" "$device" $clients)"
			[ $kind = gpuidx ] && worker_counters
		done
		if [ $kind = gpuidx ] && [ "$writes" = 1 ] && [ "$n" = "$largest" ]; then
			case " $variants " in
			*" gin:"*) log "WRITES: skipped, GIN is built on this table after gpuidx" ;;
			*)
				: > "$work/writes.md"
				timed "INSERT of $((n / 100)) rows" "INSERT INTO curve_docs SELECT id + $n, body FROM curve_docs WHERE id <= $((n / 100))"
				timed "gpuidx_merge_pending" "SELECT gpuidx_merge_pending('curve_idx')"
				timed "DELETE of a tenth of the rows" "DELETE FROM curve_docs WHERE id % 10 = 0"
				timed "VACUUM" "VACUUM curve_docs"
				[ "${VERIFY:-1}" = 0 ] || timed "gpuidx_verify" "SELECT gpuidx_verify('curve_idx')"
				echo
				echo "Writes at $n documents (maintenance_work_mem = $mwm):"
				echo
				echo "| step | seconds | result |"
				echo "|---|---:|---|"
				cat "$work/writes.md"
				echo
				echo "Then, index $("${P[@]}" -Atc "SELECT round(pg_relation_size('curve_idx') / 1048576.0)") MB:"
				echo
				echo "| index | count ${clients##* } cl. | ranked ${clients##* } cl. |"
				echo "|---|---:|---:|"
				for device in ${devices:-""}; do
					echo "| $kind${device:+ ($device)} |$(secs=$after_secs cells "$count" "$ranked" "$device" "${clients##* }")"
					worker_counters
				done
				;;
			esac
		fi
		if [ $kind = gin ] && [ "$parts" -gt 1 ]; then
			"${P[@]}" -c "DROP TABLE curve_gin"
		else
			"${P[@]}" -c "DROP INDEX curve_idx"
		fi
	done
done
"${P[@]}" -c "DROP TABLE curve_docs, curve_q"
