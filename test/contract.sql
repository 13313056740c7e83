-- pgTAP: the postinglist API contract (types, signatures, volatility,
-- strictness, parallel safety, operators, aggregates, error codes); the text
-- index has its own, test/index_contract.sql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS gpuidx;
-- the settings exist once the library is loaded, whether or not this session created the extension
LOAD 'gpuidx';
SET client_min_messages = warning;

SELECT plan(98);

-- the type
SELECT has_type('postinglist');
SELECT is((SELECT typstorage::text FROM pg_type WHERE typname = 'postinglist'), 'e',
		  'postinglist is stored external: no pglz over compressed bytes');
SELECT is((SELECT typalign::text FROM pg_type WHERE typname = 'postinglist'), 'i', 'postinglist is int4-aligned');
SELECT is((SELECT typsend::text FROM pg_type WHERE typname = 'postinglist'), 'postinglist_send', 'binary send');
SELECT is((SELECT typreceive::text FROM pg_type WHERE typname = 'postinglist'), 'postinglist_recv', 'binary receive');

-- functions: signature and return type
SELECT function_returns('pl_length', ARRAY['postinglist'], 'bigint');
SELECT function_returns('pl_codec', ARRAY['postinglist'], 'text');
SELECT function_returns('pl_encode', ARRAY['postinglist', 'text'], 'postinglist');
SELECT function_returns('pl_unnest', ARRAY['postinglist'], 'setof bigint');
SELECT function_returns('pl_contains', ARRAY['postinglist', 'bigint'], 'boolean');
SELECT function_returns('pl_range', ARRAY['bigint', 'bigint'], 'postinglist');
SELECT function_returns('pl_intersect', ARRAY['postinglist[]'], 'postinglist');
SELECT function_returns('pl_union', ARRAY['postinglist[]'], 'postinglist');
SELECT function_returns('pl_stats', ARRAY['postinglist'], 'record');
SELECT is((SELECT provariadic::regtype::text FROM pg_proc WHERE proname = 'pl_intersect'), 'postinglist',
		  'pl_intersect is VARIADIC');
SELECT is((SELECT provariadic::regtype::text FROM pg_proc WHERE proname = 'pl_union'), 'postinglist',
		  'pl_union is VARIADIC');
SELECT is((SELECT array_agg(a ORDER BY a COLLATE "C") FROM pg_proc, unnest(proargnames) a WHERE proname = 'pl_stats'),
		  ARRAY['', 'bits_per_posting', 'blocks', 'bytes', 'codec', 'count'],
		  'pl_stats columns');

-- the worker's statistics: pg_monitor reads them, only superusers reset them
SELECT ok(has_function_privilege('pg_monitor', 'gpuidx_worker_stats()', 'EXECUTE'), 'pg_monitor may read the worker statistics');
SELECT ok(has_table_privilege('pg_monitor', 'gpuidx_worker_stats', 'SELECT'), 'pg_monitor may read the worker statistics view');
SELECT ok(NOT has_table_privilege('public', 'gpuidx_worker_stats', 'SELECT'), 'PUBLIC may not read them');
SELECT ok(NOT has_function_privilege('public', 'gpuidx_worker_stats_reset()', 'EXECUTE'), 'PUBLIC may not reset them');
SELECT ok(has_table_privilege('pg_monitor', 'gpuidx_rank_placement', 'SELECT'), 'pg_monitor may read the ranking placement''s costs');
SELECT ok(NOT has_table_privilege('public', 'gpuidx_rank_placement', 'SELECT')
		  AND NOT has_function_privilege('public', 'gpuidx_rank_placement()', 'EXECUTE'), 'PUBLIC may not');

-- every SQL-callable function of the extension is immutable and parallel
-- safe but those of the text index (test/index_contract.sql), of ranking
-- (which read an index's statistics, or a relation of them) and of the engine (which load a
-- library into the session); all but the aggregate support functions are
-- strict
SELECT is(array_agg(p.proname::text || ':' || p.provolatile::text ORDER BY p.proname), ARRAY[
		  'gpuidx_bm25:s', 'gpuidx_bm25:s', 'gpuidx_bm25:s', 'gpuidx_bm25:s', 'gpuidx_bm25:s',
		  'gpuidx_bm25query:s', 'gpuidx_bm25query:s', 'gpuidx_engine_info:v', 'gpuidx_engine_intersect:v',
		  'gpuidx_handler:v', 'gpuidx_index_stats:v', 'gpuidx_match:s', 'gpuidx_match:s',
		  'gpuidx_matchjoinsel:s', 'gpuidx_matchsel:s', 'gpuidx_merge_pending:v', 'gpuidx_rank_distance:s', 'gpuidx_rank_distance:s',
		  'gpuidx_rank_distance:s', 'gpuidx_rank_placement:v', 'gpuidx_rank_query:s', 'gpuidx_segments:v', 'gpuidx_term_stats:s', 'gpuidx_verify:v',
		  'gpuidx_worker_stats:v', 'gpuidx_worker_stats_reset:v'],
		  'only the text index''s, ranking''s, the engine''s and the worker''s functions are volatile or stable')
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpuidx'
WHERE p.provolatile <> 'i';
SELECT is(array_agg(p.proname::text || ':' || p.proparallel::text ORDER BY p.proname), ARRAY[
		  'gpuidx_bm25query:r', 'gpuidx_bm25query:r', 'gpuidx_engine_info:r', 'gpuidx_engine_intersect:r',
		  'gpuidx_handler:u', 'gpuidx_merge_pending:u', 'gpuidx_verify:u', 'gpuidx_worker_stats_reset:u'],
		  'only the engine (one per session), a bm25query summed from a relation (which may be foreign), the index handler, merge, verification and the stats reset are not parallel safe')
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpuidx'
WHERE p.proparallel <> 's';
SELECT is(array_agg(p.proname::text ORDER BY p.proname), ARRAY[
		  'pl_agg', 'pl_agg_transfn', 'pl_collect_combinefn', 'pl_collect_finalfn',
		  'pl_collect_transfn', 'pl_intersect_agg', 'pl_intersect_combinefn',
		  'pl_intersect_finalfn', 'pl_intersect_transfn', 'pl_union_agg'],
		  'only aggregates and their support functions are non-strict')
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpuidx'
WHERE NOT p.proisstrict;
SELECT volatility_is('pl_length', ARRAY['postinglist'], 'immutable');
SELECT volatility_is('pl_intersect', ARRAY['postinglist[]'], 'immutable');
SELECT is_strict('pl_contains', ARRAY['postinglist', 'bigint']);
SELECT is_strict('pl_encode', ARRAY['postinglist', 'text']);

-- aggregates
SELECT is_aggregate('pl_agg', ARRAY['bigint']);
SELECT is_aggregate('pl_union_agg', ARRAY['postinglist']);
SELECT is_aggregate('pl_intersect_agg', ARRAY['postinglist']);
SELECT is(count(*)::int, 3, 'all three aggregates have combine, serial and deserial functions')
FROM pg_aggregate
WHERE aggfnoid::text IN ('pl_agg', 'pl_union_agg', 'pl_intersect_agg')
  AND aggcombinefn <> 0 AND aggserialfn <> 0 AND aggdeserialfn <> 0;

-- operators and their commutators
SELECT has_operator('postinglist', '&', 'postinglist', 'postinglist');
SELECT has_operator('postinglist', '|', 'postinglist', 'postinglist');
SELECT has_operator('postinglist', '-', 'postinglist', 'postinglist');
SELECT has_operator('postinglist', '&&', 'postinglist', 'boolean');
SELECT has_operator('postinglist', '=', 'postinglist', 'boolean');
SELECT has_operator('postinglist', '<>', 'postinglist', 'boolean');
SELECT has_operator('postinglist', '@>', 'bigint', 'boolean');
SELECT has_operator('bigint', '<@', 'postinglist', 'boolean');
SELECT is(oprcom::regoperator::text, expected, 'commutator of ' || oid::regoperator::text)
FROM pg_operator o
JOIN (VALUES ('&(postinglist,postinglist)', '&(postinglist,postinglist)'),
			 ('|(postinglist,postinglist)', '|(postinglist,postinglist)'),
			 ('&&(postinglist,postinglist)', '&&(postinglist,postinglist)'),
			 ('=(postinglist,postinglist)', '=(postinglist,postinglist)'),
			 ('<>(postinglist,postinglist)', '<>(postinglist,postinglist)'),
			 ('@>(postinglist,bigint)', '<@(bigint,postinglist)'),
			 ('<@(bigint,postinglist)', '@>(postinglist,bigint)')) v(op, expected)
  ON o.oid = v.op::regoperator
ORDER BY v.op;
SELECT is(oprcom, 0::oid, 'difference has no commutator') FROM pg_operator
WHERE oid = '-(postinglist,postinglist)'::regoperator;
SELECT is(oprnegate::regoperator::text, '<>(postinglist,postinglist)', '= negates <>')
FROM pg_operator WHERE oid = '=(postinglist,postinglist)'::regoperator;
SELECT is(oprrest::text, 'eqsel', '= estimates with eqsel')
FROM pg_operator WHERE oid = '=(postinglist,postinglist)'::regoperator;

-- casts
SELECT has_cast('integer[]', 'postinglist');
SELECT has_cast('bigint[]', 'postinglist');
SELECT has_cast('postinglist', 'integer[]');
SELECT has_cast('postinglist', 'bigint[]');
SELECT has_cast('bytea', 'postinglist');
SELECT has_cast('postinglist', 'bytea');
SELECT cast_context_is('integer[]', 'postinglist', 'assignment');
SELECT cast_context_is('postinglist', 'integer[]', 'explicit');

-- settings
SELECT is(current_setting('gpuidx.codec'), 'auto', 'gpuidx.codec defaults to auto');
SELECT is(current_setting('gpuidx.engine_library'), '$libdir/gpuidx_cuda', 'gpuidx.engine_library default');
SELECT is((SELECT context FROM pg_settings WHERE name = 'gpuidx.engine_library'), 'sighup',
		  'the engine library is the server''s: no session picks one');
SELECT is((SELECT array_agg(name::text ORDER BY name) FROM pg_settings
		   WHERE name IN ('gpuidx.gpu_min_postings', 'gpuidx.gpu_rank_backlog', 'gpuidx.cpu_ratio_threshold')
			 AND context = 'superuser'),
		  ARRAY['gpuidx.cpu_ratio_threshold', 'gpuidx.gpu_min_postings', 'gpuidx.gpu_rank_backlog'],
		  'what a query may ask of the shared worker is a superuser''s to change');
SELECT function_returns('gpuidx_engine_intersect', ARRAY['postinglist[]'], 'postinglist');
SELECT ok((SELECT engine IN ('cpu', 'cuda') FROM gpuidx_engine_info()), 'an engine is always there');

-- results of the basic operations
SELECT is(('{3,9,27,81}'::postinglist & '{1,3,9}')::text, '{3,9}', 'intersection');
SELECT is(('{3,9}'::postinglist | '{1,3}')::text, '{1,3,9}', 'union');
SELECT is(('{3,9}'::postinglist - '{3}')::text, '{9}', 'difference');
SELECT ok('{1,3}'::postinglist && '{3,4}', 'overlap');
SELECT ok('{5,1}'::postinglist = '{1,5}', 'equality ignores input order');

-- error codes
SELECT throws_ok($$SELECT '{1,a}'::postinglist$$, '22P02', NULL, 'malformed text: 22P02');
SELECT throws_ok($$SELECT 'x'::postinglist$$, '22P02', NULL, 'no brace: 22P02');
SELECT throws_ok($$SELECT '{-1}'::postinglist$$, '22003', NULL, 'negative id: 22003');
SELECT throws_ok($$SELECT '{4294967296}'::postinglist$$, '22003', NULL, 'id over 2^32-1: 22003');
SELECT throws_ok($$SELECT ARRAY[-1]::postinglist$$, '22003', NULL, 'negative array element: 22003');
SELECT throws_ok($$SELECT ARRAY[4294967296]::bigint[]::postinglist$$, '22003', NULL, 'int8 element over range: 22003');
SELECT throws_ok($$SELECT pl_agg(x) FROM (VALUES (-1::bigint)) v(x)$$, '22003', NULL, 'pl_agg out of range: 22003');
SELECT throws_ok($$SELECT '{3000000000}'::postinglist::int[]$$, '22003', NULL, 'to int4[] over range: 22003');
SELECT throws_ok($$SELECT ARRAY[1,NULL]::int[]::postinglist$$, '22004', NULL, 'NULL in array: 22004');
SELECT throws_ok($$SELECT ARRAY[[1],[2]]::int[]::postinglist$$, '2202E', NULL, '2-D array: 2202E');
SELECT throws_ok($$SELECT pl_encode('{1}', 'zip')$$, '22023', NULL, 'unknown codec: 22023');
SELECT throws_ok($$SET gpuidx.codec = 'zip'$$, '22023', NULL, 'bad setting value: 22023');
SELECT throws_ok($$SELECT pl_range(0, 4294967295)$$, '54000', NULL, 'over the size limit: 54000');
SELECT throws_ok($$SELECT '\x'::bytea::postinglist$$, '22P03', NULL, 'empty binary: 22P03');
SELECT throws_ok($$SELECT set_byte(pl_to_bytea('{1,2}'), 0, 2)::postinglist$$, '22P03', NULL, 'binary version: 22P03');
SELECT throws_ok($$SELECT set_byte(pl_to_bytea('{1,2}'), 1, 9)::postinglist$$, '22P03', NULL, 'binary codec: 22P03');
SELECT throws_ok($$SELECT set_byte(pl_to_bytea(pl_range(0, 500)), 30, 1)::postinglist$$, '22P03', NULL, 'binary bit flip: 22P03');
SELECT throws_ok($$SELECT substring(pl_to_bytea(pl_range(0, 500)) FROM 1 FOR 30)::postinglist$$, '22P03', NULL, 'truncated binary: 22P03');
SELECT throws_ok($$SELECT '{-0-1}'::postinglist$$, '22P02', NULL, 'a malformed negative id: 22P02, not 22003');
SELECT throws_ok($$SELECT set_byte(pl_to_bytea('{1,2,3}'), 7, 16)::postinglist$$, '22P03', NULL,
				 'a damaged count over the limit: 22P03, not 54000');
SELECT throws_ok($$SELECT '\x0101000001000000ffffffff44603d6e0000000000000000ffffffff010000000000000000000000'::bytea::postinglist$$,
				 '22P03', NULL, 'an EF block of one id in 2^32 (valid checksum): 22P03');
SELECT is('{-0,5}'::postinglist::text, '{0,5}', '-0 is the id 0');

-- binary round trip through send/recv
SELECT is(postinglist_send(pl_range(0, 1000)), pl_to_bytea(pl_range(0, 1000)), 'send is the encoded list');

-- the bytes keep the documented header (docs/FORMAT.md)
SELECT is(get_byte(pl_to_bytea('{1,2,3}'), 0), 1, 'format version byte is 1');
SELECT is(get_byte(pl_to_bytea(pl_encode('{1,2,3}', 'ef')), 1), 1, 'codec byte: ef = 1');
SELECT is(get_byte(pl_to_bytea(pl_encode('{1,2,3}', 'lrc')), 1), 2, 'codec byte: lrc = 2');
SELECT is(get_byte(pl_to_bytea(pl_encode('{1,2,3}', 'raw')), 1), 0, 'codec byte: raw = 0');

SELECT * FROM finish();
ROLLBACK;
