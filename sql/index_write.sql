-- writes: rows go to the pending area (scanned by every query, never merged
-- by one), merged into segments past pending_list_limit, by VACUUM or by
-- gpuidx_merge_pending; deleted rows are marked dead by VACUUM and their
-- space comes back when segments merge.  Every step keeps the index equal
-- to a row-by-row evaluation, and gpuidx_verify finds it sound.
SET client_min_messages = warning;

CREATE TABLE w (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
CREATE INDEX w_idx ON w USING gpuidx (body) WITH (pending_list_limit = 64);

-- the check after every step: index vs row by row for a set of queries
CREATE TABLE wq (q text);
INSERT INTO wq VALUES ('alpha'), ('beta'), ('gamma delta'), ('alpha beta'), ('epsilon'),
  ('zeta eta theta'), ('iota'), ('kappa lambda'), ('mu'), ('alpha omega'), ('big document');
CREATE FUNCTION w_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; a int[]; b int[]; bad int := 0;
BEGIN
  FOR r IN SELECT q FROM wq LOOP
    SET LOCAL enable_seqscan = off;
    SELECT array_agg(id ORDER BY id) INTO a FROM w WHERE body @@& r.q;
    SET LOCAL enable_seqscan = on;
    SET LOCAL enable_bitmapscan = off;
    SELECT array_agg(id ORDER BY id) INTO b FROM w WHERE body @@& r.q;
    SET LOCAL enable_bitmapscan = on;
    IF a IS DISTINCT FROM b THEN bad := bad + 1; END IF;
  END LOOP;
  RETURN CASE WHEN bad = 0 THEN 'same rows' ELSE bad || ' queries differ' END;
END $$;
CREATE FUNCTION w_words(g int) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg((ARRAY['alpha','beta','gamma','delta','epsilon','zeta','eta','theta',
                           'iota','kappa','lambda','mu','omega'])[1 + (g * k * 37 + k) % 13], ' ')
  FROM generate_series(1, 3 + g % 5) k
$$;

-- inserts: pending first, segments once past 64 kB
INSERT INTO w SELECT g, w_words(g) FROM generate_series(1, 300) g;
SELECT segments, docs, pending_entries > 0 AS pending FROM gpuidx_index_stats('w_idx');
SELECT w_check();
INSERT INTO w SELECT g, w_words(g) FROM generate_series(301, 6000) g;
SELECT segments > 1 AS merged, docs + pending_entries AS rows FROM gpuidx_index_stats('w_idx');
SELECT w_check();
SELECT gpuidx_verify('w_idx') LIKE '%is sound%6000 rows%' AS sound;

-- gpuidx_merge_pending empties the pending area
SELECT gpuidx_merge_pending('w_idx') > 0 AS merged_some;
SELECT pending_entries FROM gpuidx_index_stats('w_idx');
SELECT gpuidx_merge_pending('w_idx');
SELECT w_check();

-- updates and deletes: old versions stay indexed until VACUUM
UPDATE w SET body = body || ' omega' WHERE id % 10 = 0;
DELETE FROM w WHERE id % 7 = 0;
SELECT w_check();
SELECT gpuidx_verify('w_idx') LIKE '%is sound%' AS sound;
VACUUM w;
SELECT dead_docs > 0 OR segments > 0 AS vacuumed, pending_entries FROM gpuidx_index_stats('w_idx');
SELECT sum(dead_docs) <= sum(docs) * 0.2 AS dead_share_bounded FROM gpuidx_segments('w_idx');
SELECT w_check();
SELECT gpuidx_verify('w_idx') LIKE '%is sound%' AS sound;

-- nearly everything deleted: VACUUM rewrites the segments without their dead docs
DELETE FROM w WHERE id > 100;
VACUUM w;
SELECT docs - dead_docs AS live_docs, (SELECT count(*) FROM w) AS rows FROM gpuidx_index_stats('w_idx');
SELECT w_check();
SELECT gpuidx_verify('w_idx') LIKE '%is sound%86 rows%' AS sound;

-- the pages of merged and rewritten segments are used again: the same cycle
-- of inserts, merges, deletes and VACUUMs twice, and the index does not grow.
-- Retired pages are freed once no snapshot that could read them is left, so
-- before each VACUUM the test waits for the snapshots other sessions took
-- before then to end (a busy server's: autovacuum, a session in another
-- database), as a quiet server has none
CREATE PROCEDURE w_cycle() LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO w SELECT g, w_words(g) FROM generate_series(100001, 106000) g;
  COMMIT;
  PERFORM gpuidx_merge_pending('w_idx');
  DELETE FROM w WHERE id > 100;
  COMMIT;
END $$;
CREATE PROCEDURE w_older_snapshots_ended() LANGUAGE plpgsql AS $$
DECLARE
  mark xid := xid(pg_current_xact_id());
  holders text;
BEGIN
  COMMIT;
  FOR i IN 1..600 LOOP
    SELECT string_agg(backend_type || ' ' || pid, ', ') INTO holders FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND (age(backend_xmin) >= age(mark) OR age(backend_xid) >= age(mark));
    EXIT WHEN holders IS NULL;
    COMMIT;    -- a new transaction sees pg_stat_activity anew
    PERFORM pg_sleep(0.1);
  END LOOP;
  IF holders IS NOT NULL THEN
    RAISE WARNING 'snapshots older than the merges still held after 60 s by: %', holders;
  END IF;
END $$;
CALL w_cycle();
CALL w_older_snapshots_ended();
VACUUM w;
CALL w_older_snapshots_ended();
VACUUM w;
SELECT pg_relation_size('w_idx') AS size_first \gset
CALL w_cycle();
CALL w_older_snapshots_ended();
VACUUM w;
CALL w_older_snapshots_ended();
VACUUM w;
SELECT pg_relation_size('w_idx') <= :size_first * 1.1 AS pages_reused;
SELECT retired_sets = 0 AS all_recycled FROM gpuidx_index_stats('w_idx');
SELECT w_check();
SELECT gpuidx_verify('w_idx') LIKE '%is sound%86 rows%' AS sound;

-- a document of several megabytes: no tsvector size limit applies, its
-- entry spans many pages of the pending area, and it matches
ALTER INDEX w_idx SET (pending_list_limit = 65536);
INSERT INTO w SELECT 999999, 'big document ' || string_agg('word' || g, ' ') || ' finale'
FROM generate_series(1, 400000) g;
SELECT octet_length(body) > 4000000 AS big FROM w WHERE id = 999999;
SELECT pending_pages > 100 AS spans_pages FROM gpuidx_index_stats('w_idx');
SET enable_seqscan = off;
SELECT id FROM w WHERE body @@& 'word399999 finale';
SELECT id FROM w WHERE body @@& 'word1 word400000';
RESET enable_seqscan;
SELECT id FROM w WHERE body @@& 'word399999 finale';
SELECT w_check();
-- the merge's budget is far below the document: its postings are split
-- between sorted runs in its middle
SET maintenance_work_mem = '1MB';
SELECT gpuidx_merge_pending('w_idx') > 0 AS merged;
SET enable_seqscan = off;
SELECT id FROM w WHERE body @@& 'word399999 finale';
SELECT id FROM w WHERE body @@& 'word1 word200000 big';
RESET enable_seqscan;
SELECT gpuidx_verify('w_idx') LIKE '%is sound%' AS sound;
-- (where to_tsvector gives up)
SELECT to_tsvector('english', body) IS NOT NULL FROM w WHERE id = 999999;

-- an index built from scratch on the same rows equals the one built by
-- writes; built in 1 MB, the big document spills runs in its middle
CREATE INDEX w_idx2 ON w USING gpuidx (body);
RESET maintenance_work_mem;
SELECT (SELECT docs - dead_docs + pending_entries FROM gpuidx_index_stats('w_idx')) =
       (SELECT docs FROM gpuidx_index_stats('w_idx2')) AS same_rows;
SELECT build_runs > 10 AS spilled, terms > 400000 AS all_terms FROM gpuidx_index_stats('w_idx2');
SELECT gpuidx_verify('w_idx2') LIKE '%is sound%' AS sound;
DROP INDEX w_idx;
SET enable_seqscan = off;
SELECT id FROM w WHERE body @@& 'word399999 finale';
SELECT id FROM w WHERE body @@& 'word1 word200000 big';
SELECT count(*) FROM w WHERE body @@& 'alpha';
RESET enable_seqscan;
SELECT count(*) FROM w WHERE body @@& 'alpha';
SELECT w_check();
DROP TABLE w;

-- merges read each list a block at a time (whatever its length, in each
-- codec) and drop the dead docs: VACUUM rewrites a segment a quarter dead
CREATE TABLE wl (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO wl SELECT g, 'row' || g
	|| CASE WHEN g % 2 = 0 THEN ' even' ELSE '' END
	|| CASE WHEN (g::bigint * 7919) % 1000 < 300 THEN ' scattered' ELSE '' END
FROM generate_series(1, 120000) g;
CREATE INDEX wl_ef ON wl USING gpuidx (body) WITH (codec = ef);
CREATE INDEX wl_lrc ON wl USING gpuidx (body) WITH (codec = lrc);
CREATE INDEX wl_raw ON wl USING gpuidx (body) WITH (codec = raw);
DELETE FROM wl WHERE id % 4 = 1 OR id BETWEEN 50000 AND 60000;
VACUUM wl;
SELECT i.name, s.docs, s.dead_docs, s.postings
FROM (VALUES ('wl_ef'), ('wl_lrc'), ('wl_raw')) i(name), gpuidx_segments(i.name::regclass) s;
SELECT name, gpuidx_verify(name::regclass) LIKE '%is sound%' AS sound
FROM (VALUES ('wl_ef'), ('wl_lrc'), ('wl_raw')) i(name);
-- gpuidx_verify within maintenance_work_mem: 36 bytes a row, so past 29,127
-- rows at 1MB the table is matched a range of its blocks at a time, each
-- codec's lists decoded again for each range
SET maintenance_work_mem = '1MB';
SELECT name, regexp_replace(gpuidx_verify(name::regclass),
		'^index "\w+" is sound: .*; (\d+) rows of "wl" found, in (\d+) passes within maintenance_work_mem$',
		'sound, \1 rows in \2 passes') AS verified
FROM (VALUES ('wl_ef'), ('wl_lrc'), ('wl_raw')) i(name);
RESET maintenance_work_mem;
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM wl WHERE body @@& 'scattered even';
DROP INDEX wl_ef;
SELECT count(*), sum(id) FROM wl WHERE body @@& 'scattered even';
DROP INDEX wl_lrc;
SELECT count(*), sum(id) FROM wl WHERE body @@& 'scattered even';
RESET enable_seqscan;
SET enable_bitmapscan = off;
SELECT count(*), sum(id) FROM wl WHERE body @@& 'scattered even';
RESET enable_bitmapscan;
DROP TABLE wl;

-- and with segments merged from the pending area after VACUUM freed space
-- in the table's pages (rows of a merge in other TID order), dead docs,
-- pending entries, and an index without frequencies
CREATE TABLE wv (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO wv SELECT g, 'first row' || g || ' word' || (g % 300) FROM generate_series(1, 60000) g;
CREATE INDEX wv_idx ON wv USING gpuidx (body) WITH (pending_list_limit = 256);
CREATE INDEX wv_nofreq ON wv USING gpuidx (body) WITH (freqs = off, pending_list_limit = 256);
DELETE FROM wv WHERE id % 2 = 0;
VACUUM wv;
UPDATE wv SET body = body || ' updated' WHERE id % 7 = 0;
INSERT INTO wv SELECT g, 'second row' || g || ' word' || (g % 300) FROM generate_series(60001, 90000) g;
DELETE FROM wv WHERE id % 11 = 0;
VACUUM wv;
-- VACUUM merged the segments into one (the others took more than a quarter
-- of its pages): a second, small segment, and dead docs in both
INSERT INTO wv SELECT g, 'third row' || g || ' word' || (g % 300) FROM generate_series(100001, 103000) g;
SELECT gpuidx_merge_pending('wv_idx') > 0 AS merged, gpuidx_merge_pending('wv_nofreq') > 0 AS merged_nofreq;
DELETE FROM wv WHERE id % 13 = 0;
VACUUM wv;
INSERT INTO wv SELECT g, 'pending row' || g FROM generate_series(90001, 90040) g;
SET maintenance_work_mem = '1MB';
SELECT name, s.segments > 1 AS segments, s.dead_docs > 0 AS dead, s.pending_entries AS pending,
	regexp_replace(gpuidx_verify(name::regclass),
		'^index "\w+" is sound: .*; (\d+) rows of "wv" found, in (\d+) passes within maintenance_work_mem$',
		'sound, \1 rows in \2 passes') AS verified
FROM (VALUES ('wv_idx'), ('wv_nofreq')) i(name), gpuidx_index_stats(name::regclass) s;
RESET maintenance_work_mem;
SELECT gpuidx_verify('wv_idx') ~ 'found$' AS one_pass_at_the_default;
DROP TABLE wv;
