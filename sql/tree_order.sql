-- Query trees ordered by size: an AND starts from its operand with the
-- fewest documents, whatever its kind (an OR, a prefix, a phrase, a nested
-- AND), and searches a frequent term's list only at those candidates, so
-- the blocks of posting lists read (List Blocks Read, shown by EXPLAIN
-- (ANALYZE, BUFFERS)) stay few however long the frequent list is.  Every
-- count is compared with a sequential scan's.
CREATE EXTENSION IF NOT EXISTS gpuidx;
SET gpuidx.text_config = 'english';

-- 'usr' in six rows of seven (about 670 blocks of 128), 'bin' in two of
-- three; a few rare words, a prefix family and a phrase near the end
CREATE TABLE tro (id int PRIMARY KEY, tsv tsvector);
INSERT INTO tro
SELECT g, to_tsvector('english',
       CASE WHEN g % 7 <> 0 THEN 'usr ' ELSE '' END ||
       CASE WHEN g % 3 <> 0 THEN 'bin ' ELSE '' END ||
       'w' || (g % 101) ||
       CASE g WHEN 50001 THEN ' raremoth' WHEN 99998 THEN ' rarewasp'
              WHEN 99990 THEN ' zetaone' WHEN 99991 THEN ' zetatwo' WHEN 60001 THEN ' zetathree'
              WHEN 80001 THEN ' alpha beta' WHEN 80002 THEN ' beta alpha' WHEN 80003 THEN ' alpha gamma beta'
              ELSE '' END)
FROM generate_series(1, 100000) g;
CREATE INDEX tro_idx ON tro USING gpuidx (tsv);
VACUUM ANALYZE tro;

-- a count through the index: its answer and the list blocks it read
CREATE FUNCTION tro_blocks(q tsquery, OUT n bigint, OUT blocks bigint) LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT count(*) FROM tro WHERE tsv @@ $1'
    INTO plan USING q;
  blocks := (plan -> 0 -> 'Plan' ->> 'List Blocks Read')::bigint;
  EXECUTE 'SELECT count(*) FROM tro WHERE tsv @@ $1' INTO n USING q;
END $$;
CREATE FUNCTION tro_seq(q tsquery) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (SELECT tsv FROM tro OFFSET 0) t WHERE tsv @@ q $$;

-- every query: the same count as a sequential scan, and at most the blocks stated
-- (a frequent list decoded whole would be hundreds)
SELECT q, t.n, t.n = tro_seq(q::tsquery) AS same, t.blocks <= max_blocks AS few_blocks
FROM (VALUES ('(raremoth | rarewasp) & usr', 12),
             ('usr & (raremoth | rarewasp) & bin', 12),
             ('zeta:* & usr', 12),
             ('zeta:* & usr & bin', 12),
             ('alpha <-> beta & usr', 12),
             ('(alpha <-> beta) & usr & bin', 12),
             ('usr & (raremoth & w35 | zetaone & bin)', 12),
             ('(raremoth | zeta:*) & !usr', 12),
             ('(raremoth | rarewasp) & !(usr & bin)', 12),
             ('zeta:* & !(bin | w99)', 12),
             ('(rarewasp | zetatwo) & (usr | bin)', 12)) v(q, max_blocks),
     LATERAL tro_blocks(q::tsquery) t
ORDER BY q;

-- the counter counts: two frequent terms are read whole
SELECT n, blocks > 600 AS many_blocks FROM tro_blocks('usr & bin');

-- nothing is left out by starting elsewhere: the rows themselves
SELECT array_agg(id ORDER BY id) FROM tro WHERE tsv @@ to_tsquery('english', '(raremoth | zeta:*) & usr');
SELECT array_agg(id ORDER BY id) FROM tro WHERE tsv @@ to_tsquery('english', '(alpha <-> beta) & usr');
SELECT array_agg(id ORDER BY id) FROM tro WHERE tsv @@ to_tsquery('english', 'zeta:* & !(bin | w99)');

-- A prefix with thousands of terms ('lx1' .. 'lx30000', one a row) at a
-- few candidates: searching each of its terms at them would read thousands
-- of lists, so its rows are checked instead (the rows with 'moth' and no
-- 'lx' term are removed by the check), in every bound and scan: counted,
-- limited and through a bitmap.
CREATE TABLE trp (id int PRIMARY KEY, tsv tsvector);
INSERT INTO trp
SELECT g, to_tsvector('simple',
       CASE WHEN g <= 30000 THEN 'lx' || g ELSE 'other' END || ' usr' ||
       CASE WHEN g IN (7, 15007, 29999, 30001, 30002) THEN ' moth' ELSE '' END ||
       CASE WHEN g IN (15007, 30002) THEN ' zz' ELSE '' END)
FROM generate_series(1, 30010) g;
CREATE INDEX trp_idx ON trp USING gpuidx (tsv);
VACUUM ANALYZE trp;
CREATE FUNCTION trp_plan(q tsquery, OUT n bigint, OUT blocks bigint, OUT checked bigint) LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT count(*) FROM trp WHERE tsv @@ $1'
    INTO plan USING q;
  blocks := (plan -> 0 -> 'Plan' ->> 'List Blocks Read')::bigint;
  checked := (plan -> 0 -> 'Plan' ->> 'Heap Fetches')::bigint;
  EXECUTE 'SELECT count(*) FROM trp WHERE tsv @@ $1' INTO n USING q;
END $$;
SELECT q, t.n, t.n = (SELECT count(*) FROM (SELECT tsv FROM trp OFFSET 0) x WHERE tsv @@ q::tsquery) AS same,
       t.blocks < 100 AS few_blocks, t.checked > 0 AS rows_checked
FROM (VALUES ('lx:* & moth'), ('moth & !lx:*'), ('moth & (lx:* | zz)'), ('moth & !(lx:* & zz)'),
             ('lx:* & moth & !zz'), ('(lx:* | other) & moth'), ('(lx:* <-> usr) & moth'),
             ('moth & !(lx:* <-> usr)')) v(q),
     LATERAL trp_plan(q::tsquery) t
ORDER BY q;
-- the rows themselves, through each kind of scan
SELECT array_agg(id ORDER BY id) FROM trp WHERE tsv @@ 'lx:* & moth'::tsquery;
SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM trp WHERE tsv @@ 'moth & !lx:*'::tsquery LIMIT 5) l;
SET gpuidx.enable_customscan = off;
SET enable_seqscan = off;
SET enable_indexscan = off;
SELECT array_agg(id ORDER BY id) FROM trp WHERE tsv @@ 'lx:* & moth'::tsquery;
SELECT array_agg(id ORDER BY id) FROM trp WHERE tsv @@ 'moth & !lx:*'::tsquery;
SELECT array_agg(id ORDER BY id) FROM trp WHERE tsv @@ '(lx:* | other) & moth & !zz'::tsquery;
RESET enable_indexscan;
RESET enable_seqscan;
RESET gpuidx.enable_customscan;

DROP TABLE trp;
DROP FUNCTION trp_plan(tsquery);
DROP TABLE tro;
DROP FUNCTION tro_blocks(tsquery);
DROP FUNCTION tro_seq(tsquery);
