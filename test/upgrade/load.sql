-- The old cluster of scripts/test-upgrade.sh: real text (Debian's package
-- descriptions) in tables with a gpuidx index of every kind, a table of
-- posting lists in each codec, and the real queries the answers are asked
-- with.  Rows are added and deleted after the builds, so the indexes carry
-- pending rows, or a second segment and dead entries, through the upgrade.
\set ON_ERROR_STOP on
CREATE EXTENSION gpuidx;

CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector);
CREATE TEMP TABLE raw (id int, body text);
\copy raw FROM '/var/tmp/gpxupg/docs.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
INSERT INTO docs SELECT id, body, to_tsvector('english', body) FROM raw
WHERE id <= (SELECT max(id) * 9 / 10 FROM raw);

CREATE INDEX docs_body ON docs USING gpuidx (body);
CREATE INDEX docs_tsv ON docs USING gpuidx (tsv) WITH (positions = on);
CREATE INDEX docs_expr ON docs USING gpuidx (to_tsvector('english', body));
-- the same lexemes without positions: phrases settled by rechecking rows
CREATE TABLE nopos (id int PRIMARY KEY, tsv tsvector);
INSERT INTO nopos SELECT id, tsv FROM docs;
CREATE INDEX nopos_tsv ON nopos USING gpuidx (tsv) WITH (positions = off);

-- after the builds: rows added, some deleted (no vacuum)
INSERT INTO docs SELECT id, body, to_tsvector('english', body) FROM raw
WHERE id > (SELECT max(id) * 9 / 10 FROM raw);
INSERT INTO nopos SELECT id, tsv FROM docs WHERE id NOT IN (SELECT id FROM nopos);
DELETE FROM docs WHERE id % 17 = 3;
DELETE FROM nopos WHERE id % 19 = 5;
VACUUM nopos;    -- its pending rows merged into a second segment, the deleted ones marked

-- posting lists: the documents of each lexeme found in at least two, in
-- each codec
CREATE TABLE lists (word text PRIMARY KEY, ids postinglist, ids_ef postinglist,
                    ids_lrc postinglist, ids_raw postinglist);
INSERT INTO lists (word, ids)
SELECT word, pl_agg(id) FROM (SELECT id, unnest(tsvector_to_array(tsv)) AS word FROM docs) w
GROUP BY word HAVING count(*) >= 2;
UPDATE lists SET ids_ef = pl_encode(ids, 'ef'), ids_lrc = pl_encode(ids, 'lrc'), ids_raw = pl_encode(ids, 'raw');
INSERT INTO lists (word, ids, ids_ef, ids_lrc, ids_raw)
SELECT 'range', pl_range(1, 100000), pl_encode(pl_range(1, 100000), 'ef'),
       pl_encode(pl_range(1, 100000), 'lrc'), pl_encode(pl_range(1, 100000), 'raw');

-- the real queries (searches typed by people, from the corpus), each with
-- its tsqueries and lexemes made here, so that they are the same whatever
-- version's stemmer asks them; and phrases: a document's second and third
-- words, found in it at least
CREATE TABLE queries (qid int PRIMARY KEY, q text, tsq tsquery, ptsq tsquery, lexemes text[]);
\copy queries (qid, q) FROM '/var/tmp/gpxupg/queries.tsv' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
UPDATE queries SET tsq = plainto_tsquery('english', q), ptsq = phraseto_tsquery('english', q),
                   lexemes = tsvector_to_array(to_tsvector('english', q));
CREATE TABLE phrases (qid int PRIMARY KEY, q tsquery);
INSERT INTO phrases
SELECT id, phraseto_tsquery('english', split_part(body, ' ', 2) || ' ' || split_part(body, ' ', 3))
FROM docs WHERE id % 40 = 1;
ANALYZE;
