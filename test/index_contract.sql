-- pgTAP: the contract of the text index: the @@& operator, the gpuidx access
-- method and its operator classes, the functions about an index, the
-- setting, and the error codes of every kind of bad input
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS gpuidx;
-- the settings exist once the library is loaded, whether or not this session created the extension
LOAD 'gpuidx';
SET client_min_messages = warning;

SELECT plan(71);

-- the operator
SELECT has_operator('text', '@@&', 'text', 'boolean');
SELECT has_operator('tsvector', '@@&', 'text', 'boolean');
SELECT is(p.proname::text, 'gpuidx_match', '@@& (' || o.oprleft::regtype || ', text) runs gpuidx_match')
FROM pg_operator o JOIN pg_proc p ON p.oid = o.oprcode WHERE o.oprname = '@@&' ORDER BY o.oprleft::regtype::text;
SELECT is(oprrest::text, 'gpuidx_matchsel', '@@& (' || oprleft::regtype || ', text) estimates from the index')
FROM pg_operator WHERE oprname = '@@&' ORDER BY oprleft::regtype::text;
SELECT is(oprjoin::text, 'gpuidx_matchjoinsel', '@@& (' || oprleft::regtype || ', text) estimates joins from the index')
FROM pg_operator WHERE oprname = '@@&' ORDER BY oprleft::regtype::text;
SELECT is(oprcom, 0::oid, '@@& has no commutator') FROM pg_operator
WHERE oid = '@@&(text,text)'::regoperator;
SELECT volatility_is('gpuidx_match', ARRAY['text', 'text'], 'stable');
SELECT volatility_is('gpuidx_match', ARRAY['tsvector', 'text'], 'stable');
SELECT is_strict('gpuidx_match', ARRAY['text', 'text']);
SELECT is((SELECT proparallel::text FROM pg_proc WHERE oid = 'gpuidx_match(text,text)'::regprocedure), 's',
		  '@@& is parallel safe');
SELECT ok((SELECT procost >= 100 FROM pg_proc WHERE oid = 'gpuidx_match(text,text)'::regprocedure),
		  'tokenizing a text row by row is costed like to_tsvector');

-- the access method and its operator classes
SELECT is((SELECT amtype::text FROM pg_am WHERE amname = 'gpuidx'), 'i', 'gpuidx is an index access method');
SELECT is((SELECT amhandler::text FROM pg_am WHERE amname = 'gpuidx'), 'gpuidx_handler', 'its handler');
SELECT has_opclass('gpuidx_text_ops');
SELECT has_opclass('gpuidx_tsvector_ops');
SELECT ok(opcdefault, opcname || ' is the default for ' || opcintype::regtype)
FROM pg_opclass WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx') ORDER BY opcname;
SELECT is(array_agg(amopstrategy || ':' || amopopr::regoperator ORDER BY amopopr::regoperator::text),
		  ARRAY['5:<=>(text,bm25query)', '2:<=>(text,text)', '5:<=>(tsvector,bm25query)', '2:<=>(tsvector,text)',
				'1:@@&(text,text)', '1:@@&(tsvector,text)', '3:@@(tsvector,tsquery)', '4:@@@(tsvector,tsquery)'],
		  'strategy 1 is @@& and strategy 2 the ordering <=> in both families, 5 the ordering <=> of a bm25query; 3 and 4 are @@ and @@@ of a tsquery in the tsvector family')
FROM pg_amop WHERE amopmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx');
SELECT is(count(*)::int, 0, 'no support functions') FROM pg_amproc p
JOIN pg_opfamily f ON f.oid = p.amprocfamily WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx');

-- what the access method can and cannot do
SELECT is(pg_indexam_has_property((SELECT oid FROM pg_am WHERE amname = 'gpuidx'), p), expected,
		  'gpuidx ' || p || ' is ' || expected)
FROM (VALUES ('can_order', false), ('can_unique', false), ('can_multi_col', false),
			 ('can_exclude', true), ('can_include', false)) v(p, expected);
CREATE TABLE ic (id int, body text, tsv tsvector);
INSERT INTO ic SELECT g, 'contract row ' || g, to_tsvector('english', 'contract row ' || g)
FROM generate_series(1, 200) g;
CREATE INDEX ic_body ON ic USING gpuidx (body);
CREATE INDEX ic_tsv ON ic USING gpuidx (tsv);
SELECT is(pg_index_has_property('ic_body'::regclass, p), expected, 'index ' || p || ' is ' || expected)
FROM (VALUES ('bitmap_scan', true), ('index_scan', true), ('backward_scan', false),
			 ('clusterable', false)) v(p, expected);
-- its column is not sorted and not returned (ordering by distance, <=>,
-- PostgreSQL reports as unknown for access methods without amproperty)
SELECT is(pg_index_column_has_property('ic_body'::regclass, 1, p), expected, 'column ' || p || ' is ' || expected)
FROM (VALUES ('orderable', false), ('returnable', false)) v(p, expected);
SELECT function_returns('gpuidx_bm25', ARRAY['text', 'text', 'regclass'], 'double precision');

-- the functions about an index
SELECT function_returns('gpuidx_verify', ARRAY['regclass'], 'text');
SELECT function_returns('gpuidx_merge_pending', ARRAY['regclass'], 'bigint');
SELECT function_returns('gpuidx_index_stats', ARRAY['regclass'], 'record');
SELECT function_returns('gpuidx_segments', ARRAY['regclass'], 'setof record');
SELECT matches(gpuidx_verify('ic_body'), 'is sound: 1 segments, 200 docs .*200 rows of "ic" found',
			   'gpuidx_verify finds a fresh text index sound');
SELECT matches(gpuidx_verify('ic_tsv'), 'is sound', 'gpuidx_verify finds a fresh tsvector index sound');
SELECT results_eq($$SELECT config, kind, segments, docs, dead_docs, pending_entries
					FROM gpuidx_index_stats('ic_body')$$,
				  $$VALUES ('pg_catalog.english', 'text', 1, 200::bigint, 0::bigint, 0::bigint)$$,
				  'gpuidx_index_stats reports what the index holds');
SELECT ok(total_bytes = dictionary_bytes + list_bytes + docmap_bytes + deadmap_bytes + pending_bytes
		  + header_bytes + free_bytes + freq_bytes + doclen_bytes + coalesce(position_bytes, 0),
		  'the parts of gpuidx_index_stats add up to the index size')
FROM gpuidx_index_stats('ic_body');
SELECT is(position_bytes, NULL, 'an index without the option positions reports no position_bytes')
FROM gpuidx_index_stats('ic_body');
SELECT is(total_bytes, pg_relation_size('ic_body'), 'total_bytes is the relation size')
FROM gpuidx_index_stats('ic_body');
INSERT INTO ic VALUES (201, 'a pending row', NULL);
SELECT is(pending_entries, 1::bigint, 'an insert goes to the pending area') FROM gpuidx_index_stats('ic_body');
SELECT is(gpuidx_merge_pending('ic_body'), 1::bigint, 'gpuidx_merge_pending merges it');
SELECT is(segments, 2, 'into a second segment') FROM gpuidx_index_stats('ic_body');
SELECT matches(gpuidx_verify('ic_body'), '2 segments, 201 docs', 'and the index is still sound');

-- the setting
SELECT is(current_setting('gpuidx.text_config'), 'english', 'gpuidx.text_config defaults to english');
SELECT is((SELECT context FROM pg_settings WHERE name = 'gpuidx.text_config'), 'user',
		  'gpuidx.text_config can be set by any user');

-- results through the index equal row by row
SELECT set_eq($$SELECT id FROM ic WHERE body @@& 'contract rows 42'$$, ARRAY[42], 'text index query');
SELECT set_eq($$SELECT id FROM ic WHERE tsv @@& 'contract rows 42'$$, ARRAY[42], 'tsvector index query');
SELECT is_empty($$SELECT id FROM ic WHERE body @@& 'the of and'$$, 'a query of stop words matches nothing');

-- error codes
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (id)$$, '42704', NULL, 'unsupported type: 42704');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body, tsv)$$, '0A000', NULL, 'two columns: 0A000');
SELECT throws_ok($$CREATE UNIQUE INDEX ON ic USING gpuidx (body)$$, '0A000', NULL, 'unique: 0A000');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (codec = zstd)$$, '22023', NULL,
				 'unknown codec: 22023');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (pending_list_limit = 1)$$, '22023', NULL,
				 'pending_list_limit out of bounds: 22023');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (pending_list_limit = 'x')$$, '22023', NULL,
				 'pending_list_limit not a number: 22023');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (lists = 1)$$, '22023', NULL,
				 'unknown option: 22023');
SELECT throws_ok($$SET gpuidx.text_config = 'no_such_config'$$, '22023', NULL,
				 'a configuration that does not exist: 22023');
SELECT throws_ok($$SELECT gpuidx_verify('ic')$$, '42809', NULL, 'verify a table: 42809');
SELECT throws_ok($$SELECT gpuidx_merge_pending('ic')$$, '42809', NULL, 'merge a table: 42809');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (text_config = no_such_config)$$, '22023', NULL,
				 'an index option naming no configuration: 22023');
SELECT throws_ok($$CREATE INDEX ON ic USING gpuidx (body) WITH (text_config = 'a.b.c')$$, '22023', NULL,
				 'an index option that is no configuration name: 22023');
CREATE INDEX ic_german ON ic USING gpuidx (body) WITH (text_config = german);
SELECT is((SELECT reloptions FROM pg_class WHERE relname = 'ic_german'), '{text_config=german}',
		  'the option is kept as given');
SELECT throws_ok($$SELECT gpuidx_verify(0)$$, '42P01', NULL, 'verify OID 0: 42P01');
SELECT throws_ok($$SELECT gpuidx_index_stats(0)$$, '42P01', NULL, 'stats of OID 0: 42P01');
SELECT throws_ok($$SELECT gpuidx_merge_pending(0)$$, '42P01', NULL, 'merge OID 0: 42P01');
CREATE INDEX ic_btree ON ic (id);
SELECT throws_ok($$SELECT gpuidx_index_stats('ic_btree')$$, '42809', NULL, 'stats of a btree: 42809');
CREATE TEXT SEARCH CONFIGURATION ic_cfg (COPY = simple);
-- with its schema: from 17 an index is built with search_path = pg_catalog, pg_temp
SET gpuidx.text_config = 'public.ic_cfg';
CREATE INDEX ic_cfg_idx ON ic USING gpuidx (body);
RESET gpuidx.text_config;
SELECT throws_ok($$DROP TEXT SEARCH CONFIGURATION ic_cfg$$, '2BP01', NULL,
				 'a configuration an index was built with cannot be dropped alone: 2BP01');

SELECT * FROM finish();
ROLLBACK;
