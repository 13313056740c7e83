-- bench/tsquery/run.sh: the tables and statements each index is measured
-- with, and tsq_run, which runs one statement for one query and records its
-- rows and time in tsq_runs; the tables the report is made from (tsq_runs,
-- tsq_plans, tsq_cells), empty.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- a layout's table for an index (gpx, gin) and its document: load.sql's
-- tables, one definition for the builds, the check, the timings, the plans
-- and pgbench
CREATE OR REPLACE FUNCTION tsq_table(layout text, ix text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF ix NOT IN ('gpx', 'gin') OR layout NOT IN ('expr', 'column') THEN
		RAISE EXCEPTION 'unknown layout % or index %', layout, ix;
	END IF;
	RETURN 'docs_' || ix || CASE layout WHEN 'column' THEN '_tsv' ELSE '' END;
END $$;
CREATE OR REPLACE FUNCTION tsq_doc(layout text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE layout WHEN 'expr' THEN 'to_tsvector(''english'', body)' WHEN 'column' THEN 'tsv' END
$$;

-- the statement of a layout, an index and a kind (count, limit), the query
-- its parameter $1
CREATE OR REPLACE FUNCTION tsq_statement(layout text, ix text, stmt text, fn text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	CASE stmt
		WHEN 'count' THEN RETURN format('SELECT count(*) FROM %I WHERE %s @@ %s(''english'', $1)',
		                                tsq_table(layout, ix), tsq_doc(layout), fn);
		WHEN 'limit' THEN RETURN format('SELECT id FROM %I WHERE %s @@ %s(''english'', $1) LIMIT 10',
		                                tsq_table(layout, ix), tsq_doc(layout), fn);
		ELSE RAISE EXCEPTION 'unknown statement %', stmt;
	END CASE;
END $$;

-- one run of a statement: pass (check, warm, time, ...), its rows (the count,
-- or the rows returned), its milliseconds (EXECUTE ... USING: planned with the
-- query's value, a custom plan, as a driver's first executions are), and
-- ok, timeout (statement_timeout; ms is then the timeout) or the error
DROP TABLE IF EXISTS tsq_runs, tsq_plans, tsq_cells;
CREATE TABLE tsq_runs (pass text, layout text, ix text, stmt text, mix text, n int, nrows bigint, ms float8, status text);
CREATE OR REPLACE FUNCTION tsq_run(pass text, layout text, ix text, stmt text, mix text, n int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sql text; q text; t0 timestamptz; ms float8; nrows bigint; status text := 'ok';
BEGIN
	SELECT tsq_statement(layout, ix, stmt, x.fn), x.q INTO STRICT sql, q
	FROM tsq_queries x WHERE x.mix = tsq_run.mix AND x.n = tsq_run.n;
	BEGIN
		t0 := clock_timestamp();
		IF stmt = 'count' THEN
			EXECUTE sql INTO nrows USING q;
		ELSE
			EXECUTE sql USING q;
			GET DIAGNOSTICS nrows = ROW_COUNT;
		END IF;
		ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	EXCEPTION
		WHEN query_canceled THEN
			status := 'timeout';
			ms := extract(epoch FROM current_setting('statement_timeout')::interval) * 1000;
		WHEN OTHERS THEN
			status := 'error: ' || SQLERRM;
	END;
	INSERT INTO tsq_runs VALUES (pass, layout, ix, stmt, mix, n, nrows, ms, status);
END $$;

-- each statement's plan (run.sh's plan()) and the pgbench cells (ix: gpx,
-- gin, cpu (gpx with gpuidx.device = cpu), floor (SELECT 1)); tps, p50 and
-- p99 NULL where pgbench gave none
CREATE TABLE tsq_plans (layout text, mix text, stmt text, gpx text, gin text);
CREATE TABLE tsq_cells (layout text, mix text, stmt text, clients int, ix text,
                        tps float8, p50 float8, p99 float8, txns bigint, failed bigint);
