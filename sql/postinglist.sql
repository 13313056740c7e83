-- postinglist: text I/O, casts, inspection functions, codecs
SET extra_float_digits = 0;

-- text input is a set: sorted, duplicates dropped, spaces allowed
SELECT '{}'::postinglist, '{ }'::postinglist, ' { 7 } '::postinglist;
SELECT '{5,1,5,3,1}'::postinglist;
SELECT '{0,4294967295}'::postinglist;
SELECT '{ 10 , 2 ,30 }'::postinglist::text;

-- codecs: auto picks the smallest; every codec gives the same set
SELECT pl_codec('{1,2,3}'), pl_codec(pl_range(0, 99999)), pl_codec(pl_agg(g * 7)) FROM generate_series(0, 9999) g;
SELECT pl_codec(pl_encode(p, c)), pl_encode(p, c) = p AS same_set, pl_length(pl_encode(p, c))
FROM (SELECT pl_agg((g * 2654435761::bigint) % 1000003) AS p FROM generate_series(1, 5000) g) s,
     unnest(ARRAY['raw', 'ef', 'lrc', 'auto', 'EF']) c;
SET gpuidx.codec = 'lrc';
SELECT pl_codec('{1,2,3,4,100}');
SET gpuidx.codec = 'raw';
SELECT pl_codec(pl_range(1, 1000));
SET gpuidx.codec = 'ef';
SELECT pl_codec('{1}');
RESET gpuidx.codec;
SHOW gpuidx.codec;

-- inspection
SELECT pl_length('{}'), pl_length('{1,2,3}'), pl_length(pl_range(5, 1004));
SELECT * FROM pl_stats('{}');
SELECT * FROM pl_stats('{1,2,3}');
SELECT codec, count, bytes, round(bits_per_posting::numeric, 3) AS bits, blocks FROM pl_stats(pl_range(0, 999999));
SELECT codec, count, blocks, bits_per_posting < 8 AS compact
FROM pl_stats((SELECT pl_agg(g * 13 + g % 5) FROM generate_series(0, 100000) g));

-- unnest, contains
SELECT * FROM pl_unnest('{9,3,27}');
SELECT count(*), min(x), max(x), sum(x) FROM pl_unnest(pl_range(1000, 300999)) x;
SELECT pl_contains('{3,9,27}', 9), pl_contains('{3,9,27}', 10), pl_contains('{3,9,27}', -1),
       pl_contains('{3,9,27}', 4294967296), pl_contains('{}', 0);
SELECT '{3,9,27}'::postinglist @> 27::bigint, 3::bigint <@ '{3,9,27}'::postinglist, 4 <@ '{3,9,27}'::postinglist;
SELECT count(*) FILTER (WHERE p @> g) AS hits, count(*) FILTER (WHERE NOT p @> g) AS misses
FROM (SELECT pl_agg(g * 3) AS p FROM generate_series(0, 20000) g) s, generate_series(0, 60010) g;
SELECT c, count(*) FILTER (WHERE pl_encode(p, c) @> g) AS hits
FROM (SELECT pl_agg(g * 5 + (g % 3)) AS p FROM generate_series(0, 3000) g) s,
     unnest(ARRAY['raw', 'ef', 'lrc']) c, generate_series(0, 16000) g
GROUP BY c ORDER BY c;

-- ranges
SELECT pl_range(3, 7), pl_range(7, 3), pl_range(4294967290, 4294967295);

-- casts from and to arrays
SELECT ARRAY[5, 1, 3]::postinglist, ARRAY[5, 1, 3]::bigint[]::postinglist;
SELECT ARRAY[]::int[]::postinglist, '{}'::int8[]::postinglist;
SELECT '{1,2,3}'::postinglist::int[], '{1,4294967295}'::postinglist::bigint[];
SELECT '{}'::postinglist::int[], '{}'::postinglist::bigint[];
SELECT (pl_range(1, 100000)::int[])[100000], cardinality(pl_range(1, 100000)::bigint[]);
CREATE TABLE pl_cast_test (p postinglist);
INSERT INTO pl_cast_test VALUES (ARRAY[4, 2]);  -- assignment cast
SELECT p FROM pl_cast_test;

-- bytea: the encoded list itself, checked in full on the way back
SELECT encode(pl_to_bytea('{1,2,3}'), 'hex');
SELECT pl_to_bytea(pl_range(0, 99999))::postinglist = pl_range(0, 99999);
SELECT '{7,8}'::postinglist::bytea::postinglist;

-- storage: no pglz on top of the codec, and far smaller than int4[]
SELECT typstorage, typalign FROM pg_type WHERE typname = 'postinglist';
CREATE TABLE pl_size_test AS
SELECT pl_agg(g) AS p, array_agg(g::int) AS a FROM generate_series(1, 1000000, 3) g;
SELECT pg_column_size(p) < pg_column_size(a) / 20 AS much_smaller, pl_length(p) FROM pl_size_test;
DROP TABLE pl_size_test, pl_cast_test;
