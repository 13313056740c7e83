-- gpuidx_rank_query: a query bound to an index, readable as it shows in
-- EXPLAIN and in the function's result (no control characters)
CREATE TABLE rq (id int, body text);
INSERT INTO rq SELECT g, 'word' || (g % 7) || ' common' FROM generate_series(1, 100) g;
CREATE INDEX rq_body ON rq USING gpuidx (body);
SELECT gpuidx_rank_query('word3 common', 'rq_body') = format('[gpuidx index %s] word3 common', 'rq_body'::regclass::oid) AS readable;
SELECT gpuidx_rank_query('word3 common', 'rq_body') ~ '[[:cntrl:]]' AS has_control_characters;
-- binding twice keeps the first binding
SELECT gpuidx_rank_query(gpuidx_rank_query('word3', 'rq_body'), 'rq_body') = gpuidx_rank_query('word3', 'rq_body') AS bound_once;
-- a bound query ranks as the plain one does
SELECT (SELECT array_agg(id) FROM (SELECT id FROM rq ORDER BY body <=> gpuidx_rank_query('word3', 'rq_body'), id LIMIT 5) a)
     = (SELECT array_agg(id) FROM (SELECT id FROM rq ORDER BY body <=> 'word3', id LIMIT 5) b) AS same_rows;
SELECT gpuidx_bm25(body, gpuidx_rank_query('word3', 'rq_body')) = gpuidx_bm25(body, 'word3') AS same_score
FROM rq WHERE id = 3;
-- text that only looks bound is an ordinary query: its words are scored
SELECT gpuidx_bm25(body, '[gpuidx index x] word3') > 0 AS scored FROM rq WHERE id = 3;
SELECT gpuidx_bm25(body, '[gpuidx index 1]word3') > 0 AS scored FROM rq WHERE id = 3;
DROP TABLE rq;
