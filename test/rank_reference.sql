-- A plain-SQL reference of gpuidx's BM25 ranking (Okapi BM25, Lucene IDF),
-- computed from a table's own rows with to_tsvector and unnest, never from an
-- index: t/012_rank_equivalence.pl compares the index's answers with it.
-- `psql -v bm25_ref_only=1 -f test/rank_reference.sql` only defines it (in
-- the schema bm25_ref); run as a pgTAP test (make prove) it also checks
-- itself against hand-computed values and a direct row-by-row evaluation.
--
--   score(d, q) = sum over the distinct lexemes t of to_tsvector(cfg, q) of
--                 idf(t) * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * dl / avgdl))
--   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
--
-- tf: the lexeme's positions in the document's tsvector (1 without
-- positions); dl: the sum of tf over the document's lexemes; N, avgdl, df:
-- over the documents counted.  prepare() counts the table's non-NULL rows;
-- sync() then models an index between two VACUUMs: rows that left the table
-- (deleted, or the old versions of updated rows) stay counted but are no
-- longer returned, rows new in the table are added.
\if :{?bm25_ref_only}
\else
BEGIN;
\endif
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bm25_ref CASCADE;
CREATE SCHEMA bm25_ref;

-- the prepared state: which column, the lexemes kept (NULL: all), N and the sum of dl
CREATE TABLE bm25_ref.meta (tbl regclass, col name, cfg regconfig, is_tsvector bool, lexemes text[], n bigint, sumdl bigint);
-- every counted document, and its lexemes (those kept) with their tf
CREATE UNLOGGED TABLE bm25_ref.doc (tid tid, dl int, live bool);
CREATE UNLOGGED TABLE bm25_ref.term (lexeme text, tid tid, tf int, dl int, live bool);
CREATE UNLOGGED TABLE bm25_ref.df (lexeme text, df int);

-- the document expression of the prepared column, on the row alias x: to_tsvector of a text, a tsvector as it is
CREATE FUNCTION bm25_ref.vector_expr(m bm25_ref.meta) RETURNS text LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN m.is_tsvector THEN format('x.%I', m.col)
		ELSE format('to_tsvector(%L::regconfig, x.%I)', m.cfg, m.col) END
$$;

-- documents and terms of the rows x of the prepared table that `cond` selects, as counted and live
CREATE FUNCTION bm25_ref.add_rows(cond text) RETURNS bigint LANGUAGE plpgsql SET client_min_messages = warning AS $$
DECLARE
	m bm25_ref.meta;
	added bigint;
BEGIN
	SELECT * INTO STRICT m FROM bm25_ref.meta;
	DROP TABLE IF EXISTS bm25_ref.vec, bm25_ref.wanted;
	-- one tokenization of each row (a parallel scan; OFFSET 0 keeps it one), its dl with it
	EXECUTE format('CREATE UNLOGGED TABLE bm25_ref.vec AS
		SELECT x.ctid AS tid, l.vec, (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::int
		                              FROM unnest(l.vec) u) AS dl
		FROM %s x CROSS JOIN LATERAL (SELECT %s AS vec OFFSET 0) l WHERE x.%I IS NOT NULL AND (%s)',
		m.tbl, bm25_ref.vector_expr(m), m.col, cond);
	GET DIAGNOSTICS added = ROW_COUNT;
	INSERT INTO bm25_ref.doc SELECT tid, dl, true FROM bm25_ref.vec;
	IF m.lexemes IS NULL THEN
		INSERT INTO bm25_ref.term
		SELECT u.lexeme, v.tid, coalesce(array_length(u.positions, 1), 1), v.dl, true
		FROM bm25_ref.vec v, unnest(v.vec) u ORDER BY 1, 2;
	ELSE
		CREATE UNLOGGED TABLE bm25_ref.wanted AS SELECT DISTINCT unnest(m.lexemes) AS lexeme;
		INSERT INTO bm25_ref.term
		SELECT u.lexeme, v.tid, coalesce(array_length(u.positions, 1), 1), v.dl, true
		FROM bm25_ref.vec v, unnest(v.vec) u JOIN bm25_ref.wanted w ON w.lexeme = u.lexeme ORDER BY 1, 2;
		DROP TABLE bm25_ref.wanted;
	END IF;
	DROP TABLE bm25_ref.vec;
	UPDATE bm25_ref.meta SET n = (SELECT count(*) FROM bm25_ref.doc), sumdl = (SELECT coalesce(sum(dl), 0) FROM bm25_ref.doc);
	ANALYZE bm25_ref.meta;
	RETURN added;
END $$;

-- the reference's state from the table's rows now: col is a text column
-- (tokenized with cfg) or a tsvector column; lexemes, when given, limits the
-- terms kept to those (the queries' lexemes: a query with another one is an
-- error).  Returns N.
CREATE FUNCTION bm25_ref.prepare(tbl regclass, col name, cfg regconfig DEFAULT 'english',
								 lexemes text[] DEFAULT NULL) RETURNS bigint LANGUAGE plpgsql
SET client_min_messages = warning AS $$
DECLARE
	typ regtype;
BEGIN
	SELECT atttypid::regtype INTO typ FROM pg_attribute
	WHERE attrelid = tbl AND attname = col AND attnum > 0 AND NOT attisdropped;
	IF typ IS NULL OR typ NOT IN ('text'::regtype, 'tsvector'::regtype) THEN
		RAISE EXCEPTION 'bm25_ref.prepare: % has no text or tsvector column "%"', tbl, col;
	END IF;
	TRUNCATE bm25_ref.meta, bm25_ref.doc, bm25_ref.term, bm25_ref.df;
	DROP INDEX IF EXISTS bm25_ref.doc_tid, bm25_ref.term_lexeme, bm25_ref.df_lexeme;
	INSERT INTO bm25_ref.meta VALUES (tbl, col, cfg, typ = 'tsvector'::regtype, lexemes, 0, 0);
	PERFORM bm25_ref.add_rows('true');
	INSERT INTO bm25_ref.df SELECT lexeme, count(*) FROM bm25_ref.term GROUP BY lexeme;
	CREATE UNIQUE INDEX doc_tid ON bm25_ref.doc (tid);
	CREATE INDEX term_lexeme ON bm25_ref.term (lexeme, tid);
	CREATE UNIQUE INDEX df_lexeme ON bm25_ref.df (lexeme);
	ANALYZE bm25_ref.doc, bm25_ref.term, bm25_ref.df;
	RETURN (SELECT count(*) FROM bm25_ref.doc);
END $$;

-- the prepared table's writes since prepare(), as an index sees them before
-- VACUUM: rows gone (deleted, or old versions of updated rows) still count
-- in N, avgdl and df but are not returned; new non-NULL rows are added.
-- Call it after each statement that adds rows: a row added and removed
-- between two calls is never seen, where an index counts it.  Returns N.
CREATE FUNCTION bm25_ref.sync() RETURNS bigint LANGUAGE plpgsql SET client_min_messages = warning AS $$
DECLARE
	m bm25_ref.meta;
BEGIN
	SELECT * INTO STRICT m FROM bm25_ref.meta;
	DROP TABLE IF EXISTS bm25_ref.now_live;
	EXECUTE format('CREATE UNLOGGED TABLE bm25_ref.now_live AS SELECT ctid AS tid FROM %s WHERE %I IS NOT NULL',
				   m.tbl, m.col);
	UPDATE bm25_ref.doc d SET live = false
	WHERE d.live AND NOT EXISTS (SELECT FROM bm25_ref.now_live l WHERE l.tid = d.tid);
	UPDATE bm25_ref.term t SET live = false FROM bm25_ref.doc d WHERE d.tid = t.tid AND NOT d.live AND t.live;
	-- a heap slot is not reused before VACUUM, so a tid not in doc is a new row
	DROP TABLE IF EXISTS bm25_ref.new_rows;
	CREATE UNLOGGED TABLE bm25_ref.new_rows AS
	SELECT tid FROM bm25_ref.now_live l WHERE NOT EXISTS (SELECT FROM bm25_ref.doc d WHERE d.tid = l.tid);
	CREATE INDEX ON bm25_ref.new_rows (tid);
	ANALYZE bm25_ref.new_rows;
	PERFORM bm25_ref.add_rows('x.ctid = ANY (ARRAY(SELECT tid FROM bm25_ref.new_rows))');
	DROP TABLE bm25_ref.now_live, bm25_ref.new_rows;
	DELETE FROM bm25_ref.df;
	INSERT INTO bm25_ref.df SELECT lexeme, count(*) FROM bm25_ref.term GROUP BY lexeme;
	ANALYZE bm25_ref.doc, bm25_ref.term, bm25_ref.df;
	RETURN (SELECT count(*) FROM bm25_ref.doc);
END $$;

-- N, avgdl and the live documents of the prepared state
CREATE FUNCTION bm25_ref.stats(OUT n bigint, OUT avgdl float8, OUT live bigint) LANGUAGE sql STABLE AS $$
	SELECT m.n, m.sumdl::float8 / nullif(m.n, 0), (SELECT count(*) FROM bm25_ref.doc WHERE doc.live) FROM bm25_ref.meta m
$$;

-- the distinct lexemes of a query; an error for one the prepared state did not keep
CREATE FUNCTION bm25_ref.query_lexemes(q text) RETURNS text[] LANGUAGE plpgsql STABLE AS $$
DECLARE
	m bm25_ref.meta;
	lex text[];
BEGIN
	SELECT * INTO STRICT m FROM bm25_ref.meta;
	SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') INTO lex FROM unnest(to_tsvector(m.cfg, q));
	IF m.lexemes IS NOT NULL AND NOT lex <@ m.lexemes THEN
		RAISE EXCEPTION 'bm25_ref: query "%" has lexemes the prepared state did not keep: %', q,
			ARRAY(SELECT unnest(lex) EXCEPT SELECT unnest(m.lexemes));
	END IF;
	RETURN lex;
END $$;

-- the score of every live document with at least one lexeme of q, and how
-- many of q's lexemes it has (q has cardinality(query_lexemes(q)))
CREATE FUNCTION bm25_ref.scores(q text, k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (tid tid, score float8, terms int) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
	n float8;
	avgdl float8;
BEGIN
	SELECT m.n, m.sumdl::float8 / nullif(m.n, 0) INTO STRICT n, avgdl FROM bm25_ref.meta m;
	RETURN QUERY
	SELECT t.tid, sum(ql.idf * (t.tf * (k1 + 1)) / (t.tf + k1 * ((1 - b) + b * t.dl / avgdl))), count(*)::int
	FROM (SELECT df.lexeme, ln(1 + (n - df.df + 0.5) / (df.df + 0.5)) AS idf
		  FROM unnest(bm25_ref.query_lexemes(q)) l JOIN bm25_ref.df ON df.lexeme = l) ql
	JOIN bm25_ref.term t ON t.lexeme = ql.lexeme
	WHERE t.live
	GROUP BY t.tid;
END $$;

-- the first k documents of ORDER BY doc <=> q (best first, ties in tid
-- order): with conjunctive, only documents with every lexeme of q (none
-- when q has none); without, the documents with none of them follow with
-- score 0, in tid order
CREATE FUNCTION bm25_ref.top(q text, k int, conjunctive bool, k1 float8 DEFAULT 1.2, b float8 DEFAULT 0.75)
RETURNS TABLE (tid tid, score float8) LANGUAGE sql STABLE AS $$
	WITH s AS MATERIALIZED (SELECT * FROM bm25_ref.scores(q, k1, b)),
	nl AS (SELECT cardinality(bm25_ref.query_lexemes(q)) AS n),
	hits AS (SELECT s.tid, s.score FROM s, nl WHERE NOT conjunctive OR (s.terms = nl.n AND nl.n > 0)
			 ORDER BY s.score DESC, s.tid LIMIT k)
	SELECT * FROM (SELECT * FROM hits
				   UNION ALL
				   SELECT * FROM (SELECT d.tid, 0::float8 FROM bm25_ref.doc d
								  WHERE NOT conjunctive AND d.live AND NOT EXISTS (SELECT FROM s WHERE s.tid = d.tid)
								  ORDER BY d.tid LIMIT greatest(k - (SELECT count(*) FROM hits), 0)) z) r
	ORDER BY score DESC, tid
$$;

\if :{?bm25_ref_only}
\quit
\endif

-- ---------------------------------------------------------------------------
-- pgTAP: the reference checks itself
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(23);

-- hand-computed: documents 'fox', 'fox fox dog', 'cat', a NULL (not counted)
CREATE TABLE ref_hand (id int, body text);
INSERT INTO ref_hand VALUES (1, 'fox'), (2, 'fox fox dog'), (3, 'cat'), (4, NULL);
SELECT is(bm25_ref.prepare('ref_hand', 'body'), 3::bigint, 'N counts the non-NULL rows');
SELECT is((SELECT avgdl FROM bm25_ref.stats()), 5 / 3::float8, 'avgdl = (1 + 3 + 1) / 3');
-- N = 3, df(fox) = 2: idf = ln(1 + 1.5 / 2.5) = ln(1.6)
SELECT ok(abs(score - ln(1.6) * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 3 / (5 / 3::float8)))) < 1e-15,
		  'doc 2 for fox: tf 2, dl 3')
FROM bm25_ref.scores('fox') JOIN ref_hand h ON h.ctid = tid WHERE h.id = 2;
SELECT ok(abs(score - (ln(1.6) * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 3 / (5 / 3::float8)))
					   + ln(1 + 2.5 / 1.5) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / (5 / 3::float8))))) < 1e-15
		  AND terms = 2, 'doc 2 for fox dog: two terms summed, a query word repeated counts once')
FROM bm25_ref.scores('foxes, DOG fox') JOIN ref_hand h ON h.ctid = tid WHERE h.id = 2;
SELECT ok(abs(score - ln(1.6) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / (5 / 3::float8)))) < 1e-15,
		  'doc 1 for fox, with k1 and b given: 1.2 and 0.75')
FROM bm25_ref.scores('fox', 1.2, 0.75) JOIN ref_hand h ON h.ctid = tid WHERE h.id = 1;
SELECT ok(abs(score - ln(1.6) * 3 / (1 + 2)) < 1e-15, 'k1 = 2, b = 0: no length normalization')
FROM bm25_ref.scores('fox', 2, 0) JOIN ref_hand h ON h.ctid = tid WHERE h.id = 1;
SELECT is(array_agg(h.id ORDER BY ord), '{1,2,3}', 'any term: fox ranks 1 above 2 (shorter), then 3 at score 0')
FROM bm25_ref.top('fox', 10, false) WITH ORDINALITY t(tid, score, ord) JOIN ref_hand h ON h.ctid = t.tid;
SELECT is(array_agg(h.id ORDER BY ord), '{2}', 'every term: only doc 2 has fox and dog')
FROM bm25_ref.top('fox dog', 10, true) WITH ORDINALITY t(tid, score, ord) JOIN ref_hand h ON h.ctid = t.tid;
SELECT is((SELECT count(*) FROM bm25_ref.top('the of', 10, true)), 0::bigint, 'a query of stop words matches nothing');
SELECT is((SELECT array_agg(score) FROM bm25_ref.top('the of', 10, false)), '{0,0,0}',
		  'and ranks every document at 0 without the conjunction');

-- sync: a deleted row stays counted, a new one is added
DELETE FROM ref_hand WHERE id = 3;
INSERT INTO ref_hand VALUES (5, 'dog dog');
SELECT is(bm25_ref.sync(), 4::bigint, 'after a delete and an insert, before VACUUM: N = 4');
SELECT is((SELECT array_agg(h.id ORDER BY ord) FROM bm25_ref.top('cat dog', 10, false) WITH ORDINALITY t(tid, score, ord)
		   JOIN ref_hand h ON h.ctid = t.tid), '{5,2,1}', 'the deleted row is not returned');
SELECT ok(abs(score - ln(1 + 2.5 / 2.5) * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 2 / (7 / 4::float8)))) < 1e-15,
		  'N = 4, df(dog) = 2, avgdl = 7 / 4 counted with it')
FROM bm25_ref.scores('dog') JOIN ref_hand h ON h.ctid = tid WHERE h.id = 5;
SELECT is(bm25_ref.prepare('ref_hand', 'body'), 3::bigint, 'prepared again (after VACUUM): N = 3');

-- a tsvector column: its positions, and tf 1 for a lexeme without any
CREATE TABLE ref_vec (id int, v tsvector);
INSERT INTO ref_vec VALUES (1, 'fox:1,2,3 dog:4'), (2, 'fox dog cat'), (3, '');
SELECT is(bm25_ref.prepare('ref_vec', 'v'), 3::bigint, 'a tsvector column');
SELECT is((SELECT array_agg(dl ORDER BY dl) FROM bm25_ref.doc), '{0,3,4}', 'tsvector: dl from positions, 1 each without');
SELECT throws_ok($$SELECT bm25_ref.prepare('ref_vec', 'id')$$, 'P0001', NULL, 'only text and tsvector columns');

-- a real corpus (the descriptions of the built-in objects), against a
-- direct evaluation of the formula row by row from the table
CREATE TABLE ref_desc AS SELECT row_number() OVER (ORDER BY objoid, classoid, objsubid) AS id, description AS body
FROM pg_description;
INSERT INTO ref_desc VALUES (-1, NULL), (-2, ''), (-3, 'the of and'), (-4, repeat('index ', 300));
CREATE TABLE ref_q (q text);
INSERT INTO ref_q VALUES ('index'), ('text search'), ('greater than or equal'), ('convert text to integer array'),
	('the of'), ('xyzzy'), ('index index xyzzy'), ('Boolean AND'), ('hash function for bytea'),
	('date time zone interval'), ('sum of input values');
SELECT cmp_ok(bm25_ref.prepare('ref_desc', 'body', 'english', ARRAY(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', q))) FROM ref_q)),
	   '>', 4000::bigint, 'pg_description: thousands of documents');
CREATE TABLE ref_direct AS
WITH d AS (SELECT ctid AS tid, to_tsvector('english', body) AS v FROM ref_desc WHERE body IS NOT NULL),
dl AS (SELECT tid, v, (SELECT count(*) FROM unnest(v) u, unnest(u.positions) p) AS dl FROM d),
st AS (SELECT count(*)::float8 AS n, avg(dl)::float8 AS avgdl FROM dl),
qt AS (SELECT q, lexeme FROM ref_q, unnest(tsvector_to_array(to_tsvector('english', q))) lexeme),
df AS (SELECT word AS lexeme, ndoc AS df FROM ts_stat('SELECT to_tsvector(''english'', body) FROM ref_desc'))
SELECT qt.q, dl.tid, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * (tf.tf * 2.2)
						 / (tf.tf + 1.2 * (0.25 + 0.75 * dl.dl / st.avgdl))) AS score
FROM qt JOIN df USING (lexeme) CROSS JOIN st CROSS JOIN dl
CROSS JOIN LATERAL (SELECT array_length(u.positions, 1) AS tf FROM unnest(dl.v) u WHERE u.lexeme = qt.lexeme) tf
GROUP BY qt.q, dl.tid;
SELECT is((WITH s AS (SELECT q.q, x.tid, x.score FROM ref_q q, bm25_ref.scores(q.q) x)
		   SELECT count(*) FROM s FULL JOIN ref_direct r ON r.q = s.q AND r.tid = s.tid
		   WHERE r.tid IS NULL OR s.tid IS NULL OR abs(r.score - s.score) > 1e-12 * r.score), 0::bigint,
		  'pg_description: the same documents and scores as the direct evaluation, every query');
SELECT cmp_ok((SELECT count(*) FROM ref_direct), '>', 1000::bigint, 'and they are many');
SELECT is((SELECT max(tf) FROM bm25_ref.term), 255, 'a tsvector keeps 255 positions of a lexeme: tf at most 255');
SELECT is((SELECT count(*) FROM ref_q q, LATERAL (
			SELECT score, tid, lag(score) OVER (ORDER BY ord) ps, lag(tid) OVER (ORDER BY ord) pt
			FROM bm25_ref.top(q.q, 50, false) WITH ORDINALITY t(tid, score, ord)) x
		   WHERE ps < score OR (ps = score AND pt > tid)), 0::bigint, 'top(): best first, ties in tid order');
SELECT throws_ok($$SELECT bm25_ref.top('unkept words', 1, false)$$, 'P0001', NULL,
				 'a query lexeme the prepared state did not keep is an error, not a score of 0');

SELECT * FROM finish();
ROLLBACK;
