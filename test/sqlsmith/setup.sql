-- The database sqlsmith queries (test/sqlsmith/run.sh runs this as a
-- superuser, with psql variable role): gpuidx indexes on text and tsvector
-- (plain, expression, partial, another text search configuration), rows
-- with NULL and empty documents, rows deleted and VACUUMed, rows still in
-- the pending area, postinglist columns in every codec; views that run the
-- operators and functions of gpuidx, since sqlsmith picks operators and
-- functions at random from the whole catalog and would seldom pick ours.
-- The role :role may read and write the tables and owns nothing.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;

CREATE FUNCTION words(g int, n int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT string_agg((ARRAY['kernel', 'module', 'linux', 'driver', 'network', 'memory',
		'the', 'of', 'running', 'runs', 'page', 'pages', 'cache', 'übersetzung', 'naïve',
		'x86_64', '2.6.32', 'fs/ext4', 'a-b-c', 'zzz'])[1 + (g * k * 7919 + k * 31) % 20], ' ')
	FROM generate_series(1, n) k
$$;

CREATE TABLE docs (id int PRIMARY KEY, title text, body text, tsv tsvector)
	WITH (autovacuum_enabled = off);
INSERT INTO docs
	SELECT g,
		CASE WHEN g % 13 = 0 THEN NULL ELSE 'title' || g % 50 END,
		CASE WHEN g % 17 = 0 THEN NULL WHEN g % 19 = 0 THEN '' ELSE words(g, 1 + g % 12) END,
		CASE WHEN g % 23 = 0 THEN NULL ELSE to_tsvector('english', words(g + 1, 1 + g % 9)) END
	FROM generate_series(1, 4000) g;
CREATE INDEX docs_body ON docs USING gpuidx (body) WITH (pending_list_limit = 64);
CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
CREATE INDEX docs_expr ON docs USING gpuidx ((coalesce(title, '') || ' ' || coalesce(body, '')));
CREATE INDEX docs_part ON docs USING gpuidx (body) WHERE id % 3 = 0;
CREATE INDEX docs_simple ON docs USING gpuidx (title) WITH (text_config = 'simple');
-- deleted rows, marked dead in the segments by VACUUM
DELETE FROM docs WHERE id % 11 = 0;
VACUUM ANALYZE docs;
-- rows in the pending area, never merged (below pending_list_limit)
INSERT INTO docs
	SELECT g, 'late ' || g, words(g, 1 + g % 5), to_tsvector('simple', words(g, 3))
	FROM generate_series(4001, 4150) g;
UPDATE docs SET body = body || ' updated' WHERE id BETWEEN 100 AND 130;

CREATE TABLE queries (q text);
INSERT INTO queries VALUES ('kernel'), ('kernel module'), ('linux driver network'), ('the'),
	('übersetzung'), ('x86_64 2.6.32'), ('fs/ext4'), (''), ('   '), (NULL), ('zzz kernel memory pages'),
	('title7'), ('late'), (repeat('kernel ', 200)), ('a-b-c'), ('!@#$%^&*()'), ('naïve cache');

CREATE TABLE lists (id int, l postinglist, ids int[]) WITH (autovacuum_enabled = off);
INSERT INTO lists VALUES
	(1, pl_encode(pl_range(0, 1000), 'raw'), NULL),
	(2, pl_encode(pl_range(500, 100000), 'ef'), NULL),
	(3, pl_encode(postinglist(ARRAY(SELECT g * g FROM generate_series(0, 3000) g)), 'lrc'), NULL),
	(4, postinglist(ARRAY[]::int[]), ARRAY[]::int[]),
	(5, NULL, NULL),
	(6, postinglist(ARRAY[0, 1, 2147483647]), ARRAY[0, 1, 2147483647]),
	(7, postinglist(ARRAY[4294967295]::bigint[]), NULL),
	(8, (SELECT pl_agg(id) FROM docs WHERE body @@& 'kernel'), NULL),
	(9, pl_encode(pl_range(0, 1), 'auto'), ARRAY[5, 3, 3, 1]);
UPDATE lists SET ids = pl_to_int4_array(l) WHERE ids IS NULL AND pl_length(l) < 5000 AND id <> 7;

-- what sqlsmith reaches gpuidx through: every relation below runs its code
CREATE VIEW hits AS
	SELECT d.id, d.body, d.tsv, d.title, q.q FROM docs d, queries q
	WHERE d.id % 50 = 1 AND d.body @@& q.q;
CREATE VIEW kernel_docs AS SELECT id, title, body FROM docs WHERE body @@& 'kernel module';
CREATE VIEW tsv_docs AS SELECT id, tsv FROM docs WHERE tsv @@& 'network memory';
CREATE VIEW expr_docs AS
	SELECT id, title FROM docs WHERE (coalesce(title, '') || ' ' || coalesce(body, '')) @@& 'title7 kernel';
CREATE VIEW part_docs AS SELECT id, body FROM docs WHERE id % 3 = 0 AND body @@& 'driver';
CREATE VIEW ranked AS
	SELECT id, body, body <=> 'linux kernel driver' AS distance FROM docs
	ORDER BY body <=> 'linux kernel driver' LIMIT 25;
CREATE VIEW ranked_tsv AS
	SELECT id, tsv, tsv <=> 'network cache' AS distance FROM docs ORDER BY 3 LIMIT 25;
CREATE VIEW scores AS
	SELECT id, gpuidx_bm25(body, 'kernel pages') AS score, gpuidx_bm25(tsv, 'memory', 'docs_tsv') AS tsv_score
	FROM docs WHERE id % 10 = 0;
CREATE VIEW list_ops AS
	SELECT a.id AS a, b.id AS b, a.l & b.l AS intersection, a.l | b.l AS union_, a.l - b.l AS minus,
		a.l && b.l AS overlap, a.l @> b.id::bigint AS contains, a.l = b.l AS equal, pl_length(a.l) AS length,
		pl_codec(a.l) AS codec
	FROM lists a, lists b;
CREATE VIEW list_ids AS
	SELECT id, pl_unnest(l) AS doc FROM lists WHERE id IN (1, 3, 6, 8);

CREATE ROLE :"role" LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON docs, queries, lists TO :"role";
GRANT SELECT ON hits, kernel_docs, tsv_docs, expr_docs, part_docs, ranked, ranked_tsv, scores,
	list_ops, list_ids TO :"role";
-- simple views are updatable: writes through them reach the index too
GRANT INSERT, UPDATE, DELETE ON kernel_docs, tsv_docs, expr_docs, part_docs TO :"role";
-- the SQLSTATE and source location of each of its errors, in the server log
ALTER ROLE :"role" SET log_error_verbosity = verbose;

SELECT pending_entries > 0 AS pending, dead_docs > 0 AS dead FROM gpuidx_index_stats('docs_body');
