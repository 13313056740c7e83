-- bad input: every case is an ERROR with a clear message; the session goes on
\set VERBOSITY default

-- malformed text
SELECT ''::postinglist;
SELECT '1,2'::postinglist;
SELECT '{1,2'::postinglist;
SELECT '{1,,2}'::postinglist;
SELECT '{1 2}'::postinglist;
SELECT '{a}'::postinglist;
SELECT '{1}x'::postinglist;
SELECT '{1.5}'::postinglist;
SELECT '{+1}'::postinglist;
SELECT '{-0-1}'::postinglist;
SELECT '{12345678901x}'::postinglist;
SELECT '{-0,5}'::postinglist;

-- out of range
SELECT '{-1}'::postinglist;
SELECT '{4294967296}'::postinglist;
SELECT '{99999999999999999999999}'::postinglist;
SELECT ARRAY[-5]::postinglist;
SELECT ARRAY[4294967296]::bigint[]::postinglist;
SELECT pl_agg(x) FROM (VALUES (1), (-2)) v(x);
SELECT pl_range(-1, 5);
SELECT '{2147483648}'::postinglist::int[];

-- NULLs and shapes of arrays
SELECT ARRAY[1, NULL]::int[]::postinglist;
SELECT ARRAY[[1, 2], [3, 4]]::int[]::postinglist;

-- bad parameters
SELECT pl_encode('{1}', 'zstd');
SET gpuidx.codec = 'zstd';

-- size limit: 268435455 ids per list
SELECT pl_range(0, 4294967295);
SELECT pl_range(0, 268435455);

-- binary input must be a valid encoded list
SELECT '\x'::bytea::postinglist;
SELECT '\x0100'::bytea::postinglist;
SELECT set_byte(pl_to_bytea('{1,2,3}'), 0, 9)::postinglist;
SELECT set_byte(pl_to_bytea('{1,2,3}'), 1, 7)::postinglist;
SELECT set_byte(pl_to_bytea('{1,2,3}'), 20, 9)::postinglist;
SELECT substring(pl_to_bytea(pl_range(1, 1000)) FROM 1 FOR 40)::postinglist;
SELECT set_byte(pl_to_bytea(pl_encode(pl_range(1, 1000), 'ef')), 30, 255)::postinglist;
SELECT set_byte(pl_to_bytea(pl_encode('{1,5,9,13,100}', 'lrc')), 40, 1)::postinglist;
SELECT pl_to_bytea('{1,2,3}')::postinglist = '{1,2,3}' AS round_trip;
-- a count over the limit is damage, reported as such; crafted bytes with a
-- valid checksum are checked for what they claim (one id in 2^32 needs 32 low bits)
SELECT set_byte(pl_to_bytea('{1,2,3}'), 7, 16)::postinglist;
SELECT '\x0101000001000000ffffffff44603d6e0000000000000000ffffffff010000000000000000000000'::bytea::postinglist;

-- the backend survived all of that
SELECT '{1,2,3}'::postinglist & '{2}' AS still_alive;
