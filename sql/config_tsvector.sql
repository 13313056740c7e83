-- text_config on an index of tsvector documents: their lexemes are indexed
-- as they are, so the option has no effect; naming it is a warning at
-- CREATE INDEX, ALTER INDEX ... SET and REINDEX (not an error: indexes built
-- before the check carry it, and their dumps restore it)
CREATE TABLE ct (id int, tsv tsvector, body text);
INSERT INTO ct SELECT g, to_tsvector('english', 'running dogs ' || g), 'running dogs ' || g FROM generate_series(1, 50) g;
CREATE INDEX ct_tsv ON ct USING gpuidx (tsv) WITH (text_config = 'german');
-- the build no longer writes the setting into a tsvector index's options
CREATE INDEX ct_tsv_plain ON ct USING gpuidx (tsv);
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ct_tsv', 'ct_tsv_plain') ORDER BY relname;
ALTER INDEX ct_tsv_plain SET (text_config = 'simple');
ALTER INDEX ct_tsv_plain SET (text_config = 'simple');   -- unchanged: nothing said
ALTER INDEX ct_tsv_plain SET (codec = ef);               -- another option: nothing said
REINDEX INDEX ct_tsv_plain;
ALTER INDEX ct_tsv_plain RESET (text_config);
REINDEX INDEX ct_tsv_plain;
-- and the option has no effect on the answers
SET enable_seqscan = off;
SELECT count(*) FROM ct WHERE tsv @@& 'running dog';
RESET enable_seqscan;
-- a text index uses it: no warning, and the build writes the setting
CREATE INDEX ct_body ON ct USING gpuidx (body);
SELECT reloptions FROM pg_class WHERE relname = 'ct_body';
ALTER INDEX ct_body SET (text_config = 'simple');
DROP TABLE ct;
