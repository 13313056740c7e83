#!/usr/bin/env bash
# CREATE INDEX with parallel workers against the serial build and GIN's, on
# the same table: time, size, and whether the pages are the serial build's.
#
#   bench/index/parallel_build.sh [-h HOST] [-p PORT] [-d DB] DATA [ROWS]
#
# DATA is a corpus folder (scripts/data/fetch); ROWS (all by default) more
# than the corpus holds are made by scripts/data/scale.  The table
# (id, body) is loaded once per DATA and ROWS.  Builds, each timed alone,
# with maintenance_work_mem = MWM (1GB): GIN on to_tsvector('english', body)
# (PostgreSQL 15 builds GIN serially; GIN=0 leaves it out), then gpuidx on body with
# max_parallel_maintenance_workers = each of WORKERS ("0 1 2"; the table's
# parallel_workers is set to the same number, so PostgreSQL asks for exactly
# that many).  Every gpuidx build's pages but the metapage are compared with
# the serial build's (pageinspect; each page past its LSN and checksum).
# Prints a Markdown report on stdout, progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
parse_conn "$@"
shift "$conn_shift"
data=${1:?DATA: corpus folder with docs.tsv}
rows=${2:-0}
workers=${WORKERS:-0 1 2}
mwm=${MWM:-1GB}
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }
now() { date +%s.%N; }

corpus_rows=$(wc -l < "$data/docs.tsv")
[ "$rows" -gt 0 ] || rows=$corpus_rows
tag="$data $rows"
"${P[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuidx; CREATE EXTENSION IF NOT EXISTS pageinspect;
	CREATE TABLE IF NOT EXISTS pb_tag (tag text)"
if [ "$("${P[@]}" -Atc "SELECT tag FROM pb_tag")" != "$tag" ]; then
	log "loading $rows rows"
	"${P[@]}" -c "DROP TABLE IF EXISTS pb_docs; CREATE TABLE pb_docs (id bigint, body text) WITH (autovacuum_enabled = off)"
	load_docs "$data" "$rows" pb_docs "${P[@]}"
	"${P[@]}" -c "VACUUM ANALYZE pb_docs"
	"${P[@]}" -c "TRUNCATE pb_tag; INSERT INTO pb_tag VALUES ('$tag')"
fi

echo "# parallel build: $(basename "$data"), $rows rows$([ "$rows" -gt "$corpus_rows" ] && echo " (scripts/data/scale from its $corpus_rows)"); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"${P[@]}" -Atc "SELECT '# ' || version()"
"${P[@]}" -Atc "SELECT '# table: ' || pg_size_pretty(pg_relation_size('pb_docs')) || '; maintenance_work_mem = $mwm; ' ||
	string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
	WHERE name IN ('shared_buffers', 'max_worker_processes', 'max_parallel_workers')"
echo
echo "| index | workers | build s | size MB | pages differing from the serial build |"
echo "|---|---:|---:|---:|---:|"

build() {	# name workers definition -> seconds
	local t0 t1
	"${P[@]}" -c "DROP INDEX IF EXISTS $1"
	"${P[@]}" -c "ALTER TABLE pb_docs SET (parallel_workers = $(( $2 > 0 ? $2 : 1 )))"
	"${P[@]}" -c "CHECKPOINT"
	t0=$(now)
	"${P[@]}" -c "SET maintenance_work_mem = '$mwm'; SET max_parallel_maintenance_workers = $2; CREATE INDEX $1 ON pb_docs $3"
	t1=$(now)
	echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }'
}
size() { "${P[@]}" -Atc "SELECT round(pg_relation_size('$1') / 1048576.0)"; }

if [ "${GIN:-1}" = 1 ]; then
	s=$(build pb_gin 0 "USING gin (to_tsvector('english', body))")
	log "GIN: $s s"
	echo "| GIN | 0 | $s | $(size pb_gin) | |"
	"${P[@]}" -c "DROP INDEX pb_gin"
fi
for w in $workers; do
	s=$(build "pb_gpx_$w" "$w" "USING gpuidx (body)")
	mb=$(size "pb_gpx_$w")
	if [ "$w" = "${workers%% *}" ]; then
		differ="(the reference)"
		ref=pb_gpx_$w
	else
		differ=$("${P[@]}" -Atc "SELECT count(*) FROM generate_series(1, pg_relation_size('$ref') / 8192 - 1) blk
			WHERE substr(get_raw_page('$ref', blk), 11) IS DISTINCT FROM substr(get_raw_page('pb_gpx_$w', blk), 11)")
		[ "$(size "$ref")" = "$(size "pb_gpx_$w")" ] || differ="$differ (sizes differ)"
		"${P[@]}" -c "DROP INDEX pb_gpx_$w"
	fi
	log "gpuidx, $w workers: $s s, $differ"
	echo "| gpuidx | $w | $s | $mb | $differ |"
done
"${P[@]}" -c "DROP INDEX IF EXISTS $ref; ALTER TABLE pb_docs RESET (parallel_workers)"
