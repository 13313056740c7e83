-- gpuidx index benchmark: one corpus, one method at a time, on the same
-- table, with the same queries.  Run by bench/index/run.sh, which sets the
-- psql variables: docs (docs.tsv), queries (queries.tsv), ndocs (documents
-- to load), nq (queries to time), reps (timed runs of each query).
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;

-- the corpus: the first :ndocs documents (plus 10,000 more held back for the
-- insert test), their tsvectors (for the tsvector-column methods), and the
-- first :nq queries
DROP TABLE IF EXISTS bench_src, bench_docs, bench_new, bench_queries, bench_lex, bench_qclass,
  bench_results, bench_times, bench_methods CASCADE;
DROP FUNCTION IF EXISTS bench_build, bench_uses_index, bench_query, bench_run;
DROP PROCEDURE IF EXISTS bench_inserts;
CREATE TABLE bench_src (id int, body text);
\set load_docs '\\copy bench_src FROM ' :'docs' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load_docs
DELETE FROM bench_src WHERE id > :ndocs + 10000;
CREATE TABLE bench_docs (id int PRIMARY KEY, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO bench_docs SELECT id, body, to_tsvector('english', body) FROM bench_src WHERE id <= :ndocs;
CREATE TABLE bench_new AS SELECT id, body, to_tsvector('english', body) tsv FROM bench_src WHERE id > :ndocs;
VACUUM (FREEZE, ANALYZE) bench_docs;
CREATE TABLE bench_queries (qid int, q text);
\set load_queries '\\copy bench_queries FROM ' :'queries' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load_queries
DELETE FROM bench_queries WHERE qid > :nq;

-- document frequency of every lexeme, to class queries: a term is frequent
-- in at least 1% of the documents
CREATE TABLE bench_lex AS SELECT word, ndoc FROM ts_stat('SELECT tsv FROM bench_docs');
CREATE INDEX ON bench_lex (word);
CREATE TABLE bench_qclass AS
SELECT qid, count(*) FILTER (WHERE l.ndoc >= 0.01 * :ndocs) AS frequent, count(*) AS lexemes
FROM bench_queries q, unnest(tsvector_to_array(to_tsvector('english', q.q))) t(w)
LEFT JOIN bench_lex l ON l.word = t.w GROUP BY qid;
SELECT count(*) AS queries, count(*) FILTER (WHERE frequent >= 2) AS with_two_frequent_terms,
       round(avg(lexemes), 2) AS lexemes_per_query
FROM bench_qclass;

CREATE TABLE bench_results (corpus text, docs int, method text, build_ms float8, size bigint,
	p50_ms float8, p99_ms float8, freq2_p50_ms float8, freq2_p99_ms float8, rows_total bigint,
	insert_rows_s float8, bulk_insert_ms float8, size_after_inserts bigint);
CREATE TABLE bench_times (method text, qid int, ms float8, n bigint);

-- each method: its index and its predicate over $1 (the query text)
CREATE TABLE bench_methods (method text PRIMARY KEY, ddl text, pred text, ord int);
INSERT INTO bench_methods VALUES
  ('gpuidx',         'CREATE INDEX bench_idx ON bench_docs USING gpuidx (body)', 'body @@& $1', 1),
  ('gpuidx_bitmap',  'CREATE INDEX bench_idx ON bench_docs USING gpuidx (body)', 'body @@& $1', 2),
  ('gin_fastupdate_on',  'CREATE INDEX bench_idx ON bench_docs USING gin (to_tsvector(''english'', body)) WITH (fastupdate = on)',
                     'to_tsvector(''english'', body) @@ plainto_tsquery(''english'', $1)', 3),
  ('gin_fastupdate_off', 'CREATE INDEX bench_idx ON bench_docs USING gin (to_tsvector(''english'', body)) WITH (fastupdate = off)',
                     'to_tsvector(''english'', body) @@ plainto_tsquery(''english'', $1)', 4),
  ('gpuidx_tsv',     'CREATE INDEX bench_idx ON bench_docs USING gpuidx (tsv)', 'tsv @@& $1', 5),
  ('gin_tsv',        'CREATE INDEX bench_idx ON bench_docs USING gin (tsv)', 'tsv @@ plainto_tsquery(''english'', $1)', 6),
  ('rum_tsv',        'CREATE INDEX bench_idx ON bench_docs USING rum (tsv rum_tsvector_ops)', 'tsv @@ plainto_tsquery(''english'', $1)', 7);

CREATE FUNCTION bench_build(ddl text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE ddl;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

-- does the plan of the predicate use the method's index?
CREATE FUNCTION bench_uses_index(pred text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN SELECT count(*) FROM bench_docs WHERE %s', pred) USING 'word' LOOP
    IF l LIKE '%Index Scan on bench_idx%' OR l LIKE '%Index: bench_idx%' THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;

-- single-client latency of one query, server side (no network), index forced
CREATE FUNCTION bench_query(pred text, q text, OUT ms float8, OUT n bigint) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  t0 := clock_timestamp();
  EXECUTE format('SELECT count(*) FROM bench_docs WHERE %s', pred) INTO n USING q;
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

-- every query once (warm-up, reps = 0) or reps times, one after the other,
-- into bench_times (a plpgsql loop: a join could reuse a function's result)
CREATE FUNCTION bench_run(m text, pred text, reps int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r record; t record; k int := 0;
BEGIN
  FOR i IN 1 .. greatest(reps, 1) LOOP
    FOR r IN SELECT qid, q FROM bench_queries ORDER BY qid LOOP
      t := bench_query(pred, r.q);
      IF reps > 0 THEN
        INSERT INTO bench_times VALUES (m, r.qid, t.ms, t.n);
      END IF;
      k := k + 1;
    END LOOP;
  END LOOP;
  RETURN k;
END $$;

-- the held-back rows (10,000) inserted one transaction each (single client)
CREATE PROCEDURE bench_inserts(INOUT rows_s float8) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); r record; n int := 0;
BEGIN
  FOR r IN SELECT * FROM bench_new ORDER BY id LOOP
    INSERT INTO bench_docs VALUES (r.id, r.body, r.tsv);
    COMMIT;
    n := n + 1;
  END LOOP;
  rows_s := n / extract(epoch FROM clock_timestamp() - t0);
END $$;
