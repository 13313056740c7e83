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

DROP TABLE tro;
DROP FUNCTION tro_blocks(tsquery);
DROP FUNCTION tro_seq(tsquery);
