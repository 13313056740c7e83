-- bench/tsquery/run.sh: query mixes written as users write them, from the
-- corpus's real queries (:queries, each line a few words that occur together
-- in documents; phrases also as they occur in docs_gin), :nq a mix, into
-- tsq_queries (mix, n, fn, q, tsq).  Deterministic:
-- the same file gives the same queries.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS tsq_src, tsq_queries;
CREATE TEMP TABLE tsq_src (qid int, terms text);
\set load '\\copy tsq_src FROM ' :'queries' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load

-- each query's words in their order: letters and digits only (so that every
-- form below is valid to_tsquery syntax), each one lexeme, one word a lexeme
-- (two words of one stem would make "a & !b" empty)
CREATE TEMP TABLE tsq_words AS
SELECT qid, array_agg(w ORDER BY ord) AS w
FROM (SELECT DISTINCT ON (qid, lex) qid, ord, w
      FROM (SELECT qid, ord, w, array_to_string(tsvector_to_array(to_tsvector('english', w)), ' ') AS lex
            FROM tsq_src, regexp_split_to_table(lower(btrim(terms)), '\s+') WITH ORDINALITY AS t(w, ord)
            WHERE w ~ '^[a-z][a-z0-9]+$') x
      WHERE lex <> '' AND lex !~ ' '
      ORDER BY qid, lex, ord) y
GROUP BY qid;

-- phrases as they occur: the query's first word and the one or two words
-- after it in the first document (in heap order) that has it, words as the
-- parser reads them (stop words kept: phraseto_tsquery counts their place);
-- for the first :nq queries in an order of their own
CREATE TEMP TABLE tsq_phrases AS
SELECT w.qid, p.phrase2, p.phrase3
FROM (SELECT * FROM tsq_words ORDER BY md5('phrase:' || qid) LIMIT :nq) w
CROSS JOIN LATERAL (SELECT body FROM docs_gin
                    WHERE to_tsvector('english', body) @@ to_tsquery('english', w.w[1]) LIMIT 1) d
CROSS JOIN LATERAL (
  WITH t AS (
    SELECT row_number() OVER (ORDER BY ord) AS i, tokid IN (1, 2, 3) AS word, lower(token) AS token
    FROM ts_parse('default', d.body) WITH ORDINALITY AS x(tokid, token, ord)
    WHERE tokid <> 12),   -- 1, 2, 3: words and words with digits; 12: blanks
  a AS (SELECT min(i) AS i FROM t WHERE word AND to_tsvector('english', token) @@ to_tsquery('english', w.w[1]))
  SELECT (SELECT t1.token || ' ' || t2.token FROM t t1, t t2
          WHERE t1.i = a.i AND t2.i = a.i + 1 AND t2.word) AS phrase2,
         (SELECT t1.token || ' ' || t2.token || ' ' || t3.token FROM t t1, t t2, t t3
          WHERE t1.i = a.i AND t2.i = a.i + 1 AND t3.i = a.i + 2 AND t2.word AND t3.word) AS phrase3
  FROM a) p;

-- the forms of each mix: %1$s..%4$s the query's words, %5$s a prefix of its
-- first word (3 to 6 letters, by the query's number), %6$s and %7$s the
-- phrases above
CREATE TEMP TABLE tsq_forms (mix text, fn text, f int, need int, tmpl text);
INSERT INTO tsq_forms VALUES
  ('bool', 'to_tsquery', 0, 2, '%1$s & %2$s'),
  ('bool', 'to_tsquery', 1, 2, '%1$s | %2$s'),
  ('bool', 'to_tsquery', 2, 2, '%1$s & !%2$s'),
  ('bool', 'to_tsquery', 3, 3, '(%1$s | %2$s) & %3$s'),
  ('bool', 'to_tsquery', 4, 4, '%1$s & (%2$s | %3$s) & !%4$s'),
  ('prefix', 'to_tsquery', 0, 1, '%5$s:*'),
  ('prefix', 'to_tsquery', 1, 2, '%5$s:* & %2$s'),
  ('phrase', 'phraseto_tsquery', 0, 2, '%1$s %2$s'),
  ('phrase', 'phraseto_tsquery', 1, 1, '%6$s'),
  ('phrase', 'phraseto_tsquery', 2, 1, '%7$s'),
  ('web', 'websearch_to_tsquery', 0, 2, '%1$s or %2$s'),
  ('web', 'websearch_to_tsquery', 1, 2, '%1$s -%2$s'),
  ('web', 'websearch_to_tsquery', 2, 3, '"%1$s %2$s" %3$s'),
  ('web', 'websearch_to_tsquery', 3, 3, '%1$s or %2$s -%3$s'),
  ('web', 'websearch_to_tsquery', 4, 4, '"%1$s %2$s" or %3$s -%4$s');

CREATE TABLE tsq_queries AS
WITH cand AS (
  SELECT m.mix, m.fn, m.f, w.qid,
         format(m.tmpl, w.w[1], w.w[2], w.w[3], w.w[4], left(w.w[1], 3 + w.qid % 4), p.phrase2, p.phrase3) AS q
  FROM tsq_forms m JOIN tsq_words w ON cardinality(w.w) >= m.need
  LEFT JOIN tsq_phrases p USING (qid)
  WHERE (m.mix <> 'prefix' OR length(w.w[1]) >= 3)
    AND (m.tmpl NOT LIKE '%6$s%' OR p.phrase2 IS NOT NULL)
    AND (m.tmpl NOT LIKE '%7$s%' OR p.phrase3 IS NOT NULL)
), valid AS (
  -- the query as the server reads it
  SELECT *, CASE fn WHEN 'to_tsquery' THEN to_tsquery('english', q)
                    WHEN 'phraseto_tsquery' THEN phraseto_tsquery('english', q)
                    ELSE websearch_to_tsquery('english', q) END AS tsq
  FROM cand
), distinct_q AS (
  -- not empty (a stop word), a prefix still a prefix, a phrase still a phrase; each text once a mix
  SELECT DISTINCT ON (mix, q) * FROM valid
  WHERE numnode(tsq) > 0 AND (mix <> 'prefix' OR tsq::text LIKE '%:*%')
    AND (mix <> 'phrase' OR tsq::text LIKE '%<%>%')
  ORDER BY mix, q, f, qid
), ranked AS (
  -- each form's queries in an order of their own, so that the forms of a mix draw on different lines
  SELECT *, row_number() OVER (PARTITION BY mix, f ORDER BY md5(mix || f || ':' || qid)) AS r,
         max(f) OVER (PARTITION BY mix) + 1 AS nforms
  FROM distinct_q
)
SELECT mix, row_number() OVER (PARTITION BY mix ORDER BY r, f)::int AS n, fn, q, tsq::text AS tsq
FROM ranked
WHERE r <= ceil(:nq::numeric / nforms)
ORDER BY mix, n;
DELETE FROM tsq_queries WHERE n > :nq;
CREATE UNIQUE INDEX ON tsq_queries (mix, n);
ANALYZE tsq_queries;
