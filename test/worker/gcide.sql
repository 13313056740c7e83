-- The GPU worker's checks on GCIDE (t/010_worker.pl and
-- bench/worker/device_check.sh), after src (id, body) and qsrc (id, terms)
-- are loaded from the corpus: each query's terms' posting lists
-- (check_query(n) compares the worker's intersection with the CPU's), a
-- gpuidx index over half of the documents (check_index(n) compares the
-- rows of its n-th query through the worker with the CPU's) and count_by(),
-- a query's count by a sequential scan or by the index.
-- each query's lexemes, and the posting list of each lexeme any query has
CREATE TABLE qlex AS
	SELECT q.id AS qid, array_agg(DISTINCT w) AS words
	FROM qsrc q, unnest(tsvector_to_array(to_tsvector('english', q.terms))) w
	GROUP BY q.id HAVING count(DISTINCT w) BETWEEN 2 AND 8;
CREATE TABLE terms AS
	SELECT w AS word, pl_agg(s.id) AS l
	FROM src s, unnest(tsvector_to_array(to_tsvector('english', s.body))) w
	WHERE w IN (SELECT unnest(words) FROM qlex)
	GROUP BY w;
CREATE TABLE queries AS
	SELECT row_number() OVER (ORDER BY qid)::int AS n, array_agg(t.l) AS ls
	FROM qlex, unnest(words) w JOIN terms t ON t.word = w
	GROUP BY qid HAVING count(*) = max(cardinality(words));
CREATE FUNCTION check_query(n int) RETURNS int LANGUAGE sql AS
	'SELECT check_lists(VARIADIC ls) FROM queries q WHERE q.n = check_query.n';

CREATE TABLE docs AS SELECT id, body FROM src WHERE id % 2 = 0;
CREATE INDEX docs_idx ON docs USING gpuidx (body);
ANALYZE docs;
CREATE TABLE iq AS SELECT row_number() OVER (ORDER BY id)::int AS n, terms FROM qsrc WHERE id % 10 = 0;
CREATE FUNCTION index_ids(q text) RETURNS postinglist LANGUAGE sql AS
	'SELECT pl_agg(id) FROM docs WHERE body @@& q';
CREATE FUNCTION check_index(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	qt text; ref postinglist; got postinglist;
BEGIN
	SELECT terms INTO qt FROM iq WHERE iq.n = check_index.n;
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('gpuidx.device', 'cpu', true);
	ref := index_ids(qt);
	PERFORM set_config('gpuidx.device', 'worker', true);
	got := index_ids(qt);
	IF got IS DISTINCT FROM ref THEN
		RAISE EXCEPTION 'index query "%": the worker''s rows differ from the CPU''s', qt;
	END IF;
	RETURN coalesce(pl_length(ref), 0);
END $$;

CREATE FUNCTION count_by(q text, how text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	c bigint;
BEGIN
	PERFORM set_config('enable_seqscan', (how = 'seq')::text, true);
	PERFORM set_config('enable_bitmapscan', (how <> 'seq')::text, true);
	PERFORM set_config('enable_indexscan', (how <> 'seq')::text, true);
	EXECUTE 'SELECT count(*) FROM docs WHERE body @@& $1' INTO c USING q;
	RETURN c;
END $$;

-- a statement's one value (as text) for query text qt, on the CPU and through the worker
CREATE FUNCTION both_ways(stmt text, qt text, OUT on_cpu text, OUT on_worker text) LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('gpuidx.device', 'cpu', true);
	EXECUTE stmt INTO on_cpu USING qt;
	PERFORM set_config('gpuidx.device', 'worker', true);
	EXECUTE stmt INTO on_worker USING qt;
END $$;

-- count(*) of the n-th index query through the worker (count mode: no id
-- comes back when the heap is all-visible) against the CPU's and the rows'
CREATE FUNCTION check_count(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	qt text := (SELECT terms FROM iq WHERE iq.n = check_count.n);
	r record := both_ways('SELECT count(*) FROM docs WHERE body @@& $1', qt);
	rows bigint := coalesce(pl_length(index_ids(qt)), 0);
BEGIN
	IF r.on_worker IS DISTINCT FROM r.on_cpu OR r.on_cpu::bigint <> rows THEN
		RAISE EXCEPTION 'count(*) of "%": worker %, CPU %, rows %', qt, r.on_worker, r.on_cpu, rows;
	END IF;
	RETURN rows;
END $$;

-- the first rows of the n-th index query under LIMIT (the worker sends only
-- the first ids, more when the visible ones run out) against the CPU's
CREATE FUNCTION check_limit(n int, lim int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	qt text := (SELECT terms FROM iq WHERE iq.n = check_limit.n);
	r record := both_ways(format('SELECT pl_agg(id)::text FROM (SELECT id FROM docs WHERE body @@& $1 LIMIT %s) s', lim), qt);
BEGIN
	IF r.on_worker IS DISTINCT FROM r.on_cpu THEN
		RAISE EXCEPTION 'first % rows of "%": the worker''s differ from the CPU''s', lim, qt;
	END IF;
	RETURN coalesce(pl_length(r.on_cpu::postinglist), 0);
END $$;

-- the top k of the n-th index query ranked (ORDER BY body <=> q), any term
-- and every term, through the worker against the CPU's: the same rows in the
-- same order with the same scores (float8 as text is its shortest exact
-- form: the same text, the same bits)
CREATE FUNCTION check_ranked(n int, k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	qt text := (SELECT terms FROM iq WHERE iq.n = check_ranked.n);
	any_term record := both_ways(format(
		'SELECT string_agg(id || '':'' || s, '','') FROM (SELECT id, -(body <=> $1) AS s FROM docs ORDER BY body <=> $1 LIMIT %s) x', k), qt);
	every_term record := both_ways(format(
		'SELECT string_agg(id || '':'' || s, '','') FROM (SELECT id, -(body <=> $1) AS s FROM docs WHERE body @@& $1 ORDER BY body <=> $1 LIMIT %s) x', k), qt);
BEGIN
	IF any_term.on_worker IS DISTINCT FROM any_term.on_cpu THEN
		RAISE EXCEPTION 'top % of "%" (any term): the worker''s % differ from the CPU''s %',
			k, qt, any_term.on_worker, any_term.on_cpu;
	END IF;
	IF every_term.on_worker IS DISTINCT FROM every_term.on_cpu THEN
		RAISE EXCEPTION 'top % of "%" (every term): the worker''s % differ from the CPU''s %',
			k, qt, every_term.on_worker, every_term.on_cpu;
	END IF;
	RETURN coalesce(array_length(string_to_array(any_term.on_cpu, ','), 1), 0);
END $$;
