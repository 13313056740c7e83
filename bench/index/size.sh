#!/usr/bin/env bash
# Where an index's bytes go: gpuidx and GIN built on the same table of each
# corpus, their sizes, build times and ratios, and gpuidx's parts
# (gpuidx_index_stats).
#
#   bench/index/size.sh [-h HOST] [-p PORT] [-d DB] CORPUS...
#
# CORPUS: a folder from scripts/data/fetch (docs.tsv), loaded whole into a
# table (id, body); gpuidx with its defaults (positions stored) and GIN, both
# on to_tsvector('english', body), one build at a time, with
# maintenance_work_mem = MWM (1GB; GIN is larger the less it has).  NOPOS=1
# (the default) also builds gpuidx WITH (positions = off), the smallest index.
# SIZE=N loads N documents instead, scaled past the corpus by
# scripts/data/scale (as bench/index/curve.sh).  GIN=0 skips GIN.  Prints a
# Markdown table on stdout, progress on stderr.
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
echo "| corpus | documents | terms | postings | gpuidx MB | GIN MB | gpuidx / GIN | build s: gpuidx | GIN | without positions MB | / GIN | dictionary | lists | freqs | doc lengths | positions | doc map | dead-doc map | rest |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
"${P[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuidx"
doc="to_tsvector('english', body)"
# build INDEX with USING: its seconds
build() {
	local start end
	start=$(date +%s.%N)
	"${P[@]}" -c "SET maintenance_work_mem = '$mwm'; CREATE INDEX $1 ON size_docs USING $2"
	end=$(date +%s.%N)
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}
ratio() { [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }' || true; }
for data in "$@"; do
	name=$(basename "$data")
	rows=${SIZE:-$(wc -l < "$data/docs.tsv")}
	log "$name: loading $rows documents"
	"${P[@]}" -c "DROP TABLE IF EXISTS size_docs; CREATE TABLE size_docs (id bigint, body text) WITH (autovacuum_enabled = off)"
	load_docs "$data" "$rows" size_docs "${P[@]}"
	"${P[@]}" -c "VACUUM ANALYZE size_docs"
	log "$name: gpuidx build"
	gpx_s=$(build size_gpx "gpuidx ($doc)")
	gin="" gin_s=""
	if [ "${GIN:-1}" = 1 ]; then
		log "$name: GIN build"
		gin_s=$(build size_gin "gin ($doc)")
		gin=$("${P[@]}" -Atc "SELECT pg_relation_size('size_gin')")
	fi
	nopos=""
	if [ "${NOPOS:-1}" = 1 ]; then
		log "$name: gpuidx build, positions = off"
		build size_gpx_nopos "gpuidx ($doc) WITH (positions = off)" > /dev/null
		nopos=$("${P[@]}" -Atc "SELECT pg_relation_size('size_gpx_nopos')")
	fi
	IFS='|' read -r docs terms postings total dict lists freqs lens pos docmap dead < <("${P[@]}" -Atc "
		SELECT docs, terms, postings, total_bytes, dictionary_bytes, list_bytes, freq_bytes, doclen_bytes,
			coalesce(position_bytes, 0), docmap_bytes, deadmap_bytes FROM gpuidx_index_stats('size_gpx')")
	rest=$((total - dict - lists - freqs - lens - pos - docmap - dead))
	echo "| $name | $docs | $terms | $postings | $(mb "$total") | ${gin:+$(mb "$gin")} | $(ratio "$total" "$gin") | $gpx_s | $gin_s |" \
		"${nopos:+$(mb "$nopos")} | $(ratio "$nopos" "$gin") | $(mb "$dict") | $(mb "$lists") | $(mb "$freqs") | $(mb "$lens") | $(mb "$pos") |" \
		"$(mb "$docmap") | $(mb "$dead") | $(mb "$rest") |"
	"${P[@]}" -c "DROP TABLE size_docs"
done
