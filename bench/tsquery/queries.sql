-- bench/tsquery/run.sh: query mixes written as users write them, from the
-- corpus's real queries (:queries, each line a few words that occur together
-- in documents; phrases as they occur in the loaded documents, found in
-- :src through its index on :doc), :nq queries a mix, for the mixes and sets
-- that :mixes names ("shapes": the ten query shapes), into tsq_queries
-- (mix, n, fn, q, tsq) and tsq_mixes (ord, mix, fn, forms, phrase).
-- Deterministic: the same file and rows give the same queries for a mix,
-- whichever other mixes are made with it.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
-- the phrase lookups below take the first document in heap order: through
-- the index, in one process, so that it is the same document every time
SET enable_seqscan = off;
SET max_parallel_workers_per_gather = 0;
DROP TABLE IF EXISTS tsq_src, tsq_queries, tsq_mixes;
CREATE TEMP TABLE tsq_src (qid int, terms text);
\set load '\\copy tsq_src FROM ' :'queries' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load

-- the forms of each mix: %1$s..%4$s the line's words, %5$s a prefix of its
-- first word (3 to 6 letters, by the line's number), %6$s and %7$s the
-- phrases of 2 and 3 words that begin with the first word in the first
-- document that has it, %8$s the phrase of 2 words that begins with the
-- first word in the first document that has the first two, %9$s the same
-- words joined by <->, %10$s that phrase of 3 words on odd lines (where it
-- has 3) and of 2 otherwise, %11$s all the line's words.  set: the set that
-- names the mix in MIXES; label: the form as the report shows it; phrase:
-- the form must still be a phrase once parsed (a stop word drops out).
CREATE TEMP TABLE tsq_forms (set text, mix text, fn text, f int, need int, tmpl text, label text, phrase bool,
                             o int GENERATED ALWAYS AS IDENTITY);
INSERT INTO tsq_forms (set, mix, fn, f, need, tmpl, label, phrase) VALUES
  (NULL, 'bool', 'to_tsquery', 0, 2, '%1$s & %2$s', 'a & b', false),
  (NULL, 'bool', 'to_tsquery', 1, 2, '%1$s | %2$s', 'a | b', false),
  (NULL, 'bool', 'to_tsquery', 2, 2, '%1$s & !%2$s', 'a & !b', false),
  (NULL, 'bool', 'to_tsquery', 3, 3, '(%1$s | %2$s) & %3$s', '(a | b) & c', false),
  (NULL, 'bool', 'to_tsquery', 4, 4, '%1$s & (%2$s | %3$s) & !%4$s', 'a & (b | c) & !d', false),
  (NULL, 'prefix', 'to_tsquery', 0, 1, '%5$s:*', 'p:*', false),
  (NULL, 'prefix', 'to_tsquery', 1, 2, '%5$s:* & %2$s', 'p:* & b', false),
  (NULL, 'phrase', 'phraseto_tsquery', 0, 2, '%1$s %2$s', 'a b', true),
  (NULL, 'phrase', 'phraseto_tsquery', 1, 1, '%6$s', '2 words of a document', true),
  (NULL, 'phrase', 'phraseto_tsquery', 2, 1, '%7$s', '3 words of a document', true),
  (NULL, 'web', 'websearch_to_tsquery', 0, 2, '%1$s or %2$s', 'a or b', false),
  (NULL, 'web', 'websearch_to_tsquery', 1, 2, '%1$s -%2$s', 'a -b', false),
  (NULL, 'web', 'websearch_to_tsquery', 2, 3, '"%1$s %2$s" %3$s', '"a b" c', false),
  (NULL, 'web', 'websearch_to_tsquery', 3, 3, '%1$s or %2$s -%3$s', 'a or b -c', false),
  (NULL, 'web', 'websearch_to_tsquery', 4, 4, '"%1$s %2$s" or %3$s -%4$s', '"a b" or c -d', false),
  -- the ten shapes, one form each; "a b" from a document that has a and c
  ('shapes', 'web_phrase', 'websearch_to_tsquery', 0, 2, '"%8$s" %2$s', '"a b" c', true),
  ('shapes', 'web_or', 'websearch_to_tsquery', 0, 2, '%1$s or %2$s', 'a or b', false),
  ('shapes', 'web_not', 'websearch_to_tsquery', 0, 3, '%1$s %2$s -%3$s', 'a b -c', false),
  ('shapes', 'and_or', 'to_tsquery', 0, 3, '%1$s & (%2$s | %3$s)', 'a & (b | c)', false),
  ('shapes', 'prefix_and', 'to_tsquery', 0, 2, '%5$s:* & %2$s', 'pre:* & b', false),
  ('shapes', 'and_not', 'to_tsquery', 0, 2, '%1$s & !%2$s', 'a & !b', false),
  ('shapes', 'followed_by', 'to_tsquery', 0, 2, '%9$s', 'a <-> b', true),
  ('shapes', 'plainto', 'plainto_tsquery', 0, 2, '%11$s', 'a b [c [d]]', false),
  ('shapes', 'or_not', 'to_tsquery', 0, 3, '(%1$s | %2$s) & !%3$s', '(a | b) & !c', false),
  ('shapes', 'phraseto', 'phraseto_tsquery', 0, 2, '%10$s', 'a b [c]', true);
DELETE FROM tsq_forms WHERE (mix = ANY (string_to_array(:'mixes', ' ')) OR set = ANY (string_to_array(:'mixes', ' '))) IS NOT TRUE;
SELECT coalesce(bool_or(tmpl ~ '%(6|7)\$s'), false) AS want_phrases,
       coalesce(bool_or(tmpl ~ '%(8|9|10)\$s'), false) AS want_pairs
FROM tsq_forms \gset

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

-- the phrases of 2 and 3 words that begin where word first occurs in body,
-- words as the parser reads them (stop words kept: phraseto_tsquery counts
-- their place)
CREATE FUNCTION pg_temp.tsq_doc_phrases(body text, word text, OUT phrase2 text, OUT phrase3 text)
LANGUAGE sql STABLE AS $$
  WITH t AS (
    SELECT row_number() OVER (ORDER BY ord) AS i, tokid IN (1, 2, 3) AS word, lower(token) AS token
    FROM ts_parse('default', body) WITH ORDINALITY AS x(tokid, token, ord)
    WHERE tokid <> 12),   -- 1, 2, 3: words and words with digits; 12: blanks
  a AS (SELECT min(i) AS i FROM t WHERE word AND to_tsvector('english', token) @@ to_tsquery('english', tsq_doc_phrases.word))
  SELECT (SELECT t1.token || ' ' || t2.token FROM t t1, t t2
          WHERE t1.i = a.i AND t2.i = a.i + 1 AND t2.word),
         (SELECT t1.token || ' ' || t2.token || ' ' || t3.token FROM t t1, t t2, t t3
          WHERE t1.i = a.i AND t2.i = a.i + 1 AND t3.i = a.i + 2 AND t2.word AND t3.word)
  FROM a
$$;

-- the mixes' phrases: for the first :nq lines in an order of their own, the
-- first document (in heap order) that has the first word
CREATE TEMP TABLE tsq_phrases (qid int, phrase2 text, phrase3 text);
\if :want_phrases
INSERT INTO tsq_phrases
SELECT w.qid, p.phrase2, p.phrase3
FROM (SELECT * FROM tsq_words ORDER BY md5('phrase:' || qid) LIMIT :nq) w
CROSS JOIN LATERAL (SELECT body FROM :src WHERE :doc @@ to_tsquery('english', w.w[1]) LIMIT 1) d
CROSS JOIN LATERAL pg_temp.tsq_doc_phrases(d.body, w.w[1]) p;
\endif

-- the shapes' phrases: for 3 * :nq lines of two words or more (in an order
-- of their own; a stop word in a phrase leaves some out), the document of
-- the smallest id among the first 100 (heap order) that have the first two
-- words: the same document in either layout's table (load.sql: their heaps
-- are in id order but where a short row filled an earlier page's space)
CREATE TEMP TABLE tsq_pairs (qid int, phrase2 text, phrase3 text);
\if :want_pairs
INSERT INTO tsq_pairs
SELECT w.qid, p.phrase2, p.phrase3
FROM (SELECT * FROM tsq_words WHERE cardinality(w) >= 2 ORDER BY md5('pair:' || qid) LIMIT 3 * :nq) w
CROSS JOIN LATERAL (SELECT body FROM (SELECT id, body FROM :src
                                      WHERE :doc @@ to_tsquery('english', w.w[1] || ' & ' || w.w[2]) LIMIT 100) f
                    ORDER BY id LIMIT 1) d
CROSS JOIN LATERAL pg_temp.tsq_doc_phrases(d.body, w.w[1]) p;
\endif

CREATE TABLE tsq_queries AS
WITH cand AS (
  SELECT m.mix, m.fn, m.f, m.tmpl, m.phrase, w.qid,
         format(m.tmpl, w.w[1], w.w[2], w.w[3], w.w[4], left(w.w[1], 3 + w.qid % 4), p.phrase2, p.phrase3,
                pp.phrase2, replace(pp.phrase2, ' ', ' <-> '),
                CASE WHEN w.qid % 2 = 1 AND pp.phrase3 IS NOT NULL THEN pp.phrase3 ELSE pp.phrase2 END,
                array_to_string(w.w, ' ')) AS q
  FROM tsq_forms m JOIN tsq_words w ON cardinality(w.w) >= m.need
  LEFT JOIN tsq_phrases p USING (qid)
  LEFT JOIN tsq_pairs pp USING (qid)
  WHERE (m.tmpl NOT LIKE '%5$s%' OR length(w.w[1]) >= 3)
    AND (m.tmpl NOT LIKE '%6$s%' OR p.phrase2 IS NOT NULL)
    AND (m.tmpl NOT LIKE '%7$s%' OR p.phrase3 IS NOT NULL)
    AND (m.tmpl !~ '%(8|9|10)\$s' OR pp.phrase2 IS NOT NULL)
), valid AS (
  -- the query as the server reads it
  SELECT *, CASE fn WHEN 'to_tsquery' THEN to_tsquery('english', q)
                    WHEN 'plainto_tsquery' THEN plainto_tsquery('english', q)
                    WHEN 'phraseto_tsquery' THEN phraseto_tsquery('english', q)
                    ELSE websearch_to_tsquery('english', q) END AS tsq
  FROM cand
), distinct_q AS (
  -- not empty (a stop word), a prefix still a prefix, a phrase still a phrase; each text once a mix
  SELECT DISTINCT ON (mix, q) * FROM valid
  WHERE numnode(tsq) > 0 AND (tmpl NOT LIKE '%:*%' OR tsq::text LIKE '%:*%')
    AND (NOT phrase OR tsq::text LIKE '%<%>%')
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

-- the mixes made, in the order MIXES names them (a set's in the order above);
-- phrase: every form of the mix is a phrase
CREATE TABLE tsq_mixes AS
SELECT row_number() OVER (ORDER BY array_position(string_to_array(:'mixes', ' '), coalesce(set, mix)), min(o))::int AS ord,
       mix, min(fn) AS fn, string_agg(label, ', ' ORDER BY f) AS forms, bool_and(phrase) AS phrase
FROM tsq_forms WHERE mix IN (SELECT mix FROM tsq_queries)
GROUP BY set, mix;
