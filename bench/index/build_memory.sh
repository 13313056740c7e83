#!/usr/bin/env bash
# The build stays within maintenance_work_mem: bench/index/build_memory.sh CORPUS NDOCS
# builds a gpuidx index on NDOCS documents of CORPUS under several budgets
# and prints, for each, the sorted runs spilled, the peak memory of the
# build (all of its memory contexts, as the index records it), the build
# time and the index size, which must not depend on the budget.
set -euo pipefail
corpus=${1:?corpus}
ndocs=${2:?number of documents}
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}/$corpus
psql=(psql -X -v ON_ERROR_STOP=1 -q -v VERBOSITY=terse)
export PGOPTIONS="-c client_min_messages=warning"
"${psql[@]}" -c "CREATE EXTENSION IF NOT EXISTS gpuidx"
"${psql[@]}" -c "DROP TABLE IF EXISTS mem_docs" -c "CREATE TABLE mem_docs (id int, body text)"
"${psql[@]}" -c "\\copy mem_docs FROM '$data/docs.tsv' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')"
"${psql[@]}" -c "DELETE FROM mem_docs WHERE id > $ndocs" -c "VACUUM ANALYZE mem_docs"
echo "| maintenance_work_mem | runs spilled | peak build memory | within budget | build s | index size |"
echo "|---:|---:|---:|:---:|---:|---:|"
for mwm in 1MB 2MB 4MB 16MB 64MB 256MB; do
    "${psql[@]}" -At -F ' | ' -c "
    SET maintenance_work_mem = '$mwm';
    DROP INDEX IF EXISTS mem_idx;
    CREATE TEMP TABLE IF NOT EXISTS t0 AS SELECT clock_timestamp() t;
    UPDATE t0 SET t = clock_timestamp();
    CREATE INDEX mem_idx ON mem_docs USING gpuidx (body);
    SELECT '$mwm', build_runs, pg_size_pretty(build_peak_kb * 1024::bigint),
           CASE WHEN build_peak_kb * 1024::bigint <= pg_size_bytes('$mwm') THEN 'yes' ELSE 'NO' END,
           round(extract(epoch FROM clock_timestamp() - (SELECT t FROM t0))::numeric, 1),
           pg_size_pretty(total_bytes)
    FROM gpuidx_index_stats('mem_idx')" | sed 's/^/| /; s/$/ |/'
done
"${psql[@]}" -c "DROP TABLE mem_docs"
