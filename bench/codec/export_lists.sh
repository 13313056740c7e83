#!/bin/bash
# export_lists.sh CORPUS OUTDIR
#   Real posting lists of one corpus, as PostgreSQL tokenizes it: loads
#   $GPUIDX_DATA/CORPUS/docs.tsv into a throwaway cluster (pg_virtualenv),
#   takes the lexemes of to_tsvector('english', body) and writes, for every
#   lexeme, its dense doc ids and heap TIDs to OUTDIR/lists.bin, and the
#   lexemes of every query of queries.tsv to OUTDIR/queries.bin (formats in
#   bench/README.md).  LIMIT_DOCS=N loads only the first N documents.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

# the part that runs inside the throwaway cluster (PG* variables set)
if [ "${1:-}" = "--in-cluster" ]; then
	docs=$2 queries=$3 outdir=$4 limit=$5
	psql_run() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
	# CSV with a quote byte that never occurs: every byte of the text,
	# backslashes included, is loaded as it is
	load_opts="FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01'"

	echo "export: loading $docs${limit:+ (first $limit documents)}" >&2
	psql_run -c "CREATE UNLOGGED TABLE docs (id int, body text)"
	if [ -n "$limit" ]; then
		head -n "$limit" "$docs"
	else
		cat "$docs"
	fi | psql_run -c "COPY docs FROM STDIN WITH ($load_opts)"

	echo "export: tokenizing" >&2
	psql_run <<'SQL'
SET client_min_messages = warning;
-- doc ids are dense and follow heap order, as an index build assigns them
CREATE UNLOGGED TABLE post AS
SELECT u.lexeme, d.did, d.tid
FROM (SELECT (row_number() OVER (ORDER BY ctid) - 1)::int AS did,
			 ((ctid::text::point)[0]::bigint << 16) | (ctid::text::point)[1]::bigint AS tid,
			 body
	  FROM docs) d,
	 LATERAL unnest(tsvector_to_array(to_tsvector('english', d.body))) AS u(lexeme);
CREATE UNLOGGED TABLE terms AS
SELECT (row_number() OVER (ORDER BY lexeme COLLATE "C") - 1)::int AS term_id, lexeme
FROM (SELECT DISTINCT lexeme FROM post) s;
CREATE UNIQUE INDEX ON terms (lexeme);
SQL

	ndocs=$(psql_run -At -c "SELECT count(*) FROM docs")
	echo "export: writing $ndocs documents' lists" >&2
	psql_run -c "COPY (SELECT t.term_id, array_agg(p.did ORDER BY p.did),
							  array_agg(p.tid ORDER BY p.did)
					   FROM post p JOIN terms t USING (lexeme)
					   GROUP BY t.term_id ORDER BY t.term_id) TO STDOUT" |
		python3 "$here/pg_lists_to_bin.py" lists "$ndocs" "$outdir/lists.bin"

	echo "export: writing queries" >&2
	psql_run -c "CREATE UNLOGGED TABLE queries (id int, terms text)"
	psql_run -c "COPY queries FROM STDIN WITH ($load_opts)" < "$queries"
	# a tsquery prints its lexemes quoted, with ' and \ doubled
	psql_run <<'SQL' | python3 "$here/pg_lists_to_bin.py" queries "$outdir/queries.bin"
SET client_min_messages = warning;
COPY (
	SELECT q.id, count(l.lexeme),
		   coalesce(array_agg(t.term_id ORDER BY t.term_id)
					FILTER (WHERE t.term_id IS NOT NULL), '{}')
	FROM queries q
	LEFT JOIN LATERAL (
		SELECT DISTINCT replace(replace(m[1], '''''', ''''), '\\', '\') AS lexeme
		FROM regexp_matches(plainto_tsquery('english', q.terms)::text,
							'''((?:[^'']|'''')*)''', 'g') AS m) l ON true
	LEFT JOIN terms t ON t.lexeme = l.lexeme
	GROUP BY q.id ORDER BY q.id) TO STDOUT;
SQL
	exit 0
fi

if [ $# -ne 2 ]; then
	echo "usage: [LIMIT_DOCS=N] [GPUIDX_DATA=DIR] $0 CORPUS OUTDIR" >&2
	exit 2
fi
corpus=$1
outdir=$2
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}/$corpus
limit=${LIMIT_DOCS:-}
[ "$limit" = 0 ] && limit=
for f in docs.tsv queries.tsv; do
	if [ ! -r "$data/$f" ]; then
		echo "export_lists: $data/$f not found (scripts/data/fetch gets it, see scripts/data/README.md)" >&2
		exit 1
	fi
done
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
rm -f "$outdir/lists.bin" "$outdir/queries.bin"

# a port of our own: other throwaway clusters may run beside this one
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# the cluster runs as postgres, which must reach the files through psql only
PGPORT=$port pg_virtualenv -t \
	-o shared_buffers=1GB -o work_mem=1GB -o max_wal_size=4GB \
	"$here/export_lists.sh" --in-cluster "$data/docs.tsv" "$data/queries.tsv" "$outdir" "$limit"
