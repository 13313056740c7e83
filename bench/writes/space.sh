#!/bin/bash
# The index's size under inserts: a table of every EVERY-th line of a
# corpus, a gpuidx expression index on to_tsvector('english', body), CLIENTS
# clients inserting copies of random rows for SECS seconds, then VACUUM,
# then REINDEX of the same index: its size and gpuidx_index_stats at each
# step.  Appends one line to $OUT/space.csv.
#
# Settings (environment):
#   BIN        PostgreSQL's bin directory (default: pg_config --bindir)
#   PGHOST, PGPORT, DB   the server (default /tmp, 5432, postgres)
#   CORPUS     debian-paths (default), under GPUIDX_DATA (~/.cache/gpuidx-data)
#   EVERY      every EVERY-th line of the corpus (24: 304,860 paths)
#   CLIENTS (8), SECS (20), PENDING (the index's pending_list_limit, kB; 4096)
#   PARALLEL   VACUUM's PARALLEL option (default: none given, as a plain VACUUM)
#   LABEL      names the build in space.csv
set -euo pipefail

BIN=${BIN:-$(pg_config --bindir)}
export PGHOST=${PGHOST:-/tmp} PGPORT=${PGPORT:-5432}
DB=${DB:-postgres}
DOCS=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}/${CORPUS:-debian-paths}/docs.tsv
EVERY=${EVERY:-24}
CLIENTS=${CLIENTS:-8}
SECS=${SECS:-20}
PENDING=${PENDING:-4096}
LABEL=${LABEL:-$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo build)}
OUT=${OUT:-$(cd "$(dirname "$0")/../.." && pwd)/bench/results/writes}
WORK=${WORK:-/tmp/gpuidx-space-$PGPORT}
P="$BIN/psql -X -q -At -v ON_ERROR_STOP=1 -d $DB"
VACUUM="VACUUM${PARALLEL:+ (PARALLEL $PARALLEL)} sp_docs"

mkdir -p "$OUT" "$WORK"
chmod 755 "$WORK"
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }

awk "NR % $EVERY == 0" "$DOCS" > "$WORK/docs.tsv"
$P <<SQL
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP TABLE IF EXISTS sp_docs;
CREATE TABLE sp_docs (id int, body text);
COPY sp_docs FROM '$WORK/docs.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
CREATE INDEX sp_docs_id ON sp_docs (id);
CREATE INDEX sp_docs_ix ON sp_docs USING gpuidx (to_tsvector('english', body)) WITH (pending_list_limit = $PENDING);
VACUUM ANALYZE sp_docs;
SQL
ROWS=$($P -c "SELECT count(*) FROM sp_docs")
printf '\\set k random(1, %s)\nINSERT INTO sp_docs SELECT id, body FROM sp_docs WHERE id = %s * :k;\n' \
	"$ROWS" "$EVERY" > "$WORK/insert.pgb"

# bytes, segments, free bytes, merges' bytes and docs (empty from builds that do not count them)
stats() {
	$P -F, -c "SELECT pg_relation_size('sp_docs_ix'), segments, free_bytes,
	                  to_jsonb(s) ->> 'merge_bytes', to_jsonb(s) ->> 'merge_docs'
	           FROM gpuidx_index_stats('sp_docs_ix') s"
}
built=$(stats)
log "$LABEL: $ROWS rows, built: $built"
tps=$(cd "$WORK" && "$BIN/pgbench" -n -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" -f "$WORK/insert.pgb" -d "$DB" 2>&1 |
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
inserted=$(( $($P -c "SELECT count(*) FROM sp_docs") - ROWS ))
after=$(stats)
log "$LABEL: $inserted rows inserted ($tps/s), after: $after"
s=$(date +%s.%N)
$P -c "$VACUUM"
vacuum_s=$(python3 -c "print(round($(date +%s.%N) - $s, 1))")
vacuumed=$(stats)
log "$LABEL: $VACUUM in $vacuum_s s: $vacuumed"
$P -c "REINDEX INDEX sp_docs_ix"
rebuilt=$(stats)
log "$LABEL: rebuilt: $rebuilt"

[ -f "$OUT/space.csv" ] || echo "label,rows,clients,secs,pending_kb,vacuum,inserted,insert_tps,built_bytes,after_bytes,after_segments,after_free,vacuumed_bytes,vacuumed_segments,vacuumed_free,merge_bytes,merge_docs,vacuum_s,rebuilt_bytes" > "$OUT/space.csv"
IFS=, read -r b_bytes _ <<< "$built"
IFS=, read -r a_bytes a_segs a_free _ <<< "$after"
IFS=, read -r v_bytes v_segs v_free v_mbytes v_mdocs <<< "$vacuumed"
IFS=, read -r r_bytes _ <<< "$rebuilt"
echo "$LABEL,$ROWS,$CLIENTS,$SECS,$PENDING,\"$VACUUM\",$inserted,$tps,$b_bytes,$a_bytes,$a_segs,$a_free,$v_bytes,$v_segs,$v_free,$v_mbytes,$v_mdocs,$vacuum_s,$r_bytes" >> "$OUT/space.csv"
log "$LABEL: after VACUUM $(python3 -c "print(round($v_bytes / $r_bytes, 2))")x the rebuilt size ($OUT/space.csv)"
$P -c "DROP TABLE sp_docs"
