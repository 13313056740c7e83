-- Memory of counts, bitmaps and rankings of a query tree: within work_mem
-- (a segment whose sets would outgrow it is evaluated a window of its docs
-- at a time: EXPLAIN ANALYZE counts the windows), and rows checked one by
-- one leave nothing behind them.
SET gpuidx.text_config = 'english';
SET max_parallel_workers_per_gather = 0;
CREATE TABLE mem (id int PRIMARY KEY, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO mem
SELECT g, to_tsvector('english', 'common alpha w' || (g % 13) || ' beta' ||
	CASE WHEN g % 1000 = 0 THEN ' gamma alpha beta' ELSE '' END)
FROM generate_series(1, 60000) g;
-- without positions, a phrase's candidates are checked on their rows
CREATE INDEX mem_idx ON mem USING gpuidx (tsv) WITH (positions = off);
VACUUM ANALYZE mem;

-- the lines of EXPLAIN ANALYZE that say how the count was made
CREATE FUNCTION mem_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line ~ 'Index Windows|Custom Scan|Rows Removed|Index Matches' THEN
			RETURN NEXT line;
		END IF;
	END LOOP;
END $$;

-- a tiny work_mem: the 60,000 docs of the segment in windows of 2,048
SET work_mem = '64kB';
SELECT * FROM mem_explain($$SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & !w5')$$);
SELECT * FROM mem_explain($$SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('!w5')$$);
SELECT * FROM mem_explain($$SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & (w1:* | gamma)')$$);
SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & !w5');
SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('!w5');
SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & (w1:* | gamma)');
-- the same through a bitmap scan and a ranking
SET gpuidx.enable_customscan = off;
SET enable_seqscan = off;
SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & !w5');
RESET gpuidx.enable_customscan;
RESET enable_seqscan;
SELECT id FROM mem WHERE tsv @@ to_tsquery('common & gamma') ORDER BY tsv <=> to_tsquery('common & gamma'), id LIMIT 3;
-- the same answers within the default work_mem: one window, none shown
RESET work_mem;
SELECT * FROM mem_explain($$SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & !w5')$$);
SELECT count(*) FROM mem WHERE tsv @@ to_tsquery('common & !w5');
SELECT id FROM mem WHERE tsv @@ to_tsquery('common & gamma') ORDER BY tsv <=> to_tsquery('common & gamma'), id LIMIT 3;

-- phrase candidates checked on their rows through an expression index
-- (none is a phrase): the memory the statement holds after the count is
-- what it holds after a count of the same rows that checks none
CREATE TABLE memtext (id int, body text);
INSERT INTO memtext
SELECT g, 'common alpha ' || repeat('word' || (g % 7) || ' ', 30) || 'beta gamma'
FROM generate_series(1, 20000) g;
CREATE INDEX memtext_idx ON memtext USING gpuidx (to_tsvector('english', body)) WITH (positions = off);
VACUUM ANALYZE memtext;
SELECT (SELECT count(*) FROM memtext WHERE to_tsvector('english', body) @@ to_tsquery('(gamm:* | wor:*) <-> alph:*')) AS phrases,
	(SELECT sum(used_bytes) FROM pg_backend_memory_contexts) AS used \gset checked_
SELECT (SELECT count(*) FROM memtext WHERE to_tsvector('english', body) @@ to_tsquery('(gamm:* | wor:*) & alph:*')) AS rows,
	(SELECT sum(used_bytes) FROM pg_backend_memory_contexts) AS used \gset plain_
SELECT :checked_phrases AS phrases, :plain_rows AS rows,
	:checked_used - :plain_used < 1024 * 1024 AS checks_hold_no_memory;
DROP TABLE memtext;

DROP TABLE mem;
DROP FUNCTION mem_explain(text);
