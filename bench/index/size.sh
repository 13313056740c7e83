#!/usr/bin/env bash
# Where an index's bytes go: gpuidx and GIN built on the same table of each
# corpus, their sizes and ratio, and gpuidx's parts (gpuidx_index_stats).
#
#   bench/index/size.sh [-h HOST] [-p PORT] [-d DB] CORPUS...
#
# CORPUS: a folder from scripts/data/fetch (docs.tsv), loaded whole into a
# table (id, body); gpuidx on body, GIN on to_tsvector('english', body), both
# with maintenance_work_mem = MWM (1GB).  SIZE=N loads N documents instead,
# scaled past the corpus by scripts/data/scale (as bench/index/curve.sh).
# GIN=0 skips GIN.  Prints a Markdown table on stdout, progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
parse_conn "$@"
shift "$conn_shift"
[ $# -gt 0 ] || { echo "usage: $0 [-h HOST] [-p PORT] [-d DB] CORPUS..." >&2; exit 2; }
mwm=${MWM:-1GB}
P=(psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -d "$db")
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

echo "# index sizes; $(date -u +%Y-%m-%dT%H:%MZ); maintenance_work_mem = $mwm"
"${P[@]}" -Atc "SELECT '# ' || version()"
"${P[@]}" -Atc "SELECT '# gpuidx ' || extversion FROM pg_extension WHERE extname = 'gpuidx'" 2> /dev/null || true
echo
echo "| corpus | documents | terms | postings | gpuidx MB | GIN MB | gpuidx / GIN | dictionary | lists | freqs | doc lengths | doc map | dead-doc map | rest |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
"${P[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuidx"
for data in "$@"; do
	name=$(basename "$data")
	rows=${SIZE:-$(wc -l < "$data/docs.tsv")}
	log "$name: loading $rows documents"
	"${P[@]}" -c "DROP TABLE IF EXISTS size_docs; CREATE TABLE size_docs (id bigint, body text) WITH (autovacuum_enabled = off)"
	load_docs "$data" "$rows" size_docs "${P[@]}"
	log "$name: gpuidx build"
	"${P[@]}" -c "SET maintenance_work_mem = '$mwm'; CREATE INDEX size_gpx ON size_docs USING gpuidx (body)"
	gin=""
	if [ "${GIN:-1}" = 1 ]; then
		log "$name: GIN build"
		"${P[@]}" -c "SET maintenance_work_mem = '$mwm'; CREATE INDEX size_gin ON size_docs USING gin (to_tsvector('english', body))"
		gin=$("${P[@]}" -Atc "SELECT pg_relation_size('size_gin')")
	fi
	IFS='|' read -r docs terms postings total dict lists freqs lens docmap dead < <("${P[@]}" -Atc "
		SELECT docs, terms, postings, total_bytes, dictionary_bytes, list_bytes, freq_bytes, doclen_bytes,
			docmap_bytes, deadmap_bytes FROM gpuidx_index_stats('size_gpx')")
	rest=$((total - dict - lists - freqs - lens - docmap - dead))
	ratio=""
	[ -n "$gin" ] && ratio=$(awk -v a="$total" -v b="$gin" 'BEGIN { printf "%.3f", a / b }')
	echo "| $name | $docs | $terms | $postings | $(mb "$total") | ${gin:+$(mb "$gin")} | $ratio | $(mb "$dict") | $(mb "$lists") | $(mb "$freqs") | $(mb "$lens") | $(mb "$docmap") | $(mb "$dead") | $(mb "$rest") |"
	"${P[@]}" -c "DROP TABLE size_docs"
done
