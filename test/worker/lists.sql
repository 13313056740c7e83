-- The GPU worker's checks on generated lists (t/010_worker.pl and
-- bench/worker/device_check.sh): 123 lists of every shape, and check_lists(),
-- which intersects lists through the worker (pl_intersect, &,
-- gpuidx_engine_intersect) and raises an error unless each answer equals the
-- backend's own CPU answer.
CREATE TABLE lists (id int PRIMARY KEY, l postinglist);
SELECT setseed(0.42);
INSERT INTO lists
SELECT i, (SELECT pl_agg(x) FROM (SELECT DISTINCT (random() * (200000 + i * 1000))::int AS x
                                  FROM generate_series(1, 500 + (i % 40) * 900)) s)
FROM generate_series(1, 120) i;
-- a few dense ranges and a near-empty list
INSERT INTO lists VALUES (121, pl_range(0, 300000)), (122, pl_range(150000, 160000)), (123, pl_range(7, 7));

CREATE FUNCTION check_lists(VARIADIC ls postinglist[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	ref postinglist; got postinglist; got_and postinglist; ref_and postinglist;
BEGIN
	PERFORM set_config('gpuidx.device', 'cpu', true);
	ref := pl_intersect(VARIADIC ls);
	ref_and := ls[1] & ls[2];
	PERFORM set_config('gpuidx.device', 'worker', true);
	got := pl_intersect(VARIADIC ls);
	got_and := ls[1] & ls[2];
	IF got IS DISTINCT FROM ref OR got_and IS DISTINCT FROM ref_and
	   OR gpuidx_engine_intersect(VARIADIC ls) IS DISTINCT FROM ref THEN
		RAISE EXCEPTION 'the worker''s answer differs from the CPU''s (% ids)', pl_length(ref);
	END IF;
	RETURN pl_length(ref);
END $$;
CREATE FUNCTION check_generated(a int, b int, c int) RETURNS int LANGUAGE sql AS $$
	SELECT check_lists((SELECT l FROM lists WHERE id = a), (SELECT l FROM lists WHERE id = b),
	                   (SELECT l FROM lists WHERE id = c))
$$;
