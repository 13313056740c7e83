/* gpuidx--0.1--0.2.sql: ALTER EXTENSION gpuidx UPDATE from 0.1 to 0.2.

   What it makes is what gpuidx--0.2.sql makes, object for object and
   definition for definition (t/023_extension_update.pl compares a database
   updated with this script to one where 0.2 was created).  Indexes built
   under 0.1 stay: their operator classes gain the new operators, and the
   pages they hold are read by this version's library as they are (its
   readers take every older form of the metapage and segments). */

\echo Use "ALTER EXTENSION gpuidx UPDATE TO '0.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- @@&: a join estimator of its own, and the work of a row as measured

CREATE FUNCTION gpuidx_matchjoinsel(internal, oid, internal, smallint, internal) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuidx_matchjoinsel(internal, oid, internal, smallint, internal) IS 'join selectivity of @@&: the typical query of a gpuidx index';

ALTER FUNCTION gpuidx_match(text, text) COST 1000;
ALTER FUNCTION gpuidx_match(tsvector, text) COST 100;
ALTER OPERATOR @@& (text, text) SET (JOIN = gpuidx_matchjoinsel);
ALTER OPERATOR @@& (tsvector, text) SET (JOIN = gpuidx_matchjoinsel);

-- ---------------------------------------------------------------------------
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
-- The index access method: the tsvector operator class serves @@ and @@@
-- with a tsquery, and both classes ORDER BY doc <=> bm25query.  Members
-- cannot be added to an operator class, but to its family: an index built
-- under 0.1 uses them at once (the planner looks operators up in the
-- family).

COMMENT ON ACCESS METHOD gpuidx IS 'compressed inverted index for full-text search (@@& and, on tsvector, @@ tsquery) and BM25 ranking (<=>)';

ALTER OPERATOR FAMILY gpuidx_text_ops USING gpuidx ADD
	OPERATOR 5 <=> (text, bm25query) FOR ORDER BY float_ops;
ALTER OPERATOR FAMILY gpuidx_tsvector_ops USING gpuidx ADD
	OPERATOR 3 @@ (tsvector, tsquery),
	OPERATOR 4 @@@ (tsvector, tsquery),
	OPERATOR 5 <=> (tsvector, bm25query) FOR ORDER BY float_ops;

-- gpuidx_index_stats gains columns (position_bytes; merge_bytes and
-- merge_docs, what merges wrote since the build): a function's result
-- columns cannot be changed in place, so it is made again (a view of the
-- user's over it must be dropped before the update and made again after;
-- privileges granted on it must be granted again)
DROP FUNCTION gpuidx_index_stats(regclass);
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

-- ---------------------------------------------------------------------------
-- The costs that place ranked segments

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

-- the engine's functions: gpuidx_engine_info for pg_monitor (as
-- gpuidx_worker_stats), gpuidx_engine_intersect for superusers (it sends any
-- lists to the shared worker, past gpuidx.device and gpu_min_postings)
REVOKE ALL ON FUNCTION gpuidx_engine_info() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuidx_engine_info() TO pg_monitor;
REVOKE ALL ON FUNCTION gpuidx_engine_intersect(postinglist[]) FROM PUBLIC;
