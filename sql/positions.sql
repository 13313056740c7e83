-- The option positions: each posting's positions and weights stored, so
-- that phrases and weights are settled in the index, without the row.
-- Every answer is compared with a sequential scan's.
CREATE EXTENSION IF NOT EXISTS gpuidx;
SET gpuidx.text_config = 'english';

-- no autovacuum: the pending area below is merged by the test, not before it
CREATE TABLE pq (id int PRIMARY KEY, title text, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO pq (id, title, body)
SELECT g,
       (ARRAY['Postgres indexes', 'GPU search', 'Data structures', 'Cooking'])[1 + g % 4],
       (ARRAY['the postgres database answers queries',
              'a gpu database engine searches posting lists',
              'sorted data in compressed lists',
              'apple pie with red cherries and a gpu',
              'mysql or postgres: which database is the database',
              'database gpu database gpu database',
              ''])[1 + g % 7] || ' w' || (g % 11) ||
       repeat(' filler', g % 5) || (ARRAY[' gpu database', ' database', ''])[1 + g % 3]
FROM generate_series(1, 3000) g;
UPDATE pq SET tsv = setweight(to_tsvector('english', title), (ARRAY['A', 'B', 'C', 'D'])[1 + id % 4]::"char") ||
                    to_tsvector('english', body);
-- lexemes without positions (a stripped tsvector) and a NULL
UPDATE pq SET tsv = strip(tsv) WHERE id % 97 = 0;
INSERT INTO pq VALUES (3001, NULL, NULL, NULL);
CREATE INDEX pq_body ON pq USING gpuidx (to_tsvector('english', body)) WITH (positions = on);
CREATE INDEX pq_tsv ON pq USING gpuidx (tsv) WITH (positions = on);
ANALYZE pq;

CREATE TABLE pq_queries (qid serial, q tsquery);
INSERT INTO pq_queries (q) VALUES
  ('gpu <-> databas'), ('databas <-> gpu'), ('postgr <2> answer'), ('postgr <-> answer'),
  ('!(gpu <-> databas)'), ('databas <-> !gpu'), ('!databas <-> gpu'), ('gpu <-> databas <-> gpu'),
  ('(gpu <-> databas) & postgr'), ('(gpu <-> databas) | w3'), ('databas <0> databas'),
  ('postgr:A'), ('postgr:B'), ('postgr:D'), ('gpu:AB & databas'), ('search:A <-> databas'),
  ('cook:C | index:A'), ('filler <-> filler <-> filler'), ('filler <3> databas'),
  ('(!postgr <-> databas) | w5'), ('databas:* <-> gpu'), ('w1 & !(gpu <-> databas)'),
  ('nothing_here <-> gpu'), ('postgres & database'),
  -- phrases of phrases, nested either way, a lexeme twice, ORs of phrases
  ('databas <-> (gpu <-> databas)'), ('(databas <-> gpu) <2> databas'), ('gpu <-> gpu'),
  ('databas <-> databas <-> databas'), ('(gpu <-> databas) | (postgr <-> answer)'),
  ('filler <-> (filler <2> databas)'), ('databas <3> databas & w4');

CREATE FUNCTION pq_ids(col text, q tsquery) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE r int[];
BEGIN
  IF col = 'body' THEN
    SELECT array_agg(id ORDER BY id) INTO r FROM pq WHERE to_tsvector('english', body) @@ q;
  ELSE
    SELECT array_agg(id ORDER BY id) INTO r FROM pq WHERE tsv @@ q;
  END IF;
  RETURN coalesce(r, '{}');
END $$;
CREATE FUNCTION pq_count(col text, q tsquery) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  IF col = 'body' THEN
    SELECT count(*) INTO n FROM pq WHERE to_tsvector('english', body) @@ q;
  ELSE
    SELECT count(*) INTO n FROM pq WHERE tsv @@ q;
  END IF;
  RETURN n;
END $$;

-- ranked: the rows of q in order of doc <=> o (the best k), through the
-- index (its ranked scan: ties in TID order) or row by row (reference)
CREATE FUNCTION pq_ranked(col text, q tsquery, o tsquery, k int, reference bool) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE r int[]; d text := CASE col WHEN 'body' THEN 'to_tsvector(''english'', body)' ELSE 'tsv' END;
BEGIN
  EXECUTE format('SELECT ARRAY(SELECT id FROM pq WHERE %s @@ $1 ORDER BY %s <=> $2%s LIMIT $3)',
                 d, d, CASE WHEN reference THEN ', ctid' ELSE '' END) INTO r USING q, o, k;
  RETURN r;
END $$;
-- every row of q ranked by o: the same rows as the reference's, in an order
-- of doc <=> o (ties are in the order of the TIDs the index holds, which
-- for a row updated in place is its chain's first, not its ctid)
CREATE FUNCTION pq_ranked_all(col text, q tsquery, o tsquery) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE ids int[]; ds float8[]; d text := CASE col WHEN 'body' THEN 'to_tsvector(''english'', body)' ELSE 'tsv' END;
BEGIN
  EXECUTE format('SELECT array_agg(id), array_agg(dist) FROM
                  (SELECT id, %s <=> $2 AS dist FROM pq WHERE %s @@ $1 ORDER BY %s <=> $2 LIMIT 100000) s', d, d, d)
    INTO ids, ds USING q, o;
  IF EXISTS (SELECT FROM generate_subscripts(ds, 1) i WHERE i > 1 AND ds[i] < ds[i - 1]) THEN
    RETURN NULL;			-- out of order
  END IF;
  RETURN ARRAY(SELECT x FROM unnest(ids) x ORDER BY x);
END $$;
CREATE TEMP TABLE pq_ref (col text, qid int, ids int[]);
CREATE TEMP TABLE pq_rref (col text, qid int, shape text, ids int[]);
CREATE FUNCTION pq_compare(label text) RETURNS TABLE (what text, queries bigint, same bigint, nonempty bigint)
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE pq_ref;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  SET LOCAL gpuidx.enable_customscan = off;
  INSERT INTO pq_ref SELECT c, qid, pq_ids(c, q) FROM pq_queries, unnest(ARRAY['body', 'tsv']) c;
  -- ranked by the query itself (its best 7), and every match by another query (rows of score 0 last)
  TRUNCATE pq_rref;
  INSERT INTO pq_rref SELECT c, qid, 'self', pq_ranked(c, q, q, 7, true) FROM pq_queries, unnest(ARRAY['body', 'tsv']) c;
  INSERT INTO pq_rref SELECT c, qid, 'other', ARRAY(SELECT x FROM unnest(pq_ranked(c, q, 'gpu | cherri', 100000, true)) x ORDER BY x)
  FROM pq_queries, unnest(ARRAY['body', 'tsv']) c;
  RESET enable_indexscan;
  RESET enable_bitmapscan;
  RESET gpuidx.enable_customscan;
  SET LOCAL enable_seqscan = off;
  RETURN QUERY
    SELECT label || ' custom scan', count(*), count(*) FILTER (WHERE r.ids = pq_ids(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM pq_ref r JOIN pq_queries q USING (qid);
  RETURN QUERY
    SELECT label || ' counted in the scan', count(*),
           count(*) FILTER (WHERE coalesce(array_length(r.ids, 1), 0) = pq_count(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM pq_ref r JOIN pq_queries q USING (qid);
  RETURN QUERY
    SELECT label || ' ranked', count(*), count(*) FILTER (WHERE r.ids = pq_ranked(r.col, q.q, q.q, 7, false)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM pq_rref r JOIN pq_queries q USING (qid) WHERE r.shape = 'self';
  -- every row by the index's ordered scan itself (a LIMIT of every row
  -- would otherwise sort the custom scan's rows)
  SET LOCAL enable_bitmapscan = off;
  SET LOCAL gpuidx.enable_customscan = off;
  RETURN QUERY
    SELECT label || ' ranked by another query', count(*),
           count(*) FILTER (WHERE r.ids = pq_ranked_all(r.col, q.q, 'gpu | cherri')),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM pq_rref r JOIN pq_queries q USING (qid) WHERE r.shape = 'other';
  RESET enable_bitmapscan;
  RETURN QUERY
    SELECT label || ' bitmap', count(*), count(*) FILTER (WHERE r.ids = pq_ids(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM pq_ref r JOIN pq_queries q USING (qid);
END $$;

SELECT * FROM pq_compare('built');

-- the index settles phrases, weights and prefixes inside phrases: the
-- recheck removes no row
CREATE FUNCTION pq_removed(q tsquery) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := 'none';
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL gpuidx.enable_customscan = off;
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM pq WHERE tsv @@ %L::tsquery', q) LOOP
    IF line ~ 'Rows Removed by Index Recheck' THEN r := trim(line); END IF;
  END LOOP;
  RETURN r;
END $$;
SELECT pq_removed('databas <-> gpu') AS phrase, pq_removed('postgr:A') AS weight,
       pq_removed('databas:* <-> gpu') AS prefix_phrase;
-- and ranked under them (by o, whose best rows mostly fail q), the ranking
-- takes only their matches: none is dropped on the row
CREATE FUNCTION pq_rank_removed(q tsquery, o tsquery) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := 'none'; node text := 'none';
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM pq WHERE tsv @@ %L::tsquery ORDER BY tsv <=> %L::tsquery LIMIT 20', q, o) LOOP
    IF line ~ 'Rows Removed by Index Recheck' THEN r := trim(line); END IF;
    IF line ~ 'Custom Scan \(gpuidx rank\)' THEN node := 'rank scan'; END IF;
  END LOOP;
  RETURN node || ': ' || r;
END $$;
SELECT pq_rank_removed('gpu <-> databas', 'cherri | appl') AS phrase,
       pq_rank_removed('postgr:A', 'databas | answer') AS weight,
       pq_rank_removed('gpu <-> databas:*', 'cherri | appl') AS prefix_phrase;

-- new rows wait in the pending area with their positions, then merge into a segment
INSERT INTO pq (id, title, body)
SELECT g, 'GPU search', (ARRAY['gpu database', 'database gpu', 'the gpu the database'])[1 + g % 3] || ' w' || (g % 11)
FROM generate_series(3002, 3400) g;
UPDATE pq SET tsv = setweight(to_tsvector('english', title), 'B') || to_tsvector('english', body) WHERE id > 3001;
SELECT * FROM pq_compare('pending');
-- settled there too, from the entries' positions: by the backend's index of
-- the pending area, and entry by entry (a pending area too large to index)
SELECT pq_removed('databas <-> gpu') AS phrase_pending, pq_removed('search:B <-> databas') AS weight_pending;
SET gpuidx.pending_index_max_size = 0;
SELECT * FROM pq_compare('pending, entry by entry');
SELECT pq_removed('databas <-> gpu') AS phrase_pending, pq_removed('search:B <-> databas') AS weight_pending,
       pq_removed('databas:* <-> gpu') AS prefix_phrase_pending;
RESET gpuidx.pending_index_max_size;
SELECT gpuidx_merge_pending('pq_tsv') > 0 AS merged_tsv, gpuidx_merge_pending('pq_body') > 0 AS merged_body;
SELECT * FROM pq_compare('merged');
SELECT pq_removed('databas <-> gpu') AS phrase_after_merge;

-- deleted rows, VACUUM (segments with many dead docs are rewritten, positions kept)
DELETE FROM pq WHERE id % 3 = 0;
VACUUM pq;
SELECT * FROM pq_compare('vacuumed');
SELECT gpuidx_verify('pq_tsv') ~ 'is sound' AS tsv_sound, gpuidx_verify('pq_body') ~ 'is sound' AS body_sound;

-- REINDEX keeps the option; positions are stored by default and cost room;
-- positions = off leaves them out
REINDEX INDEX pq_tsv;
SELECT * FROM pq_compare('reindexed');
CREATE INDEX pq_tsv_default ON pq USING gpuidx (tsv);
CREATE INDEX pq_tsv_plain ON pq USING gpuidx (tsv) WITH (positions = off);
SELECT pg_relation_size('pq_tsv_default') = pg_relation_size('pq_tsv') AS default_has_them,
       pg_relation_size('pq_tsv') > pg_relation_size('pq_tsv_plain') AS positions_take_room;
-- gpuidx_index_stats counts those of the POSITIONS stream apart (NULL without
-- positions; a short list's are in its dictionary entry); the parts add up
SELECT i, position_bytes > 0 AS has_position_bytes, position_bytes IS NULL AS no_positions,
       total_bytes = dictionary_bytes + list_bytes + docmap_bytes + deadmap_bytes + pending_bytes + header_bytes
                     + free_bytes + freq_bytes + doclen_bytes + coalesce(position_bytes, 0) AS parts_add_up
FROM unnest(ARRAY['pq_tsv', 'pq_tsv_default', 'pq_tsv_plain']) i, gpuidx_index_stats(i::regclass);
DROP INDEX pq_tsv_plain, pq_tsv_default;

-- positions are a tsvector's: not for text, and only with freqs; by default
-- such an index stores none, asked for it is an error
CREATE INDEX pq_text ON pq USING gpuidx (body) WITH (positions = on);
CREATE INDEX pq_nofreqs ON pq USING gpuidx (tsv) WITH (positions = on, freqs = off);
CREATE INDEX pq_text ON pq USING gpuidx (body);
CREATE INDEX pq_nofreqs ON pq USING gpuidx (tsv) WITH (freqs = off);
SELECT i, position_bytes IS NULL AS no_positions FROM unnest(ARRAY['pq_text', 'pq_nofreqs']) i,
       gpuidx_index_stats(i::regclass);

-- a candidate that is the first posting of a block of a long list: the
-- skip entries find it without the block, but its positions are decoded
-- with the block's docs (their lengths), so that block is read too; the
-- words' places follow the documents' lengths as a path's do
CREATE TABLE pb (id int PRIMARY KEY, tsv tsvector) WITH (autovacuum_enabled = off);
WITH c AS (SELECT g, hashint4(g) % 2 = 0 AS has_common FROM generate_series(1, 120000) g),
     r AS (SELECT g, has_common,
                  has_common AND (count(*) FILTER (WHERE has_common) OVER (ORDER BY g) - 1) % 128 = 0
                  AND g > 1000 AND g % 5 = 0 AS has_rare
           FROM c)
INSERT INTO pb
SELECT g, to_tsvector('english', repeat('filler ', 1 + abs(hashint4(-g)) % 40) ||
                      CASE WHEN has_rare THEN 'rare common' WHEN has_common THEN 'common' ELSE 'other' END)
FROM r;
CREATE INDEX pb_tsv ON pb USING gpuidx (tsv) WITH (codec = ef);
SET enable_seqscan = off;
SELECT count(*) AS phrase, (SELECT count(*) FROM pb WHERE tsv @@ 'rare <-> comm:*') AS prefix_phrase
FROM pb WHERE tsv @@ 'rare <-> common';
RESET enable_seqscan;
SELECT count(*) FILTER (WHERE tsv @@ 'rare <-> common') AS phrase_seq,
       count(*) FILTER (WHERE tsv @@ 'rare <-> comm:*') AS prefix_phrase_seq
FROM pb;
DROP TABLE pb;

DROP TABLE pq, pq_queries;
DROP FUNCTION pq_ids(text, tsquery), pq_count(text, tsquery), pq_compare(text), pq_removed(tsquery),
  pq_ranked(text, tsquery, tsquery, int, bool), pq_ranked_all(text, tsquery, tsquery), pq_rank_removed(tsquery, tsquery);
