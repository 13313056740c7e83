-- Cursors over the custom scans: UPDATE/DELETE ... WHERE CURRENT OF finds
-- the row the cursor is on (read, or counted without being read), and a
-- SCROLL cursor goes backward (the planner puts a Material above scans that
-- cannot), as with PostgreSQL's own scans
SET client_min_messages = warning;
CREATE TABLE cur (id int PRIMARY KEY, body text, n int DEFAULT 0) WITH (autovacuum_enabled = off);
INSERT INTO cur SELECT g, 'word' || (g % 50) || ' common' FROM generate_series(1, 5000) g;
CREATE INDEX cur_body ON cur USING gpuidx (body);
VACUUM ANALYZE cur;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- the custom scan, rows read
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM cur WHERE body @@& 'word7';
DECLARE c CURSOR FOR SELECT id FROM cur WHERE body @@& 'word7';
FETCH 2 FROM c;
UPDATE cur SET n = n + 1 WHERE CURRENT OF c RETURNING id, n;
FETCH 1 FROM c;
DELETE FROM cur WHERE CURRENT OF c RETURNING id;
COMMIT;
SELECT id, n FROM cur WHERE id IN (7, 57, 107) ORDER BY id;

-- the custom scan, rows counted without being read (all-visible pages)
VACUUM cur;
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT 1 FROM cur WHERE body @@& 'word8';
DECLARE c CURSOR FOR SELECT 1 FROM cur WHERE body @@& 'word8';
FETCH 1 FROM c;
UPDATE cur SET n = n + 10 WHERE CURRENT OF c RETURNING id, n;
COMMIT;

-- the rank scan
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM cur WHERE id > 100 ORDER BY body <=> 'word9';
DECLARE c CURSOR FOR SELECT id FROM cur WHERE id > 100 ORDER BY body <=> 'word9';
FETCH 1 FROM c;
UPDATE cur SET n = n + 100 WHERE CURRENT OF c RETURNING id, n;
FETCH 1 FROM c;
DELETE FROM cur WHERE CURRENT OF c RETURNING id;
COMMIT;
-- and the plain ordered index scan
SET gpuidx.enable_customscan = off;
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM cur ORDER BY body <=> 'word10';
DECLARE c CURSOR FOR SELECT id FROM cur ORDER BY body <=> 'word10';
FETCH 1 FROM c;
UPDATE cur SET n = n + 1000 WHERE CURRENT OF c RETURNING id, n;
COMMIT;
RESET gpuidx.enable_customscan;
SELECT id, n FROM cur WHERE n > 0 ORDER BY id;

-- backward: a SCROLL cursor gets a Material above the scan; without SCROLL,
-- FETCH BACKWARD is refused as for any scan that cannot go backward
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT id FROM cur WHERE body @@& 'word11';
DECLARE c SCROLL CURSOR FOR SELECT id FROM cur WHERE body @@& 'word11';
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH ABSOLUTE 4 FROM c;
EXPLAIN (COSTS OFF) DECLARE r SCROLL CURSOR FOR SELECT id FROM cur ORDER BY body <=> 'word11 common' LIMIT 5;
DECLARE r SCROLL CURSOR FOR SELECT id FROM cur ORDER BY body <=> 'word11 common' LIMIT 5;
FETCH 3 FROM r;
FETCH BACKWARD 2 FROM r;
FETCH LAST FROM r;
DECLARE f CURSOR FOR SELECT id FROM cur ORDER BY body <=> 'word11';
FETCH 2 FROM f;
FETCH BACKWARD 1 FROM f;
COMMIT;

DROP TABLE cur;
