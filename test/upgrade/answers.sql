-- The answers of scripts/test-upgrade.sh: a line per query and kind, the
-- matching ids in order ('-' for none), or the top 10 ids with their scores.
-- Run before and after each upgrade and compared line by line.  Ranked lists
-- show '~' for the ids tied at the 10th score, which either run may pick.
-- The kinds text, expr_and, expr_phrase and rank_text tokenize rows or the
-- query with the server's stemmer; the others ask stored tsqueries of
-- stored tsvectors.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- a tsquery's first lexeme as a prefix
CREATE FUNCTION pg_temp.prefix(q tsquery) RETURNS tsquery LANGUAGE sql IMMUTABLE
    AS $$ SELECT CASE WHEN numnode(q) = 1 THEN (q::text || ':*')::tsquery
                      ELSE (split_part(q::text, ' ', 1) || ':*')::tsquery END $$;
CREATE FUNCTION pg_temp.anyof(q tsquery) RETURNS tsquery LANGUAGE sql IMMUTABLE
    AS $$ SELECT replace(q::text, ' & ', ' | ')::tsquery $$;

SELECT 'text', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                              WHERE d.body @@& q.q), '-') FROM queries q ORDER BY qid;
SELECT 'tsv_and', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                 WHERE d.tsv @@ q.tsq), '-') FROM queries q ORDER BY qid;
SELECT 'tsv_or', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                WHERE d.tsv @@ pg_temp.anyof(q.tsq)), '-') FROM queries q ORDER BY qid;
SELECT 'tsv_prefix', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                    WHERE d.tsv @@ pg_temp.prefix(q.tsq)), '-')
FROM queries q WHERE numnode(q.tsq) > 0 ORDER BY qid;
SELECT 'tsv_phrase', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                    WHERE d.tsv @@ p.q), '-') FROM phrases p ORDER BY qid;
SELECT 'tsv_query_phrase', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                          WHERE d.tsv @@ q.ptsq), '-') FROM queries q ORDER BY qid;
SELECT 'expr_and', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                  WHERE to_tsvector('english', d.body) @@ q.tsq), '-')
FROM queries q ORDER BY qid;
SELECT 'expr_phrase', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d
                                     WHERE to_tsvector('english', d.body) @@ p.q), '-') FROM phrases p ORDER BY qid;
SELECT 'nopos_and', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM nopos d
                                   WHERE d.tsv @@ q.tsq), '-') FROM queries q ORDER BY qid;
SELECT 'nopos_phrase', qid, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM nopos d
                                      WHERE d.tsv @@ p.q), '-') FROM phrases p ORDER BY qid;

SELECT 'rank_text', qid, coalesce((
    SELECT string_agg(CASE WHEN s > m THEN id::text ELSE '~' END || ':' || round(s::numeric, 6), ','
                      ORDER BY s DESC, CASE WHEN s > m THEN id END)
    FROM (SELECT id, s, min(s) OVER () AS m
          FROM (SELECT id, -(body <=> q.q) AS s FROM docs ORDER BY body <=> q.q LIMIT 10) r) r2), '-')
FROM queries q ORDER BY qid;
SELECT 'rank_tsv', qid, coalesce((
    SELECT string_agg(CASE WHEN s > m THEN id::text ELSE '~' END || ':' || round(s::numeric, 6), ','
                      ORDER BY s DESC, CASE WHEN s > m THEN id END)
    FROM (SELECT id, s, min(s) OVER () AS m
          FROM (SELECT id, -(tsv <=> q.tsq) AS s FROM docs
                ORDER BY tsv <=> q.tsq LIMIT 10) r) r2), '-')
FROM queries q WHERE numnode(q.tsq) > 0 ORDER BY qid;

-- posting lists: each one's ids, the codecs' lists alike, set operations
SELECT 'pl', word, pl_length(ids), md5(ids::bigint[]::text), ids = ids_ef AND ids = ids_lrc AND ids = ids_raw,
       pl_contains(ids_lrc, 100), pl_contains(ids_ef, 2000), ids_raw @> 3::bigint,
       pl_length(ids & ids_lrc), pl_length(ids_ef | ids_raw), pl_length(pl_range(1, 5000) - ids_lrc),
       ids && pl_range(1, 100), (SELECT sum(x) FROM pl_unnest(ids_ef) x)
FROM lists ORDER BY word;
SELECT 'pl_query', qid, coalesce((
    SELECT pl_length(pl_intersect(VARIADIC array_agg(l.ids_lrc))) || ':' ||
           md5(pl_intersect(VARIADIC array_agg(l.ids))::bigint[]::text) || ':' ||
           md5(pl_union(VARIADIC array_agg(l.ids_ef))::bigint[]::text)
    FROM lists l WHERE l.word = ANY (q.lexemes)), '-')
FROM queries q ORDER BY qid;
SELECT 'pl_agg', pl_length(pl_union_agg(ids)), md5(pl_union_agg(ids_lrc)::bigint[]::text),
       md5(pl_intersect_agg(ids_raw)::bigint[]::text), md5(pl_agg(length(word))::bigint[]::text)
FROM lists WHERE word < 'c';
