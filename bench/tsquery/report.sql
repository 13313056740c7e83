-- bench/tsquery/run.sh: the report (Markdown, run with psql -At) from
-- tsq_meta, tsq_mixes, tsq_queries, tsq_runs, tsq_plans and tsq_cells;
-- run.sh passes :layouts, :stmts, :rows, :mwm, :timeout, :one_timeout, :secs, :one_nq
-- and :gpx_with.  Ratios in the summary and the one-at-a-time
-- table are gpuidx's time over GIN's (below 1: gpuidx faster); the pgbench
-- table keeps its own (above 1: gpuidx better).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
-- the targets: total time and p99 at most :target of GIN's (phrase shapes:
-- total time at most :phrase_target, that is 10x faster), no query more than
-- :slow times GIN's time where GIN takes over :slow_ms ms
\set target 0.5
\set phrase_target 0.1
\set slow 2
\set slow_ms 1

CREATE FUNCTION pg_temp.f(x float8) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN x IS NULL THEN '-'
	            WHEN abs(x) >= 1000 THEN to_char(x, 'FM999,999,999,990')
	            WHEN abs(x) >= 100 THEN round(x::numeric, 1)::text
	            WHEN abs(x) >= 1 THEN round(x::numeric, 2)::text
	            WHEN abs(x) >= 0.01 THEN round(x::numeric, 3)::text
	            ELSE round(x::numeric, 5)::text END
$$;
CREATE FUNCTION pg_temp.md(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT '`' || replace(t, '|', '\|') || '`'
$$;
CREATE FUNCTION pg_temp.row(VARIADIC c text[]) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT '| ' || array_to_string(c, ' | ', '-') || ' |'
$$;

-- each query's count: the counts of every ok run of count(*) (the check and
-- the timed runs, every layout and index); same: they agree, and every LIMIT
-- 10 returned min(10, count) rows
CREATE TEMP VIEW counts AS
SELECT q.mix, q.n, q.q, c.ref, c.ncounts,
       c.ncounts = 0 OR (c.distinct_counts = 1 AND coalesce(l.bad, 0) = 0) AS same,
       c.timeouts
FROM tsq_queries q
LEFT JOIN (SELECT mix, n, max(nrows) AS ref, count(*) FILTER (WHERE status = 'ok') AS ncounts,
                  count(DISTINCT nrows) FILTER (WHERE status = 'ok') AS distinct_counts,
                  count(*) FILTER (WHERE status = 'timeout' AND pass = 'check') AS timeouts
           FROM tsq_runs WHERE stmt = 'count' GROUP BY mix, n) c USING (mix, n)
LEFT JOIN (SELECT r.mix, r.n, count(*) FILTER (WHERE r.nrows <> least(10, x.ref)) AS bad
           FROM tsq_runs r JOIN (SELECT mix, n, max(nrows) AS ref FROM tsq_runs
                                 WHERE stmt = 'count' AND status = 'ok' GROUP BY mix, n) x USING (mix, n)
           WHERE r.stmt = 'limit' AND r.status = 'ok' GROUP BY r.mix, r.n) l USING (mix, n);

-- one query at a time: per layout, mix, statement and index (timeouts at
-- the timeout, a lower bound; errors left out and counted)
CREATE TEMP VIEW one_stats AS
SELECT layout, mix, stmt, ix, count(*) AS n, sum(ms) AS total,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY ms) AS p99, max(ms) AS max,
       count(*) FILTER (WHERE status = 'timeout') AS timeouts,
       count(*) FILTER (WHERE status LIKE 'error%') AS errors
FROM tsq_runs WHERE pass = 'time' GROUP BY layout, mix, stmt, ix;
CREATE TEMP VIEW one_pairs AS
SELECT g.layout, g.mix, g.stmt, g.n, g.ms AS gpx, n.ms AS gin, g.status AS gpx_status, n.status AS gin_status,
       g.ms > :slow * n.ms AND n.ms > :slow_ms AS slow
FROM tsq_runs g JOIN tsq_runs n ON n.pass = 'time' AND n.ix = 'gin' AND (n.layout, n.mix, n.stmt, n.n) = (g.layout, g.mix, g.stmt, g.n)
WHERE g.pass = 'time' AND g.ix = 'gpx';
CREATE TEMP VIEW one AS
SELECT g.layout, g.mix, g.stmt, g.n, g.total AS gtotal, g.p50 AS gp50, g.p99 AS gp99, g.max AS gmax,
       g.timeouts AS gtimeouts, g.errors AS gerrors,
       n.total AS ntotal, n.p50 AS np50, n.p99 AS np99, n.max AS nmax, n.timeouts AS ntimeouts, n.errors AS nerrors,
       g.total / nullif(n.total, 0) AS total_ratio, g.p99 / nullif(n.p99, 0) AS p99_ratio,
       (SELECT count(*) FROM one_pairs p WHERE (p.layout, p.mix, p.stmt) = (g.layout, g.mix, g.stmt) AND p.slow) AS slow
FROM one_stats g JOIN one_stats n USING (layout, mix, stmt) WHERE g.ix = 'gpx' AND n.ix = 'gin';

-- pgbench: gpuidx's cells beside GIN's
CREATE TEMP VIEW cells AS
SELECT layout, mix, stmt, clients, g.tps AS gtps, g.p50 AS gp50, g.p99 AS gp99, g.txns AS gtxns, g.failed AS gfailed,
       n.tps AS ntps, n.p50 AS np50, n.p99 AS np99, n.txns AS ntxns, n.failed AS nfailed
FROM tsq_cells g JOIN tsq_cells n USING (layout, mix, stmt, clients) WHERE g.ix = 'gpx' AND n.ix = 'gin';
CREATE TEMP VIEW cell_worst AS
SELECT layout, mix, stmt, max(gp99 / nullif(np99, 0)) AS p99_ratio, min(gtps / nullif(ntps, 0)) AS tps_ratio,
       sum(gfailed) AS gfailed, string_agg(clients::text, ' ' ORDER BY clients) AS clients
FROM cells GROUP BY layout, mix, stmt;

-- the summary: per layout, mix and statement, each target measured, met or not
CREATE TEMP VIEW summary AS
SELECT l.lo, m.ord, s.so, l.layout, m.mix, m.forms, m.phrase, s.stmt,
       o.total_ratio, o.p99_ratio, o.slow, c.p99_ratio AS cell_p99_ratio, c.tps_ratio AS cell_tps_ratio, c.clients,
       coalesce(o.gtimeouts, 0) + coalesce(o.gerrors, 0) + coalesce(c.gfailed, 0) AS gfailed,
       (SELECT count(*) FROM counts x WHERE x.mix = m.mix AND NOT x.same) AS mismatches,
       o.layout IS NOT NULL AS has_one, c.layout IS NOT NULL AS has_cells,
       CASE WHEN m.phrase THEN :phrase_target ELSE :target END AS total_target
FROM unnest(string_to_array(:'layouts', ' ')) WITH ORDINALITY l(layout, lo)
CROSS JOIN tsq_mixes m CROSS JOIN unnest(string_to_array(:'stmts', ' ')) WITH ORDINALITY s(stmt, so)
LEFT JOIN one o ON (o.layout, o.mix, o.stmt) = (l.layout, m.mix, s.stmt)
LEFT JOIN cell_worst c ON (c.layout, c.mix, c.stmt) = (l.layout, m.mix, s.stmt);

SELECT count(*) > 0 AS has_one FROM tsq_runs WHERE pass = 'time' \gset
SELECT count(*) > 0 AS has_cells FROM cells \gset
\if :has_one
\set has_measures 1
\elif :has_cells
\set has_measures 1
\else
\set has_measures 0
\endif

\if :has_measures
\echo
\echo '## Summary against the targets'
\echo
\echo 'gpuidx''s time over GIN''s (below 1: gpuidx faster) per layout, shape and statement, but for pgbench''s tps'
\echo '(gpuidx''s over GIN''s, above 1: gpuidx faster; the lowest of the client counts).  Targets:'
\echo 'one query at a time, total time at most ':target' of GIN''s (':phrase_target' for phrase shapes: 10x faster) and p99 at'
\echo 'most ':target'; under pgbench at each client count, p99 at most ':target' and tps at least 1/':target' of GIN''s'
\echo '(1/':phrase_target' for phrase shapes); no query more than ':slow'x GIN''s time where GIN takes over ':slow_ms' ms; no'
\echo 'gpuidx timeout, error or failed transaction; the same rows (the queries of the shape whose counts differ'
\echo 'between any two indexes or runs).  A part not measured (-) is left out of the verdict.'
\echo
\echo '| layout | shape | form | statement | total | p99 | pgbench p99 (worst) | pgbench tps gpuidx/GIN (lowest) | queries > ':slow'x GIN | gpuidx timeouts, errors, failed | mismatches | verdict |'
\echo '|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|'
SELECT pg_temp.row(layout, mix || CASE WHEN phrase THEN ' (phrase)' ELSE '' END, pg_temp.md(forms), stmt,
                   pg_temp.f(total_ratio), pg_temp.f(p99_ratio), pg_temp.f(cell_p99_ratio),
                   pg_temp.f(cell_tps_ratio), slow::text, gfailed::text, mismatches::text,
                   CASE WHEN NOT has_one AND NOT has_cells THEN '-'
                        WHEN fails = '' THEN '**pass**' ELSE 'FAIL: ' || fails END)
FROM (SELECT *, concat_ws(', ',
               CASE WHEN total_ratio > total_target THEN 'total' END,
               CASE WHEN p99_ratio > :target THEN 'p99' END,
               CASE WHEN cell_p99_ratio > :target THEN 'pgbench p99' END,
               CASE WHEN cell_tps_ratio < 1 / total_target THEN 'pgbench tps' END,
               CASE WHEN slow > 0 THEN 'slower queries' END,
               CASE WHEN gfailed > 0 THEN 'timeouts' END,
               CASE WHEN mismatches > 0 THEN 'rows' END) AS fails
      FROM summary) s
ORDER BY lo, ord, so;
\echo
SELECT 'Verdicts: ' || count(*) FILTER (WHERE has_one OR has_cells) || ' measured, '
       || count(*) FILTER (WHERE (has_one OR has_cells) AND coalesce(total_ratio <= total_target, true)
                           AND coalesce(p99_ratio <= :target, true) AND coalesce(cell_p99_ratio <= :target, true)
                           AND coalesce(cell_tps_ratio >= 1 / total_target, true) AND coalesce(slow, 0) = 0
                           AND gfailed = 0 AND mismatches = 0) || ' pass.'
FROM summary;
\endif

\echo
\echo '## Tables and indexes'
\echo
SELECT 'Per layout, two tables of the same ' || :'rows' || ' rows in the same order, one index each; builds with '
       || 'maintenance_work_mem = ' || :'mwm' || ', '
       || CASE (SELECT v FROM tsq_meta WHERE k = 'parallel_builds') WHEN '1' THEN 'all at once (PARALLEL_BUILDS=1).'
               ELSE 'one at a time.' END
       || CASE WHEN :'gpx_with' <> '' THEN '  gpuidx built `WITH (' || :'gpx_with' || ')`.' ELSE '' END;
\echo 'expr: the index on `to_tsvector(''english'', body)`; column: on a stored `tsv tsvector` column (`to_tsvector(''english'', body)`).'
\echo
\echo '| layout | gpuidx build (s) | gpuidx size | GIN build (s) | GIN size | size gpuidx/GIN | build gpuidx/GIN | table size |'
\echo '|---|---:|---:|---:|---:|---:|---:|---:|'
SELECT pg_temp.row(layout, bg, pg_size_pretty(sg), bn, pg_size_pretty(sn), pg_temp.f(sg::float8 / sn),
                   pg_temp.f(bg::float8 / nullif(bn::float8, 0)), pg_size_pretty(pg_table_size(tg::regclass)))
FROM (SELECT lo, layout, tsq_table(layout, 'gpx') AS tg,
             (SELECT v FROM tsq_meta WHERE k = 'build_' || tsq_table(layout, 'gpx')) AS bg,
             (SELECT v FROM tsq_meta WHERE k = 'build_' || tsq_table(layout, 'gin')) AS bn,
             pg_relation_size((tsq_table(layout, 'gpx') || '_ix')::regclass) AS sg,
             pg_relation_size((tsq_table(layout, 'gin') || '_ix')::regclass) AS sn
      FROM unnest(string_to_array(:'layouts', ' ')) WITH ORDINALITY l(layout, lo)) t
ORDER BY lo;

\echo
\echo '## Query mixes'
\echo
\echo 'Matching: the queries that match at least one row.  Same rows: the queries whose count is the same through'
\echo 'each index of each layout (the check, with enable_seqscan = off, and the timed runs, with the planner''s'
\echo 'plans) and whose LIMIT 10 returned min(10, count) rows; counts timed out: in the check (CHECK_TIMEOUT).'
\echo
\echo '| mix | function | forms | queries | example | matching | mean matches | same rows | counts timed out |'
\echo '|---|---|---|---:|---|---:|---:|---:|---:|'
SELECT pg_temp.row(m.mix, m.fn, pg_temp.md(m.forms), count(*)::text, pg_temp.md(min(c.q) FILTER (WHERE c.n = 1)),
                   round(100.0 * count(*) FILTER (WHERE c.ref > 0) / count(*)) || '%', pg_temp.f(avg(c.ref)),
                   count(*) FILTER (WHERE c.same) || '/' || count(*), sum(c.timeouts)::text)
FROM tsq_mixes m JOIN counts c USING (mix)
GROUP BY m.ord, m.mix, m.fn, m.forms ORDER BY m.ord;
SELECT count(*) > 0 AS any_mismatch FROM counts WHERE NOT same \gset
\if :any_mismatch
\echo
\echo 'Queries whose rows differ (the counts of each run: pass, layout, index):'
\echo
\echo '| mix | n | query | counts |'
\echo '|---|---:|---|---|'
SELECT pg_temp.row(c.mix, c.n::text, pg_temp.md(c.q),
                   (SELECT string_agg(r.pass || ' ' || r.layout || ' ' || r.ix || ' ' || r.stmt || ': ' || r.nrows, ', '
                                      ORDER BY r.stmt, r.pass, r.layout, r.ix)
                    FROM tsq_runs r WHERE (r.mix, r.n) = (c.mix, c.n) AND r.status = 'ok'))
FROM counts c JOIN tsq_mixes m USING (mix) WHERE NOT c.same ORDER BY m.ord, c.n LIMIT 50;
\endif
SELECT count(*) > 0 AS any_error FROM tsq_runs WHERE status LIKE 'error%' \gset
\if :any_error
\echo
\echo 'Errors (pass, layout, index, statement: count, first message):'
\echo
SELECT '- ' || pass || ' ' || layout || ' ' || ix || ' ' || stmt || ': ' || count(*) || ', `' || min(status) || '`'
FROM tsq_runs WHERE status LIKE 'error%' GROUP BY pass, layout, ix, stmt ORDER BY 1;
\endif

\echo
\echo 'Plans (the sixth plan of the prepared statement, the mix''s first query):'
\echo
\echo '| layout | mix | statement | gpuidx | GIN |'
\echo '|---|---|---|---|---|'
SELECT pg_temp.row(p.layout, p.mix, p.stmt, p.gpx, p.gin)
FROM tsq_plans p JOIN tsq_mixes m USING (mix)
ORDER BY array_position(string_to_array(:'layouts', ' '), p.layout), m.ord, array_position(string_to_array(:'stmts', ' '), p.stmt);

\if :has_one
\echo
\echo '## One query at a time'
\echo
SELECT 'Each of the first ' || :'one_nq' || ' queries of each mix, one at a time in one session per layout and statement, '
       || 'through gpuidx and then through GIN, PostgreSQL''s default planner settings; timed in the server around '
       || '`EXECUTE ... USING` (planned with the query''s value, a custom plan), after a warm-up pass of the same queries.  '
       || 'A query has ' || :'one_timeout' || ' (statement_timeout); one timed out counts at that time, a lower bound.  '
       || 'ms; ratios gpuidx / GIN (below 1: gpuidx faster); slower: the queries that took gpuidx over '
       || :'slow' || 'x GIN''s time where GIN took over ' || :'slow_ms' || ' ms.';
\echo
\echo '| layout | statement | mix | queries | gpuidx total | p50 | p99 | max | GIN total | p50 | p99 | max | total ratio | p99 ratio | slower | timeouts gpuidx / GIN |'
\echo '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
SELECT pg_temp.row(o.layout, o.stmt, o.mix, o.n::text, pg_temp.f(gtotal), pg_temp.f(gp50), pg_temp.f(gp99), pg_temp.f(gmax),
                   pg_temp.f(ntotal), pg_temp.f(np50), pg_temp.f(np99), pg_temp.f(nmax),
                   pg_temp.f(total_ratio), pg_temp.f(p99_ratio), slow::text,
                   gtimeouts || ' / ' || ntimeouts || CASE WHEN gerrors + nerrors > 0 THEN ' (errors ' || gerrors || ' / ' || nerrors || ')' ELSE '' END)
FROM one o JOIN tsq_mixes m USING (mix)
ORDER BY array_position(string_to_array(:'layouts', ' '), o.layout), array_position(string_to_array(:'stmts', ' '), o.stmt), m.ord;
SELECT count(*) > 0 AS any_slow FROM one_pairs WHERE slow \gset
\if :any_slow
\echo
\echo 'The slowest against GIN (at most 5 a layout, statement and mix, the largest ratio first):'
\echo
\echo '| layout | statement | mix | query | gpuidx ms | GIN ms | ratio | rows |'
\echo '|---|---|---|---|---:|---:|---:|---:|'
SELECT pg_temp.row(layout, stmt, mix, pg_temp.md(q), pg_temp.f(gpx), pg_temp.f(gin), pg_temp.f(gpx / gin), ref::text)
FROM (SELECT p.*, c.q, c.ref, m.ord, row_number() OVER (PARTITION BY p.layout, p.stmt, p.mix ORDER BY p.gpx / p.gin DESC) AS k
      FROM one_pairs p JOIN counts c USING (mix, n) JOIN tsq_mixes m USING (mix) WHERE p.slow) x
WHERE k <= 5
ORDER BY array_position(string_to_array(:'layouts', ' '), layout), array_position(string_to_array(:'stmts', ' '), stmt), ord, k;
\endif
\endif

\if :has_cells
\echo
\echo '## pgbench'
\echo
SELECT '`pgbench -M prepared -T ' || :'secs' || '`, default planner settings, statement_timeout = ' || :'timeout'
       || '; a transaction is the query''s lookup by its number and the statement.  Ratios: above 1 is gpuidx better '
       || '(tps gpuidx / GIN; latency GIN / gpuidx).  Transactions: gpuidx''s / GIN''s in the cell (few transactions: '
       || 'a few slow queries decide the cell).  Failed: transactions that failed, and clients aborted by a statement '
       || 'that timed out or failed (each ends its client), gpuidx''s / GIN''s; each counts in the p50 and p99 at '
       || 'the timeout (a lower bound: it would have taken at least that).  A cell of fewer than 100 transactions '
       || '(failed ones included) has no p99 (-): the 99th percentile of a few is their maximum.';
\echo
\echo '| layout | mix | statement | clients | gpuidx tps | p50 ms | p99 ms | GIN tps | p50 ms | p99 ms | tps ratio | p50 ratio | p99 ratio | transactions | failed |'
\echo '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
SELECT pg_temp.row(c.layout, c.mix, c.stmt, c.clients::text, pg_temp.f(gtps), pg_temp.f(gp50), pg_temp.f(gp99),
                   pg_temp.f(ntps), pg_temp.f(np50), pg_temp.f(np99), pg_temp.f(gtps / nullif(ntps, 0)),
                   pg_temp.f(np50 / nullif(gp50, 0)), pg_temp.f(np99 / nullif(gp99, 0)),
                   gtxns || ' / ' || ntxns, gfailed || ' / ' || nfailed)
FROM cells c JOIN tsq_mixes m USING (mix)
ORDER BY array_position(string_to_array(:'layouts', ' '), c.layout), m.ord,
         array_position(string_to_array(:'stmts', ' '), c.stmt), c.clients;
SELECT count(*) > 0 AS has_cpu FROM tsq_cells WHERE ix = 'cpu' \gset
\if :has_cpu
\echo
\echo 'Extra, labelled: gpuidx with `gpuidx.device = cpu` (every round in the backend, no GPU worker), same cells.'
\echo
\echo '| layout | mix | statement | clients | gpuidx on the CPU tps | p50 ms | p99 ms | transactions |'
\echo '|---|---|---|---:|---:|---:|---:|---:|'
SELECT pg_temp.row(c.layout, c.mix, c.stmt, c.clients::text, pg_temp.f(c.tps), pg_temp.f(c.p50), pg_temp.f(c.p99), c.txns::text)
FROM tsq_cells c JOIN tsq_mixes m USING (mix) WHERE c.ix = 'cpu'
ORDER BY array_position(string_to_array(:'layouts', ' '), c.layout), m.ord,
         array_position(string_to_array(:'stmts', ' '), c.stmt), c.clients;
\endif
\echo
\echo 'The floor: the same transaction with `SELECT 1` for the statement (the lookup, two round trips,'
\echo 'pgbench), what a transaction costs whatever the index.'
\echo
\echo '| clients | tps | p50 ms | p99 ms |'
\echo '|---:|---:|---:|---:|'
SELECT pg_temp.row(clients::text, pg_temp.f(tps), pg_temp.f(p50), pg_temp.f(p99))
FROM tsq_cells WHERE ix = 'floor' ORDER BY clients;
\endif

\echo
\echo 'Statements: `SELECT count(*) FROM docs_gpx WHERE to_tsvector(''english'', body) @@ FN(''english'', $1)` (count)'
\echo 'and `SELECT id FROM ... LIMIT 10` (limit), FN the mix''s function; docs_gin for GIN; the column layout'
\echo '`... FROM docs_gpx_tsv WHERE tsv @@ FN(''english'', $1)`, docs_gin_tsv for GIN.'
