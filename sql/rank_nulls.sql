-- ORDER BY doc <=> query never filters: rows whose document is NULL (the
-- index does not hold them; their distance is NULL) come last, as a sort
-- puts them, through the rank custom scan and the plain ordered index scan,
-- with and without LIMIT, pending rows, deleted and vacuumed rows, HOT
-- updates, text and tsvector columns, an expression index, a partial index
SET client_min_messages = warning;
SET extra_float_digits = 0;

-- a ranked query in three plan shapes: the rank custom scan, the ordered
-- index scan, a sort (ties by ctid, as the index breaks them).  Rows with a
-- distance must come in the same order with the same distances; rows
-- without one (NULL, last) are the same rows unless the LIMIT cuts them.
CREATE FUNCTION ranked_shapes(from_where text, doc text, q text, k int,
	OUT rows int, OUT no_doc int, OUT custom_same bool, OUT index_same bool)
LANGUAGE plpgsql AS $$
DECLARE
	shape text;
	query text;
	plan text;
	line text;
	ids int[];
	ds float8[];
	sort_ids int[];
	sort_ds float8[];
	same bool;
BEGIN
	FOREACH shape IN ARRAY ARRAY['sort', 'custom', 'index'] LOOP
		PERFORM set_config('enable_seqscan', CASE WHEN shape = 'sort' THEN 'on' ELSE 'off' END, true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		PERFORM set_config('enable_indexscan', CASE WHEN shape = 'sort' THEN 'off' ELSE 'on' END, true);
		PERFORM set_config('gpuidx.enable_customscan', CASE WHEN shape = 'custom' THEN 'on' ELSE 'off' END, true);
		query := format('SELECT id, %s <=> %s AS d FROM %s ORDER BY %s <=> %s%s%s', doc, q, from_where, doc, q,
						CASE WHEN shape = 'sort' THEN ', ctid' ELSE '' END,
						CASE WHEN k IS NULL THEN '' ELSE ' LIMIT ' || k END);
		plan := '';
		FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
			plan := plan || line || E'\n';
		END LOOP;
		IF (shape = 'custom' AND plan NOT LIKE '%gpuidx rank%') OR
		   (shape = 'index' AND plan NOT LIKE '%Index Scan using%') OR
		   (shape = 'sort' AND plan NOT LIKE '%Sort%') THEN
			RAISE EXCEPTION 'shape % planned as %', shape, plan;
		END IF;
		EXECUTE format('SELECT array_agg(id), array_agg(d) FROM (%s) s', query) INTO ids, ds;
		IF shape = 'sort' THEN
			sort_ids := ids;
			sort_ds := ds;
			rows := coalesce(array_length(ids, 1), 0);
			no_doc := (SELECT count(*) FROM unnest(ds) d WHERE d IS NULL);
			CONTINUE;
		END IF;
		same := ds IS NOT DISTINCT FROM sort_ds AND
			(SELECT array_agg(i ORDER BY n) FROM unnest(ids, ds) WITH ORDINALITY u(i, d, n) WHERE d IS NOT NULL)
			IS NOT DISTINCT FROM
			(SELECT array_agg(i ORDER BY n) FROM unnest(sort_ids, sort_ds) WITH ORDINALITY u(i, d, n) WHERE d IS NOT NULL)
			AND (ids IS NULL OR (SELECT count(DISTINCT i) FROM unnest(ids) i) = array_length(ids, 1));
		-- the rows without a document: all of them unless the LIMIT cut
		IF k IS NULL OR rows < k THEN
			same := same AND
				(SELECT array_agg(i ORDER BY i) FROM unnest(ids, ds) u(i, d) WHERE d IS NULL)
				IS NOT DISTINCT FROM
				(SELECT array_agg(i ORDER BY i) FROM unnest(sort_ids, sort_ds) u(i, d) WHERE d IS NULL);
		END IF;
		IF shape = 'custom' THEN
			custom_same := same;
		ELSE
			index_same := same;
		END IF;
	END LOOP;
END $$;

-- most rows NULL: 5 documents in 100,000 rows
CREATE TABLE nt (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO nt SELECT g, CASE WHEN g % 20000 = 0 THEN 'kernel module for linux' END FROM generate_series(1, 100000) g;
CREATE INDEX nt_body ON nt USING gpuidx (body);
VACUUM ANALYZE nt;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM nt ORDER BY body <=> 'kernel' LIMIT 10;
SELECT count(*) FROM (SELECT id FROM nt ORDER BY body <=> 'kernel' LIMIT 10) s;
SET gpuidx.enable_customscan = off;
SELECT count(*) FROM (SELECT id FROM nt ORDER BY body <=> 'kernel' LIMIT 10) s;
RESET gpuidx.enable_customscan;
-- the rows without a document come from a read of the table, once the index's ran out
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM nt ORDER BY body <=> 'kernel' LIMIT 10;
RESET enable_seqscan;
SELECT * FROM ranked_shapes('nt', 'body', '''kernel''', 10);
SELECT * FROM ranked_shapes('nt', 'body', '''kernel''', 3);
SELECT * FROM ranked_shapes('nt', 'body', '''kernel''', NULL);
SELECT * FROM ranked_shapes('nt', 'body', '''nosuchterm''', 7);
SELECT * FROM ranked_shapes('nt', 'body', '''the''', 7);
-- a NULL query: every distance is NULL, every row comes
SET plan_cache_mode = force_generic_plan;
PREPARE nullq(text) AS SELECT id FROM nt ORDER BY body <=> $1 LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE nullq(NULL);
SELECT count(*) FROM (SELECT 1 FROM nt ORDER BY body <=> NULL LIMIT 10) s;
CREATE TEMP TABLE nullq_rows AS EXECUTE nullq(NULL);
SELECT count(*), count(DISTINCT id) FROM nullq_rows;
DEALLOCATE nullq;
RESET plan_cache_mode;
DROP TABLE nt;

-- few NULL rows (fewer than k), with rows of score 0, pending rows, HOT
-- updates of NULL rows, deletes and VACUUM
CREATE TABLE ft (id int PRIMARY KEY, body text, title text, n int DEFAULT 0,
	tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)
	WITH (autovacuum_enabled = off, fillfactor = 50);
INSERT INTO ft (id, body, title)
SELECT g, CASE WHEN g % 400 = 0 THEN NULL ELSE 'word' || (g % 13) || ' filler ' || (g % 7) END,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE 'title' || (g % 3) END
FROM generate_series(1, 2000) g;
CREATE INDEX ft_body ON ft USING gpuidx (body);
CREATE INDEX ft_tsv ON ft USING gpuidx (tsv);
CREATE INDEX ft_expr ON ft USING gpuidx ((title || ' ' || body));
CREATE INDEX ft_part ON ft USING gpuidx (body) WHERE id % 2 = 0;
VACUUM ANALYZE ft;
SELECT * FROM ranked_shapes('ft', 'body', '''word3 filler''', 10);
SELECT * FROM ranked_shapes('ft', 'body', '''word3 filler''', 1997);
SELECT * FROM ranked_shapes('ft', 'body', '''word3 filler''', 2010);
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', NULL);
SELECT * FROM ranked_shapes('ft', 'tsv', '''word3''', 1999);
SELECT * FROM ranked_shapes('ft', 'tsv', '''word3''', NULL);
-- an expression index: its expression is NULL for 400 + 5 rows
SELECT * FROM ranked_shapes('ft', '(title || '' '' || body)', '''title1 word3''', NULL);
SELECT * FROM ranked_shapes('ft', '(title || '' '' || body)', '''title1 word3''', 1700);
-- a partial index: the NULL rows of its predicate only (the query implies it)
SELECT * FROM ranked_shapes('ft WHERE id % 2 = 0', 'body', 'gpuidx_rank_query(''word3'', ''ft_part'')', NULL);
SELECT * FROM ranked_shapes('ft WHERE id % 2 = 0', 'body', 'gpuidx_rank_query(''word3'', ''ft_part'')', 999);
-- pending rows, NULL and not
INSERT INTO ft (id, body, title) SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE 'word3 pending ' || g END, 'title1'
	FROM generate_series(3001, 3030) g;
SELECT pending_entries > 0 AS pending FROM gpuidx_index_stats('ft_body');
SELECT * FROM ranked_shapes('ft', 'body', '''word3 pending''', NULL);
SELECT * FROM ranked_shapes('ft', 'body', '''word3 pending''', 2025);
SELECT * FROM ranked_shapes('ft', 'tsv', '''word3 pending''', NULL);
-- HOT updates of NULL rows: the index's TID of a row is its chain's root
BEGIN;
UPDATE ft SET n = n + 1 WHERE body IS NULL;
UPDATE ft SET n = n + 1 WHERE body IS NULL;
SELECT pg_stat_get_xact_tuples_hot_updated('ft'::regclass) AS hot_updates;
COMMIT;
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', NULL);
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', 2028);
-- deletes, before and after VACUUM
DELETE FROM ft WHERE id % 800 = 0 OR id % 11 = 0;
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', NULL);
VACUUM ft;
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', NULL);
SELECT * FROM ranked_shapes('ft', 'body', '''word3''', 1840);
SELECT * FROM ranked_shapes('ft', 'tsv', '''word3''', NULL);
SELECT * FROM ranked_shapes('ft', '(title || '' '' || body)', '''title1 word3''', NULL);
SELECT * FROM ranked_shapes('ft WHERE id % 2 = 0', 'body', 'gpuidx_rank_query(''word3'', ''ft_part'')', NULL);
-- with @@&, no NULL document matches: none comes
SELECT count(*) FROM (SELECT id FROM ft WHERE body @@& 'word3' ORDER BY body <=> 'word3') s;
DROP TABLE ft;

-- a NOT NULL column: the table is not read for rows the index lacks
CREATE TABLE nn (id int, body text NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO nn SELECT g, 'word' || (g % 5) FROM generate_series(1, 100) g;
CREATE INDEX nn_body ON nn USING gpuidx (body);
VACUUM ANALYZE nn;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM nn ORDER BY body <=> 'word1';
RESET enable_seqscan;
DROP TABLE nn;
DROP FUNCTION ranked_shapes(text, text, text, int);
