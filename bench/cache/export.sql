-- The GPU list cache's request stream, from a database holding a corpus
-- (docs(id, body) with a gpuidx index on body, qs(qid, q)): every query's
-- lexemes with their document frequency and, for lexemes long enough to go
-- to the GPU, the encoded size of their posting list (pl_agg of the ids,
-- the codec the index would pick).  Output: one line per query lexeme,
--   qid <TAB> lexeme <TAB> df <TAB> bytes
-- read by cache_sim.py.
\set ON_ERROR_STOP on
SET gpuidx.device = cpu;
CREATE TEMP TABLE qlex AS
	SELECT qid, unnest(tsvector_to_array(to_tsvector('english', q))) AS l FROM qs;
CREATE TEMP TABLE lexdf AS
	SELECT l, (SELECT count(*) FROM docs WHERE body @@& l) AS df FROM (SELECT DISTINCT l FROM qlex) x;
CREATE TEMP TABLE lexbytes AS
	SELECT l, df, CASE WHEN df >= :min_df THEN
		(SELECT pg_column_size(pl_agg(id)) - 4 FROM docs WHERE body @@& l) ELSE 0 END AS bytes
	FROM lexdf;
\copy (SELECT q.qid, q.l, b.df, b.bytes FROM qlex q JOIN lexbytes b USING (l) ORDER BY q.qid, q.l) TO STDOUT
