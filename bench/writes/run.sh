#!/bin/bash
# Reads while rows arrive: pgbench mixes of count(*) queries and single-row
# inserts (read-only, 90/10, 50/50), and a COPY into an indexed table, with
# a gpuidx index, then GIN with fastupdate on, then off, on the same stored
# tsvector column.  One index on the table at a time.  Prepared statements,
# default planner settings.  Appends to $OUT/results.csv; report.py makes
# the Markdown table and the plot.
#
# Settings (environment):
#   BIN        PostgreSQL's bin directory (default: pg_config --bindir)
#   PGHOST, PGPORT, DB   the server (default /tmp, 5432, postgres)
#   DATADIR    if set, a throwaway cluster is made there and started (and
#              stopped at the end), with EXTRA_CONF appended to its
#              postgresql.conf, e.g. EXTRA_CONF="shared_preload_libraries='gpuidx'"
#              (the GPU worker); else the running server is used
#   CORPUS     debian-paths (default) or debian-pkgs, under GPUIDX_DATA
#              (default ~/.cache/gpuidx-data); ROWS: its first rows (1000000)
#   CLIENTS (32), SECS per cell (20), THREADS (CLIENTS, at most 16)
#   INDEXES    "gpuidx gin_on gin_off";  MIXES "ro 90 50"
#   MODES      settings for the gpuidx cells, one cell per word: "default",
#              "gpu" (gpuidx.device=auto), "cpu" (gpuidx.device=cpu)
#   COPY_ROWS  rows of the COPY into an indexed table (ROWS; 0: no COPY)
#   LABEL      names the build in results.csv (e.g. base, branch)
#   RELOAD=1   load the tables again even when they are there
set -euo pipefail

BIN=${BIN:-$(pg_config --bindir)}
export PGHOST=${PGHOST:-/tmp} PGPORT=${PGPORT:-5432}
DB=${DB:-postgres}
CORPUS=${CORPUS:-debian-paths}
DATA=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}/$CORPUS
ROWS=${ROWS:-1000000}
EXTRA_ROWS=${EXTRA_ROWS:-200000}
CLIENTS=${CLIENTS:-32}
SECS=${SECS:-20}
THREADS=${THREADS:-$(( CLIENTS < 16 ? CLIENTS : 16 ))}
INDEXES=${INDEXES-gpuidx gin_on gin_off}
MIXES=${MIXES-ro 90 50}
MODES=${MODES:-default}
COPY_ROWS=${COPY_ROWS:-$ROWS}
LABEL=${LABEL:-$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo build)}
OUT=${OUT:-$(cd "$(dirname "$0")/../.." && pwd)/bench/results/writes}
WORK=${WORK:-/tmp/gpuidx-writes-$PGPORT}  # scratch: the copy file, pgbench scripts
NICE=${NICE:-nice}
P="$BIN/psql -X -q -v ON_ERROR_STOP=1 -d $DB"

mkdir -p "$OUT" "$WORK"
chmod 755 "$WORK"
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }

if [ -n "${DATADIR:-}" ]; then
	if [ ! -f "$DATADIR/PG_VERSION" ]; then
		"$BIN/initdb" -D "$DATADIR" -A trust > /dev/null
		cat >> "$DATADIR/postgresql.conf" <<CONF
port = $PGPORT
unix_socket_directories = '$PGHOST'
listen_addresses = ''
max_connections = $(( CLIENTS + 20 ))
shared_buffers = 1GB
${EXTRA_CONF:-}
CONF
	fi
	$NICE "$BIN/pg_ctl" -D "$DATADIR" -l "$DATADIR/server.log" -w start > /dev/null
	trap '"$BIN/pg_ctl" -D "$DATADIR" -w stop > /dev/null' EXIT
fi

log "server: $($P -Atc 'SELECT version()'); $(nproc) cores; label $LABEL"
$P -c "CREATE EXTENSION IF NOT EXISTS gpuidx"

if [ "${RELOAD:-0}" = 1 ] || [ -z "$($P -Atc "SELECT to_regclass('wr_docs')")" ]; then
	log "load: first $ROWS rows of $CORPUS, then $EXTRA_ROWS more for the inserts"
	head -n $(( ROWS + EXTRA_ROWS )) "$DATA/docs.tsv" > "$WORK/docs.tsv"
	cp "$DATA/queries.tsv" "$WORK/queries.tsv"
	$P <<SQL
DROP TABLE IF EXISTS wr_docs, wr_more, wr_qs, wr_load, wr_copy;
CREATE TABLE wr_load (id int, body text);
COPY wr_load FROM '$WORK/docs.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
CREATE TABLE wr_docs (id int, body text, tsv tsvector);
INSERT INTO wr_docs SELECT id, body, to_tsvector('english', body) FROM wr_load ORDER BY id LIMIT $ROWS;
CREATE TABLE wr_more (k int PRIMARY KEY, body text, tsv tsvector);
INSERT INTO wr_more SELECT row_number() OVER (ORDER BY id), body, to_tsvector('english', body)
	FROM wr_load WHERE id > (SELECT max(id) FROM wr_docs);
DROP TABLE wr_load;
CREATE TABLE wr_qs (qid int PRIMARY KEY, q text);
COPY wr_qs FROM '$WORK/queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01');
COPY (SELECT id, body, tsv FROM wr_docs ORDER BY id LIMIT $COPY_ROWS) TO '$WORK/copy.tsv';
VACUUM ANALYZE wr_docs, wr_more, wr_qs;
SQL
fi
NQ=$($P -Atc "SELECT count(*) FROM wr_qs")
NMORE=$($P -Atc "SELECT count(*) FROM wr_more")
MAXID=$($P -Atc "SELECT max(id) FROM wr_docs WHERE id < 1000000000")

# the scripts: a count(*) of a random real query; an insert of a random row not in the table
pick="(SELECT q FROM wr_qs WHERE qid = :i)"
printf '\\set i random(1, %s)\nSELECT count(*) FROM wr_docs WHERE tsv @@& %s;\n' "$NQ" "$pick" > "$WORK/gpuidx_read.pgb"
printf '\\set i random(1, %s)\nSELECT count(*) FROM wr_docs WHERE tsv @@ plainto_tsquery('"'english'"', %s);\n' "$NQ" "$pick" > "$WORK/gin_read.pgb"
printf '\\set k random(1, %s)\nINSERT INTO wr_docs SELECT 1000000000 + k, body, tsv FROM wr_more WHERE k = :k;\n' "$NMORE" > "$WORK/insert.pgb"

index_sql() {
	case $1 in
		gpuidx) echo "USING gpuidx (tsv)" ;;
		gin_on) echo "USING gin (tsv) WITH (fastupdate = on)" ;;
		gin_off) echo "USING gin (tsv) WITH (fastupdate = off)" ;;
	esac
}

mode_opts() {
	case $1 in
		gpu) echo "-c gpuidx.device=auto" ;;
		cpu) echo "-c gpuidx.device=cpu" ;;
		*) echo "" ;;
	esac
}

# one pgbench cell: index mode mix
cell() {
	local ix=$1 mode=$2 mix=$3 reader=gin_read
	[ "$ix" = gpuidx ] && reader=gpuidx_read
	local scripts="-f $WORK/$reader.pgb"
	[ "$mix" != ro ] && scripts="-f $WORK/$reader.pgb@$mix -f $WORK/insert.pgb@$(( 100 - mix ))"
	local r
	r=$(cd "$WORK" && PGOPTIONS="$(mode_opts "$mode")" $NICE "$BIN/pgbench" -n -M prepared -c "$CLIENTS" -j "$THREADS" \
		-T "$SECS" $scripts -d "$DB" 2>&1) || { echo "$r" >&2; return 1; }
	echo "$r" > "$OUT/pgbench-$LABEL-$ix-$mode-$mix.log"
	# per script: its tps and latency (pgbench prints both when it has several scripts)
	python3 - "$LABEL" "$ix" "$mode" "$mix" "$CLIENTS" "$SECS" <<PY >> "$OUT/results.csv"
import re, sys
text = """$r"""
label, ix, mode, mix, clients, secs = sys.argv[1:]
total = re.search(r"tps = ([\d.]+) \(without initial", text)
lat = re.search(r"latency average = ([\d.]+) ms", text)
parts = re.split(r"SQL script \d+: ", text)[1:]
read_tps = write_tps = read_lat = write_lat = ""
for p in parts:
    t = re.search(r"tps = ([\d.]+)\)", p)
    l = re.search(r"latency average = ([\d.]+) ms", p)
    if "insert" in p.split("\n")[0]:
        write_tps, write_lat = t.group(1), l.group(1) if l else ""
    else:
        read_tps, read_lat = t.group(1), l.group(1) if l else ""
if not parts:
    read_tps, read_lat = total.group(1), lat.group(1)
print(",".join([label, ix, mode, mix, clients, secs, total.group(1), read_tps, read_lat, write_tps, write_lat]))
PY
	log "$LABEL $ix $mode $mix: $(tail -n 1 "$OUT/results.csv")"
}

[ -f "$OUT/results.csv" ] || echo "label,index,mode,mix,clients,secs,tps,read_tps,read_ms,insert_tps,insert_ms" > "$OUT/results.csv"

for ix in $INDEXES; do
	modes=default
	[ "$ix" = gpuidx ] && modes=$MODES
	for mode in $modes; do
		# each mode from the same start: the table as loaded, all-visible, the index new
		log "$ix $mode: table back to its $ROWS rows, index built"
		$P -c "DROP INDEX IF EXISTS wr_docs_ix" -c "DELETE FROM wr_docs WHERE id > $MAXID" -c "VACUUM (FREEZE, ANALYZE) wr_docs"
		$P -c "CREATE INDEX wr_docs_ix ON wr_docs $(index_sql "$ix")" -c "VACUUM ANALYZE wr_docs"
		for mix in $MIXES; do
			cell "$ix" "$mode" "$mix"
		done
	done
	if [ "$COPY_ROWS" -gt 0 ]; then
		$P -c "DROP TABLE IF EXISTS wr_copy" -c "CREATE TABLE wr_copy (id int, body text, tsv tsvector)" \
			-c "CREATE INDEX wr_copy_ix ON wr_copy $(index_sql "$ix")"
		s=$(date +%s.%N)
		$P -c "COPY wr_copy FROM '$WORK/copy.tsv'"
		e=$(date +%s.%N)
		echo "$LABEL,$ix,copy,$COPY_ROWS,1,$(python3 -c "print(round($e - $s, 2))"),,,,," >> "$OUT/results.csv"
		log "$LABEL $ix COPY $COPY_ROWS rows: $(python3 -c "print(round($e - $s, 2))") s"
		$P -c "DROP TABLE wr_copy"
	fi
done
$P -c "DROP INDEX IF EXISTS wr_docs_ix" -c "DELETE FROM wr_docs WHERE id > $MAXID"
log "results: $OUT/results.csv (python3 bench/writes/report.py $OUT)"
