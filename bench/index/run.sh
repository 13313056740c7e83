#!/usr/bin/env bash
# The gpuidx index benchmark: bench/index/run.sh CORPUS NDOCS [METHODS...]
# Loads NDOCS documents of CORPUS ($GPUIDX_DATA, default ~/.cache/gpuidx-data)
# into the server the PG* environment points to, then for each method (all
# six by default) builds its index on the same table and measures size,
# build time, single-client latency of the corpus's first $NQ queries
# ($REPS timed runs each, after a warm-up) and the insertion of 10,000 rows.
# Prints the settings first and the results as a Markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${1:?corpus}
ndocs=${2:?number of documents}
shift 2
methods=("$@")
[ ${#methods[@]} -eq 0 ] && methods=(gpuidx gin_fastupdate_on gin_fastupdate_off gpuidx_tsv gin_tsv rum_tsv)
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}/$corpus
nq=${NQ:-1000}
reps=${REPS:-3}
psql=(psql -X -v ON_ERROR_STOP=1 -v corpus="$corpus" -v ndocs="$ndocs" -v nq="$nq" -v reps="$reps")

echo "# corpus $corpus: $ndocs documents, $nq queries x $reps runs; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"${psql[@]}" -Atc "SELECT version()"
"${psql[@]}" -Atc "SELECT name || ' = ' || current_setting(name) FROM pg_settings
    WHERE name IN ('shared_buffers', 'maintenance_work_mem', 'work_mem', 'max_parallel_workers_per_gather',
                   'max_parallel_maintenance_workers', 'jit', 'synchronous_commit', 'random_page_cost',
                   'effective_cache_size', 'gin_pending_list_limit') ORDER BY 1"
"${psql[@]}" -qc "CREATE EXTENSION IF NOT EXISTS gpuidx; CREATE EXTENSION IF NOT EXISTS rum;"
start=$(date +%s)
"${psql[@]}" -q -v docs="$data/docs.tsv" -v queries="$data/queries.tsv" -f "$here/bench.sql"
echo "# loaded in $(( $(date +%s) - start ))s"
for m in "${methods[@]}"; do
    "${psql[@]}" -q -v method="$m" -f "$here/method.sql"
done
# the results as Markdown tables
md() { "${psql[@]}" -At -F ' | ' -c "$1" | sed 's/^/| /; s/$/ |/'; }
echo
echo "| method | build s | size | p50 ms | p99 ms | p50 ms, >= 2 frequent terms | p99 ms, >= 2 frequent | rows matched | inserts/s | 10k rows in one INSERT, ms | size after inserts |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
md "SELECT method, round(build_ms::numeric / 1000, 1), pg_size_pretty(size),
       round(p50_ms::numeric, 3), round(p99_ms::numeric, 2),
       round(freq2_p50_ms::numeric, 3), round(freq2_p99_ms::numeric, 2),
       rows_total, round(insert_rows_s), round(bulk_insert_ms), pg_size_pretty(size_after_inserts)
    FROM bench_results r JOIN bench_methods m USING (method)
    WHERE corpus = '$corpus' AND docs = $ndocs ORDER BY m.ord"
echo
echo "| method | size / GIN | build time / GIN | p50 / GIN | p50 / GIN, >= 2 frequent terms | inserts/s / GIN |"
echo "|---|---:|---:|---:|---:|---:|"
md "SELECT r.method || ' vs ' || g.method, round(r.size::numeric / g.size, 2), round((r.build_ms / g.build_ms)::numeric, 2),
       round((r.p50_ms / g.p50_ms)::numeric, 2), round((r.freq2_p50_ms / g.freq2_p50_ms)::numeric, 2),
       round((r.insert_rows_s / g.insert_rows_s)::numeric, 2)
    FROM bench_results r JOIN bench_methods m USING (method)
    JOIN bench_results g ON g.corpus = r.corpus AND g.docs = r.docs
      AND g.method IN (CASE WHEN r.method LIKE '%tsv' THEN 'gin_tsv' ELSE 'gin_fastupdate_on' END,
                       CASE WHEN r.method LIKE '%tsv' THEN 'gin_tsv' ELSE 'gin_fastupdate_off' END)
    WHERE r.corpus = '$corpus' AND r.docs = $ndocs AND r.method LIKE 'gpuidx%' ORDER BY m.ord, g.method"
echo
echo "# total $(( $(date +%s) - start ))s"
