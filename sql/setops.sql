-- set operations on posting lists: operators, variadic functions, aggregates
SELECT '{3,9,27,81}'::postinglist & '{1,3,9}'::postinglist AS intersection,
       '{3,9,27,81}'::postinglist | '{1,3,9}'::postinglist AS "union",
       '{3,9,27,81}'::postinglist - '{1,3,9}'::postinglist AS difference,
       '{3,9,27,81}'::postinglist && '{1,3,9}'::postinglist AS overlap,
       '{3,9}'::postinglist && '{1,2}'::postinglist AS disjoint;
SELECT '{}'::postinglist & '{1}', '{}'::postinglist | '{1}', '{1}'::postinglist - '{}', '{}'::postinglist && '{}';
SELECT '{1,2,3}'::postinglist = '{3,2,1}', '{1,2,3}'::postinglist = '{1,2}', '{1,2}'::postinglist <> '{1,3}';
SELECT pl_encode(pl_range(0, 5000), 'ef') = pl_encode(pl_range(0, 5000), 'lrc') AS across_codecs;

-- every codec pair and operator against a plain SQL reference on the same sets
CREATE TEMP TABLE lists AS
SELECT i, c, pl_encode(pl_agg(v), c) AS p, array_agg(v ORDER BY v) AS a
FROM generate_series(1, 4) i,
     LATERAL (SELECT DISTINCT ((g * (1000 + i * 37)) % (20000 * i))::bigint AS v
              FROM generate_series(1, 500 * i * i) g) s,
     unnest(ARRAY['raw', 'ef', 'lrc']) c
GROUP BY i, c;
SELECT x.i, y.i,
       bool_and((x.p & y.p)::bigint[] = ARRAY(SELECT unnest(x.a) INTERSECT SELECT unnest(y.a) ORDER BY 1)) AS "and",
       bool_and((x.p | y.p)::bigint[] = ARRAY(SELECT unnest(x.a) UNION SELECT unnest(y.a) ORDER BY 1)) AS "or",
       bool_and((x.p - y.p)::bigint[] = ARRAY(SELECT unnest(x.a) EXCEPT SELECT unnest(y.a) ORDER BY 1)) AS minus,
       bool_and((x.p && y.p) = (x.a && y.a)) AS overlap,
       bool_and((x.p = y.p) = (x.a = y.a)) AS eq,
       count(*) AS codec_pairs
FROM lists x, lists y
WHERE x.i <= y.i
GROUP BY x.i, y.i ORDER BY 1, 2;

-- skewed: a few ids against a long list
SELECT pl_range(0, 1000000) & '{5,999999,1000000,1000001}', pl_length(pl_range(0, 1000000) - '{5,6}');

-- variadic
SELECT pl_intersect('{1,2,3,4}', '{2,3,4}', '{3,4,5}'), pl_union('{1}', '{3}', '{2}', '{}');
SELECT pl_intersect('{1,2}'), pl_union(VARIADIC ARRAY[]::postinglist[]), pl_intersect(VARIADIC ARRAY[]::postinglist[]);
SELECT pl_intersect('{1,2}', NULL), pl_union('{1,2}', NULL), '{1}'::postinglist & NULL;
SELECT pl_length(pl_intersect(pl_range(0, 999999), pl_range(500000, 1999999), pl_range(999990, 3000000)));

-- aggregates
SELECT pl_agg(x) FROM (VALUES (5), (1), (NULL), (3), (1)) v(x);
SELECT pl_agg(x) FROM (VALUES (1)) v(x) WHERE false;
SELECT pl_intersect_agg(p), pl_union_agg(p)
FROM (VALUES ('{1,2,3}'::postinglist), ('{2,3,4}'), (NULL), ('{3,2,9}')) v(p);
SELECT pl_intersect_agg(p), pl_union_agg(p) FROM (VALUES ('{1}'::postinglist)) v(p) WHERE false;
-- NULL inputs before any list: the aggregate has no state yet, also as a
-- window function, whose final function runs after every row
SELECT pl_intersect_agg(NULL::postinglist), pl_union_agg(NULL::postinglist), pl_agg(NULL::bigint);
SELECT pl_intersect_agg(p) FROM (VALUES (NULL::postinglist), ('{1,2}'), (NULL), ('{2,3}')) v(p);
SELECT g, pl_intersect_agg(p) OVER w, pl_union_agg(p) OVER w, pl_agg(g) FILTER (WHERE p IS NOT NULL) OVER w
FROM (VALUES (1, NULL::postinglist), (2, NULL), (3, '{1,2,5}'), (4, NULL), (5, '{2,5,7}'), (6, '{5}')) v(g, p)
WINDOW w AS (ORDER BY g);
SELECT i % 3 AS k, pl_agg(i) FROM generate_series(1, 12) i GROUP BY 1 ORDER BY 1;
SELECT pl_length(pl_agg(g % 100000)), pl_codec(pl_agg(g % 100000)) FROM generate_series(1, 1000000) g;

-- parallel aggregation gives the same lists (partial states serialized)
CREATE TABLE agg_input AS
SELECT g AS id, (g * 7919) % 1000003 AS v, pl_range(g % 1000, g % 1000 + 50) AS p
FROM generate_series(1, 200000) g;
ANALYZE agg_input;
CREATE TEMP TABLE serial_result AS
SELECT pl_agg(v) AS a, pl_union_agg(p) AS u, pl_intersect_agg(p) FILTER (WHERE id % 1000 BETWEEN 10 AND 20) AS i
FROM agg_input;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT pl_agg(v), pl_union_agg(p), pl_intersect_agg(p) FILTER (WHERE id % 1000 BETWEEN 10 AND 20) FROM agg_input;
SELECT s.a = p.a AS agg_same, s.u = p.u AS union_same, s.i = p.i AS intersect_same, pl_length(p.a), pl_length(p.u), p.i
FROM serial_result s,
     (SELECT pl_agg(v) AS a, pl_union_agg(p) AS u,
             pl_intersect_agg(p) FILTER (WHERE id % 1000 BETWEEN 10 AND 20) AS i
      FROM agg_input) p;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE agg_input;
