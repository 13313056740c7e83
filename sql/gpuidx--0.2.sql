/* gpuidx--0.2.sql: the postinglist type, its functions, operators and aggregates;
   the @@& operator and the gpuidx index access method

   The install script of the version being made (default_version in
   gpuidx.control).  Every change to the objects it makes goes into the
   upgrade script from the version before as well (gpuidx--0.1--0.2.sql),
   so that ALTER EXTENSION gpuidx UPDATE makes what this script makes;
   t/023_extension_update.pl compares the two.  Once a version is released
   its script is frozen and the next change starts a new version (see
   NEWS.md). */

\echo Use "CREATE EXTENSION gpuidx" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The type: a set of uint32 document ids, stored compressed (EF, LRC or raw)

CREATE TYPE postinglist;

CREATE FUNCTION postinglist_in(cstring) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION postinglist_out(postinglist) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION postinglist_recv(internal) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION postinglist_send(postinglist) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- STORAGE external: the bytes are compressed already, so pglz is not tried
CREATE TYPE postinglist (
	INPUT = postinglist_in,
	OUTPUT = postinglist_out,
	RECEIVE = postinglist_recv,
	SEND = postinglist_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = external
);

COMMENT ON TYPE postinglist IS 'sorted set of uint32 document ids, compressed with Elias-Fano, LRC or raw';

-- ---------------------------------------------------------------------------
-- Casts

CREATE FUNCTION postinglist(integer[]) RETURNS postinglist
	AS 'MODULE_PATHNAME', 'postinglist_from_int4_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION postinglist(bigint[]) RETURNS postinglist
	AS 'MODULE_PATHNAME', 'postinglist_from_int8_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_to_int4_array(postinglist) RETURNS integer[]
	AS 'MODULE_PATHNAME', 'postinglist_to_int4_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_to_int8_array(postinglist) RETURNS bigint[]
	AS 'MODULE_PATHNAME', 'postinglist_to_int8_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION postinglist(bytea) RETURNS postinglist
	AS 'MODULE_PATHNAME', 'postinglist_from_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_to_bytea(postinglist) RETURNS bytea
	AS 'MODULE_PATHNAME', 'postinglist_to_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (integer[] AS postinglist) WITH FUNCTION postinglist(integer[]) AS ASSIGNMENT;
CREATE CAST (bigint[] AS postinglist) WITH FUNCTION postinglist(bigint[]) AS ASSIGNMENT;
CREATE CAST (postinglist AS integer[]) WITH FUNCTION pl_to_int4_array(postinglist);
CREATE CAST (postinglist AS bigint[]) WITH FUNCTION pl_to_int8_array(postinglist);
-- the encoded bytes (docs/FORMAT.md); bytea input is checked in full
CREATE CAST (bytea AS postinglist) WITH FUNCTION postinglist(bytea);
CREATE CAST (postinglist AS bytea) WITH FUNCTION pl_to_bytea(postinglist);

-- ---------------------------------------------------------------------------
-- Functions

CREATE FUNCTION pl_length(postinglist) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_length(postinglist) IS 'number of document ids';

CREATE FUNCTION pl_codec(postinglist) RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_codec(postinglist) IS 'codec of the stored list: raw, ef or lrc';

CREATE FUNCTION pl_encode(postinglist, codec text) RETURNS postinglist
	AS 'MODULE_PATHNAME', 'pl_encode_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_encode(postinglist, text) IS 're-encode with codec raw, ef, lrc or auto (the smallest)';

CREATE FUNCTION pl_unnest(postinglist) RETURNS SETOF bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION pl_unnest(postinglist) IS 'the document ids in ascending order';

CREATE FUNCTION pl_contains(postinglist, bigint) RETURNS boolean
	AS 'MODULE_PATHNAME', 'pl_contains_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_contains(postinglist, bigint) IS 'membership by skip search and one block, without decoding the list';

CREATE FUNCTION pl_contained(bigint, postinglist) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION pl_range(lo bigint, hi bigint) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_range(bigint, bigint) IS 'every document id from lo to hi inclusive';

CREATE FUNCTION pl_intersect(VARIADIC postinglist[]) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_intersect(postinglist[]) IS 'ids in every list (shortest first); NULL if any list is NULL';

CREATE FUNCTION pl_union(VARIADIC postinglist[]) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_union(postinglist[]) IS 'ids in any list; NULL if any list is NULL';

CREATE FUNCTION pl_stats(postinglist,
		OUT codec text, OUT count bigint, OUT bytes integer,
		OUT bits_per_posting double precision, OUT blocks integer)
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION pl_stats(postinglist) IS 'codec, postings, stored bytes, bits per posting and blocks of a list';

-- ---------------------------------------------------------------------------
-- Operators

CREATE FUNCTION pl_and(postinglist, postinglist) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_or(postinglist, postinglist) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_minus(postinglist, postinglist) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_overlap(postinglist, postinglist) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_eq(postinglist, postinglist) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_ne(postinglist, postinglist) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR & (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_and,
	COMMUTATOR = &
);
CREATE OPERATOR | (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_or,
	COMMUTATOR = |
);
CREATE OPERATOR - (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_minus
);
CREATE OPERATOR && (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_overlap,
	COMMUTATOR = &&, RESTRICT = areasel, JOIN = areajoinsel
);
CREATE OPERATOR = (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_eq,
	COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
	LEFTARG = postinglist, RIGHTARG = postinglist, FUNCTION = pl_ne,
	COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR @> (
	LEFTARG = postinglist, RIGHTARG = bigint, FUNCTION = pl_contains,
	COMMUTATOR = <@, RESTRICT = contsel, JOIN = contjoinsel
);
CREATE OPERATOR <@ (
	LEFTARG = bigint, RIGHTARG = postinglist, FUNCTION = pl_contained,
	COMMUTATOR = @>, RESTRICT = contsel, JOIN = contjoinsel
);

-- ---------------------------------------------------------------------------
-- Aggregates (parallel: partial states combine and travel serialized)

CREATE FUNCTION pl_agg_transfn(internal, bigint) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_collect_transfn(internal, postinglist) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_collect_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_collect_finalfn(internal) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_intersect_transfn(internal, postinglist) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_intersect_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_intersect_finalfn(internal) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pl_state_serialize(internal) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pl_state_deserialize(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE pl_agg(bigint) (
	SFUNC = pl_agg_transfn, STYPE = internal,
	FINALFUNC = pl_collect_finalfn,
	COMBINEFUNC = pl_collect_combinefn,
	SERIALFUNC = pl_state_serialize, DESERIALFUNC = pl_state_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE pl_agg(bigint) IS 'posting list of the non-null input ids';

CREATE AGGREGATE pl_union_agg(postinglist) (
	SFUNC = pl_collect_transfn, STYPE = internal,
	FINALFUNC = pl_collect_finalfn,
	COMBINEFUNC = pl_collect_combinefn,
	SERIALFUNC = pl_state_serialize, DESERIALFUNC = pl_state_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE pl_union_agg(postinglist) IS 'union of the non-null input lists';

CREATE AGGREGATE pl_intersect_agg(postinglist) (
	SFUNC = pl_intersect_transfn, STYPE = internal,
	FINALFUNC = pl_intersect_finalfn,
	COMBINEFUNC = pl_intersect_combinefn,
	SERIALFUNC = pl_state_serialize, DESERIALFUNC = pl_state_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE pl_intersect_agg(postinglist) IS 'intersection of the non-null input lists';

-- ---------------------------------------------------------------------------
-- Full-text AND search: "document @@& query" is true when the document has
-- every lexeme of plainto_tsquery(cfg, query), with cfg the setting
-- gpuidx.text_config (text documents are to_tsvector(cfg, text), tsvector
-- documents are used as they are).  A query without lexemes matches nothing.

CREATE FUNCTION gpuidx_matchsel(internal, oid, internal, integer) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_matchsel(internal, oid, internal, integer) IS 'selectivity of @@& from the term counts of a gpuidx index';
CREATE FUNCTION gpuidx_matchjoinsel(internal, oid, internal, smallint, internal) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_matchjoinsel(internal, oid, internal, smallint, internal) IS 'join selectivity of @@&: the typical query of a gpuidx index';

-- STABLE: the result depends on the setting gpuidx.text_config.  COST: the
-- work of a row as the planner counts it (in cpu_operator_cost), measured:
-- a text document is tokenized, a tsvector's lexemes searched; as the BM25
-- functions, which do the same work.  A sequential scan that evaluates @@&
-- on every row is priced as such.
CREATE FUNCTION gpuidx_match(text, text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'gpuidx_text_match' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 1000;
COMMENT ON FUNCTION gpuidx_match(text, text) IS 'does the text have every lexeme of the query (implements @@&)';
CREATE FUNCTION gpuidx_match(tsvector, text) RETURNS boolean
	AS 'MODULE_PATHNAME', 'gpuidx_tsvector_match' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION gpuidx_match(tsvector, text) IS 'does the tsvector have every lexeme of the query (implements @@&)';

CREATE OPERATOR @@& (
	LEFTARG = text, RIGHTARG = text, FUNCTION = gpuidx_match,
	RESTRICT = gpuidx_matchsel, JOIN = gpuidx_matchjoinsel
);
COMMENT ON OPERATOR @@& (text, text) IS 'document contains every term of the query';
CREATE OPERATOR @@& (
	LEFTARG = tsvector, RIGHTARG = text, FUNCTION = gpuidx_match,
	RESTRICT = gpuidx_matchsel, JOIN = gpuidx_matchjoinsel
);
COMMENT ON OPERATOR @@& (tsvector, text) IS 'document contains every term of the query';

-- ---------------------------------------------------------------------------
-- Ranking: Okapi BM25 with the statistics of a gpuidx index (docs/RANKING.md)

CREATE FUNCTION gpuidx_rank_query(query text, index regclass) RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_rank_query(text, regclass) IS 'a ranked query bound to the gpuidx index whose statistics score it';

CREATE FUNCTION gpuidx_rank_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION gpuidx_bm25(doc text, query text) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25_text' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 1000
	SUPPORT gpuidx_rank_support;
CREATE FUNCTION gpuidx_bm25(doc tsvector, query text) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25_tsvector' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 100
	SUPPORT gpuidx_rank_support;
CREATE FUNCTION gpuidx_bm25(doc text, query text, index regclass) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25_text' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 1000;
CREATE FUNCTION gpuidx_bm25(doc tsvector, query text, index regclass) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25_tsvector' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION gpuidx_bm25(text, text) IS 'BM25 score of the document for the query, with the statistics of the gpuidx index on it';
COMMENT ON FUNCTION gpuidx_bm25(text, text, regclass) IS 'BM25 score of the document for the query, with the statistics of the index';

CREATE FUNCTION gpuidx_rank_distance(doc text, query text) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_rank_distance_text' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 1000
	SUPPORT gpuidx_rank_support;
CREATE FUNCTION gpuidx_rank_distance(doc tsvector, query text) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_rank_distance_tsvector' LANGUAGE C STABLE STRICT PARALLEL SAFE COST 100
	SUPPORT gpuidx_rank_support;

CREATE OPERATOR <=> (LEFTARG = text, RIGHTARG = text, FUNCTION = gpuidx_rank_distance);
COMMENT ON OPERATOR <=> (text, text) IS 'minus the BM25 score: ORDER BY doc <=> query ranks best first';
CREATE OPERATOR <=> (LEFTARG = tsvector, RIGHTARG = text, FUNCTION = gpuidx_rank_distance);
COMMENT ON OPERATOR <=> (tsvector, text) IS 'minus the BM25 score: ORDER BY doc <=> query ranks best first';

-- Ranking by a tsquery: BM25 over its positive lexemes (those not under a
-- NOT; prefixes left out), as the text query "[tsquery] <the tsquery>".
-- These SQL functions are inlined by the planner, so "doc <=> tsquery"
-- becomes "doc <=> text", which the index's ORDER BY matches.
CREATE FUNCTION gpuidx_rank_text(query tsquery) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	RETURN '[tsquery] ' || query::text;
COMMENT ON FUNCTION gpuidx_rank_text(tsquery) IS 'the ranked query that ranks by the positive lexemes of the tsquery';
CREATE FUNCTION gpuidx_rank_distance(doc tsvector, query tsquery) RETURNS float8
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	RETURN doc <=> gpuidx_rank_text(query);
CREATE FUNCTION gpuidx_bm25(doc tsvector, query tsquery) RETURNS float8
	LANGUAGE sql STABLE STRICT PARALLEL SAFE
	RETURN gpuidx_bm25(doc, gpuidx_rank_text(query));
COMMENT ON FUNCTION gpuidx_bm25(tsvector, tsquery) IS 'BM25 score of the document for the positive lexemes of the tsquery, with the statistics of the gpuidx index on it';
CREATE OPERATOR <=> (LEFTARG = tsvector, RIGHTARG = tsquery, FUNCTION = gpuidx_rank_distance);
COMMENT ON OPERATOR <=> (tsvector, tsquery) IS 'minus the BM25 score of the positive lexemes of the tsquery: ORDER BY doc <=> tsquery ranks best first';

-- ---------------------------------------------------------------------------
-- Ranking with the statistics of a whole collection: a table sharded over
-- servers ranks each shard's rows with the sum of the shards' statistics
-- (docs/SCALING.md).  A bm25query carries them, with k1, b and the text
-- search configuration, so its scores depend on the document alone.

CREATE TYPE bm25query;
CREATE FUNCTION bm25query_in(cstring) RETURNS bm25query
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bm25query_out(bm25query) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bm25query_recv(internal) RETURNS bm25query
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bm25query_send(bm25query) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE bm25query (
	INPUT = bm25query_in, OUTPUT = bm25query_out,
	RECEIVE = bm25query_recv, SEND = bm25query_send,
	INTERNALLENGTH = VARIABLE, STORAGE = extended, CATEGORY = 'U'
);
COMMENT ON TYPE bm25query IS 'a ranked query with the BM25 statistics it is scored with (those of every shard of a table)';

-- IMMUTABLE: the score depends on the document and the bm25query alone,
-- which is what postgres_fdw needs to send ORDER BY doc <=> q to a shard
CREATE FUNCTION gpuidx_bm25(doc text, query bm25query) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25q_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;
CREATE FUNCTION gpuidx_bm25(doc tsvector, query bm25query) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25q_tsvector' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION gpuidx_bm25(text, bm25query) IS 'BM25 score of the document with the statistics the query carries';
COMMENT ON FUNCTION gpuidx_bm25(tsvector, bm25query) IS 'BM25 score of the document with the statistics the query carries';
CREATE FUNCTION gpuidx_rank_distance(doc text, query bm25query) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25q_distance_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;
CREATE FUNCTION gpuidx_rank_distance(doc tsvector, query bm25query) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuidx_bm25q_distance_tsvector' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE OPERATOR <=> (LEFTARG = text, RIGHTARG = bm25query, FUNCTION = gpuidx_rank_distance);
COMMENT ON OPERATOR <=> (text, bm25query) IS 'minus the BM25 score with the statistics the query carries';
CREATE OPERATOR <=> (LEFTARG = tsvector, RIGHTARG = bm25query, FUNCTION = gpuidx_rank_distance);
COMMENT ON OPERATOR <=> (tsvector, bm25query) IS 'minus the BM25 score with the statistics the query carries';

-- a shard's side: every lexeme of the index with its document frequency,
-- and one row (lexeme NULL) with the documents, the sum of their lengths,
-- the configuration (text indexes) and k1, b
CREATE FUNCTION gpuidx_term_stats(index regclass,
	OUT lexeme text, OUT documents bigint, OUT length bigint,
	OUT config regconfig, OUT k1 float8, OUT b float8) RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_term_stats(regclass) IS 'the BM25 statistics of a gpuidx index: each lexeme''s document frequency, then the totals';

-- the coordinator's side: the query with the statistics that a relation of
-- gpuidx_term_stats rows (every shard's) sums to
CREATE FUNCTION gpuidx_bm25query(query text, statistics regclass) RETURNS bm25query
	AS 'MODULE_PATHNAME', 'gpuidx_bm25query_text' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION gpuidx_bm25query(query tsquery, statistics regclass) RETURNS bm25query
	AS 'MODULE_PATHNAME', 'gpuidx_bm25query_tsquery' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_bm25query(text, regclass) IS 'a ranked query with the statistics summed over the rows of gpuidx_term_stats in the relation';
COMMENT ON FUNCTION gpuidx_bm25query(tsquery, regclass) IS 'a ranked query (the tsquery''s positive lexemes) with the statistics summed over the rows of gpuidx_term_stats in the relation';

-- ---------------------------------------------------------------------------
-- The index access method

CREATE FUNCTION gpuidx_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

CREATE ACCESS METHOD gpuidx TYPE INDEX HANDLER gpuidx_handler;
COMMENT ON ACCESS METHOD gpuidx IS 'compressed inverted index for full-text search (@@& and, on tsvector, @@ tsquery) and BM25 ranking (<=>)';

CREATE OPERATOR CLASS gpuidx_text_ops DEFAULT FOR TYPE text USING gpuidx AS
	OPERATOR 1 @@& (text, text),
	OPERATOR 2 <=> (text, text) FOR ORDER BY float_ops,
	OPERATOR 5 <=> (text, bm25query) FOR ORDER BY float_ops;
CREATE OPERATOR CLASS gpuidx_tsvector_ops DEFAULT FOR TYPE tsvector USING gpuidx AS
	OPERATOR 1 @@& (tsvector, text),
	OPERATOR 2 <=> (tsvector, text) FOR ORDER BY float_ops,
	OPERATOR 3 @@ (tsvector, tsquery),
	OPERATOR 4 @@@ (tsvector, tsquery),
	OPERATOR 5 <=> (tsvector, bm25query) FOR ORDER BY float_ops;

CREATE FUNCTION gpuidx_merge_pending(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION gpuidx_merge_pending(regclass) IS 'merge the pending area of a gpuidx index into a segment now; returns the rows merged';

CREATE FUNCTION gpuidx_verify(index regclass) RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION gpuidx_verify(regclass) IS 'check every structure of a gpuidx index and that it matches its table; ERROR XX002 at the first problem';

CREATE FUNCTION gpuidx_index_stats(index regclass,
		OUT config text, OUT kind text, OUT segments integer,
		OUT docs bigint, OUT dead_docs bigint, OUT terms bigint, OUT postings bigint,
		OUT pending_entries bigint, OUT pending_pages integer,
		OUT total_bytes bigint, OUT dictionary_bytes bigint, OUT list_bytes bigint,
		OUT docmap_bytes bigint, OUT deadmap_bytes bigint, OUT pending_bytes bigint,
		OUT header_bytes bigint, OUT free_bytes bigint,
		OUT build_runs integer, OUT build_peak_kb integer, OUT retired_sets bigint,
		OUT freq_bytes bigint, OUT doclen_bytes bigint, OUT avg_doc_length float8,
		OUT position_bytes bigint, OUT merge_bytes bigint, OUT merge_docs bigint)
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_index_stats(regclass) IS 'what a gpuidx index holds and where its bytes go';

CREATE FUNCTION gpuidx_segments(index regclass,
		OUT segment bigint, OUT docs bigint, OUT dead_docs bigint, OUT terms bigint,
		OUT postings bigint, OUT inline_lists bigint, OUT external_lists bigint,
		OUT pages integer, OUT bytes bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 8;
COMMENT ON FUNCTION gpuidx_segments(regclass) IS 'one row per segment of a gpuidx index';

-- ---------------------------------------------------------------------------
-- The intersection engine (GPU when available, else CPU; include/gpuidx_engine.h)

CREATE FUNCTION gpuidx_engine_info(OUT engine text, OUT device text, OUT library text,
		OUT fallback_reason text)
	AS 'MODULE_PATHNAME', 'gpuidx_engine_info_sql' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_engine_info() IS 'the engine this session uses (cuda or cpu) and, for cpu, why';

CREATE FUNCTION gpuidx_engine_intersect(VARIADIC postinglist[]) RETURNS postinglist
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_engine_intersect(postinglist[]) IS 'pl_intersect through the engine (the GPU when there is one); falls back to the CPU on any engine error';
-- the device, the library's path and the engine's errors are for pg_monitor,
-- as the worker's counters are; a test of the engine that sends any lists to
-- the shared worker, past gpuidx.device and gpuidx.gpu_min_postings, is for
-- superusers and whom they grant it
REVOKE ALL ON FUNCTION gpuidx_engine_info() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuidx_engine_info() TO pg_monitor;
REVOKE ALL ON FUNCTION gpuidx_engine_intersect(postinglist[]) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- The GPU worker (gpuidx in shared_preload_libraries; docs/WORKER.md)

CREATE FUNCTION gpuidx_worker_stats(
		OUT serving boolean, OUT engine_pid integer, OUT engine text, OUT device text,
		OUT engine_note text, OUT engine_starts bigint, OUT engine_stalls bigint,
		OUT gpu_retries bigint, OUT batches bigint, OUT requests bigint,
		OUT worker_rounds bigint, OUT backend_rounds bigint, OUT bytes_sent bigint,
		OUT bytes_returned bigint, OUT cache_hits bigint, OUT cache_misses bigint,
		OUT cache_evictions bigint, OUT cache_lists bigint, OUT cache_bytes bigint,
		OUT fallback_absent bigint, OUT fallback_queue_full bigint,
		OUT fallback_arena_full bigint, OUT fallback_timeout bigint,
		OUT fallback_engine_error bigint, OUT fallback_worker_lost bigint,
		OUT fallback_cancelled bigint, OUT fallback_cache_lost bigint,
		OUT fallback_bad_answer bigint, OUT slots_in_use integer, OUT arena_bytes_in_use bigint,
		OUT wait_p50_us double precision, OUT wait_p99_us double precision,
		OUT batch_host_ms double precision, OUT batch_device_ms double precision,
		OUT batch_return_ms double precision, OUT stats_reset timestamptz)
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_worker_stats() IS 'the GPU worker''s counters since the last reset (all NULL but serving when gpuidx is not preloaded)';

CREATE VIEW gpuidx_worker_stats AS SELECT * FROM gpuidx_worker_stats();
COMMENT ON VIEW gpuidx_worker_stats IS 'the GPU worker: engine, batches, rounds on GPU and CPU, GPU list cache, fallbacks by cause, queue waits, where batch time went';
REVOKE ALL ON FUNCTION gpuidx_worker_stats() FROM PUBLIC;
REVOKE ALL ON gpuidx_worker_stats FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuidx_worker_stats() TO pg_monitor;
GRANT SELECT ON gpuidx_worker_stats TO pg_monitor;

CREATE FUNCTION gpuidx_rank_placement(
		OUT shape text, OUT min_postings bigint, OUT max_postings bigint,
		OUT backend_ns_per_posting double precision, OUT worker_ns_per_posting double precision,
		OUT queued_ns_per_posting double precision, OUT other_way_tried timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_rank_placement() IS 'the costs that place ranked segments on the GPU worker or in the backend, by shape and size (docs/RANKING.md)';

CREATE VIEW gpuidx_rank_placement AS SELECT * FROM gpuidx_rank_placement();
COMMENT ON VIEW gpuidx_rank_placement IS 'what a ranked segment cost lately, a posting, in a backend and through the GPU worker, by shape and size';
REVOKE ALL ON FUNCTION gpuidx_rank_placement() FROM PUBLIC;
REVOKE ALL ON gpuidx_rank_placement FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuidx_rank_placement() TO pg_monitor;
GRANT SELECT ON gpuidx_rank_placement TO pg_monitor;

CREATE FUNCTION gpuidx_worker_stats_reset() RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION gpuidx_worker_stats_reset() IS 'zero the GPU worker''s counters (superuser)';
REVOKE ALL ON FUNCTION gpuidx_worker_stats_reset() FROM PUBLIC;
