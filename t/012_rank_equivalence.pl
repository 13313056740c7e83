# The ranking proof: on GCIDE's dictionary entries (the project's data
# fetcher) and 532 queries of 1 to 6 words taken from the corpus's real
# queries, frequent and rare, the gpuidx index's top k (k = 1, 10, 100) of
# ORDER BY doc <=> q, alone (any term) and under doc @@& q (every term),
# agrees with a plain-SQL BM25 computed from the table itself
# (test/rank_reference.sql): the same rows, scores within a relative 1e-9
# (the reference sums in another order); -(doc <=> q) equals
# gpuidx_bm25(doc, q) exactly; the rows come in order of those scores, ties
# in heap order; and a sequential scan sorting by the same operator returns
# the same rows, order and scores.  For a text column (k1 and b by default)
# and a tsvector column (k1 = 2, b = 0.3), after the build, after writes
# before VACUUM (deleted rows and old row versions still counted) and after
# VACUUM.  Last, on a small table with b = 0, deleted rows count until
# VACUUM and then move every score the way they must.
#
# Skipped, with a notice, when the corpus is not there (GPUIDX_DATA, default
# ~/.cache/gpuidx-data), unless GPUIDX_REQUIRE_CORPUS=1 (scripts/test.sh sets
# it).  The first 100,000 of GCIDE's 203,641 documents keep it near three
# minutes on two cores; GPUIDX_RANK_DOCS=N loads N, 0 all of them (about five).
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use GpxLoad;
use Time::HiRes qw(time);

my ($docs_file, $queries_file) = corpus_files('gcide');
my $reference = dirname(__FILE__) . '/../test/rank_reference.sql';
open(my $fh, '<', $reference) or die "cannot read $reference: $!";
my $reference_sql = do { local $/; <$fh> };
close($fh);

my $node = PostgreSQL::Test::Cluster->new('rank');
$node->init;
$node->append_conf('postgresql.conf', q{
autovacuum = off
shared_buffers = 256MB
maintenance_work_mem = 128MB
work_mem = 32MB
max_parallel_workers_per_gather = 2
max_wal_size = 2GB
jit = off
});
$node->start;

my $t0 = time;
sub elapsed { return sprintf('%.0fs', time - $t0); }
sub sql { return $node->safe_psql('postgres', $_[0]); }

# the corpus: its first 100,000 documents (GPUIDX_RANK_DOCS; 0: all but the
# last 2,000), the ones after them held back for inserts
sql(qq{
	CREATE EXTENSION gpuidx;
	CREATE TABLE src (id int PRIMARY KEY, body text);
	COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	CREATE TABLE qsrc (id int, terms text);
	COPY qsrc FROM '$queries_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
});
my $nsrc = sql('SELECT count(*) FROM src');
my $ndocs = $ENV{GPUIDX_RANK_DOCS} // 100000;
$ndocs = $nsrc - 2000 if $ndocs == 0 || $ndocs > $nsrc - 2000;
sql(qq{
	CREATE TABLE docs (id int PRIMARY KEY, body text,
					   tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED);
	INSERT INTO docs (id, body) SELECT id, body FROM src ORDER BY id LIMIT $ndocs;
});
my $maxid = sql('SELECT max(id) FROM docs');
note("$ndocs documents of gcide loaded (" . elapsed() . ')');

# The queries, deterministic:
#  - one word: words of the query file with one lexeme each, ranked by
#    document frequency, the first of each of 120 equal rank buckets (from
#    the most frequent lexeme down to lexemes in one document);
#  - the query file's own queries (2-4 words) whose id is a multiple of 33;
#  - five or six words: 100 pairs of consecutive queries, the first 5 or 6
#    words of the two;
#  - edge cases: stop words only, empty, unknown words, a repeated word,
#    case and punctuation, the most frequent words together.
sql(q{
	CREATE TABLE lexdf AS SELECT word AS lexeme, ndoc AS df FROM ts_stat('SELECT tsv FROM docs');
	CREATE TABLE qwords AS
	SELECT DISTINCT ON (lexeme) w, lexeme, df
	FROM (SELECT DISTINCT w FROM qsrc, regexp_split_to_table(terms, '\s+') w) a,
		 LATERAL (SELECT (tsvector_to_array(to_tsvector('english', w)))[1] AS lexeme) l JOIN lexdf USING (lexeme)
	WHERE w ~ '^[a-zA-Z]+$' AND length(to_tsvector('english', w)) = 1
	ORDER BY lexeme, w;
	CREATE TABLE qs (qid int PRIMARY KEY, q text, kind text);
	INSERT INTO qs
	SELECT DISTINCT ON (bucket) bucket + 1, w, 'one word'
	FROM (SELECT w, (row_number() OVER (ORDER BY df DESC, lexeme) - 1) * 120 / count(*) OVER () AS bucket,
				 row_number() OVER (ORDER BY df DESC, lexeme) AS r FROM qwords) x
	ORDER BY bucket, r;
	INSERT INTO qs SELECT 1000 + id, terms, 'query file' FROM qsrc WHERE id % 33 = 0;
	INSERT INTO qs
	SELECT 20000 + a.id, array_to_string((regexp_split_to_array(a.terms || ' ' || b.terms, '\s+'))[1:5 + a.id % 2], ' '),
		   'five or six words'
	FROM qsrc a JOIN qsrc b ON b.id = a.id + 1
	WHERE a.id % 29 = 3 AND cardinality(regexp_split_to_array(a.terms || ' ' || b.terms, '\s+')) >= 6
	ORDER BY a.id LIMIT 100;
});
my @f = split /\n/, sql('SELECT w FROM qwords ORDER BY df DESC, lexeme LIMIT 6');
my $rare = sql('SELECT w FROM qwords WHERE df = 1 ORDER BY lexeme LIMIT 1');
my $fu = uc $f[0];
sql(qq{INSERT INTO qs VALUES
	(30001, 'the of and', 'edge'), (30002, '', 'edge'), (30003, 'zzyzx qwertyuiopasdf', 'edge'),
	(30004, '$f[0] zzyzx', 'edge'), (30005, '$f[0] $f[0] $f[0]', 'edge'), (30006, '$fu, $f[0]!', 'edge'),
	(30007, '$f[0] $f[1]', 'edge'), (30008, '@f', 'edge'), (30009, '$rare $f[0]', 'edge');
	ANALYZE;
});
# ord: the queries' order, for taking every n-th (the qids of each kind follow patterns)
sql('ALTER TABLE qs ADD ord int; UPDATE qs SET ord = r FROM (SELECT qid, row_number() OVER (ORDER BY qid) r FROM qs) x
	 WHERE x.qid = qs.qid');
my $nq = sql('SELECT count(*) FROM qs');
my $shapes = sql(q{
	SELECT string_agg(kind || ' ' || n, ', ' ORDER BY min) FROM (SELECT kind, count(*) n, min(qid) FROM qs GROUP BY kind) x});
my $lexemes = sql(q{
	SELECT string_agg(n || ':' || c, ' ' ORDER BY n) FROM (
		SELECT n, count(*) c FROM (SELECT length(to_tsvector('english', q)) n FROM qs) x GROUP BY n) y});
my $classes = sql(qq{
	SELECT count(*) FILTER (WHERE mx >= $ndocs / 100) || ' with a lexeme in >= 1% of the documents, '
		|| count(*) FILTER (WHERE mx < 100) || ' with every lexeme in < 100'
	FROM (SELECT qid, max(df) mx FROM qs, unnest(tsvector_to_array(to_tsvector('english', q))) l
		  JOIN lexdf ON lexeme = l GROUP BY qid) x});
cmp_ok($nq, '>=', 500, "$nq queries ($shapes; lexemes:queries $lexemes; $classes)");

sql(q{
	CREATE INDEX docs_gpx ON docs USING gpuidx (body) WITH (pending_list_limit = 64);
	CREATE INDEX docs_tsv_gpx ON docs USING gpuidx (tsv) WITH (k1 = 2.0, b = 0.3);
	ANALYZE docs;
});
note('indexes built (' . elapsed() . ')');

# the reference, keeping the terms of the queries' lexemes
sql("\\set bm25_ref_only 1\n$reference_sql");
my $all_lexemes = q{ARRAY(SELECT DISTINCT l FROM qs, unnest(tsvector_to_array(to_tsvector('english', q))) l)};
sql("SELECT bm25_ref.prepare('docs', 'tsv', 'english', $all_lexemes)");
note('reference prepared (' . elapsed() . ')');

# what is wrong with one answer of ORDER BY doc <=> q LIMIT k, as a list of
# 'kind: detail': the answer's rows (tids), -(doc <=> q) (s) and
# gpuidx_bm25(doc, q) (f), best first; row_ref, the reference's score of
# each of those rows (NULL: a row the query may not return); the
# reference's first k + 1 rows and scores and, for those the answer left
# out, their gpuidx_bm25 (ref_f); eligible: the rows the query may return
sql(q{
CREATE FUNCTION rank_compare(k int, eligible bigint, tids tid[], s float8[], f float8[], row_ref float8[],
							 ref_tids tid[], ref_scores float8[], ref_f float8[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	tol constant float8 := 1e-9;
	n int := coalesce(cardinality(tids), 0);
	m int := coalesce(cardinality(ref_tids), 0);
	p text[] := '{}';
BEGIN
	IF n <> least(k, eligible) THEN
		p := p || format('count: %s rows, %s expected', n, least(k, eligible));
	END IF;
	FOR i IN 1 .. n LOOP
		IF (s[i] = f[i]) IS NOT TRUE THEN
			p := p || format('exact: row %s %s: -(doc <=> q) %s, gpuidx_bm25 %s', i, tids[i], s[i], f[i]);
			EXIT;
		END IF;
	END LOOP;
	FOR i IN 1 .. n - 1 LOOP
		IF (f[i] > f[i + 1] OR (f[i] = f[i + 1] AND tids[i] < tids[i + 1])) IS NOT TRUE THEN
			p := p || format('order: row %s %s (%s) before row %s %s (%s)', i, tids[i], f[i], i + 1, tids[i + 1], f[i + 1]);
			EXIT;
		END IF;
	END LOOP;
	FOR i IN 1 .. least(n, m) LOOP
		IF (abs(s[i] - ref_scores[i]) <= tol * abs(ref_scores[i])) IS NOT TRUE THEN
			p := p || format('score: row %s %s, the reference''s row %s %s', i, s[i], i, ref_scores[i]);
			EXIT;
		END IF;
	END LOOP;
	FOR i IN 1 .. n LOOP
		IF row_ref[i] IS NULL THEN
			p := p || format('row: %s (row %s) is not a row this query may return', tids[i], i);
			EXIT;
		ELSIF (abs(s[i] - row_ref[i]) <= tol * abs(row_ref[i])) IS NOT TRUE THEN
			p := p || format('row score: %s (row %s) %s, the reference %s', tids[i], i, s[i], row_ref[i]);
			EXIT;
		END IF;
	END LOOP;
	-- a reference row left out must be tied, within the tolerance, with the reference's row k + 1
	FOR i IN 1 .. least(k, m) LOOP
		CONTINUE WHEN ref_tids[i] = ANY (tids);
		IF m <= k OR (ref_scores[i] - ref_scores[k + 1] <= tol * abs(ref_scores[k + 1])) IS NOT TRUE THEN
			p := p || format('missing: %s, the reference''s row %s (%s)', ref_tids[i], i, ref_scores[i]);
			EXIT;
		END IF;
	END LOOP;
	-- and, by gpuidx_bm25's own scores, rank after the answer's last row
	FOR i IN 1 .. CASE WHEN n > 0 THEN m ELSE 0 END LOOP
		CONTINUE WHEN ref_tids[i] = ANY (tids);
		IF (ref_f[i] < f[n] OR (ref_f[i] = f[n] AND ref_tids[i] > tids[n])) IS NOT TRUE THEN
			p := p || format('boundary: %s (gpuidx_bm25 %s) left out ranks before the last row %s (%s)',
							 ref_tids[i], ref_f[i], tids[n], f[n]);
			EXIT;
		END IF;
	END LOOP;
	RETURN p;
END $$;

CREATE TABLE rank_problems (round text, col text, qid int, mode text, k int, problem text);
CREATE TABLE rank_checked (round text, col text, qid int, mode text, k int, nrows int, seq bool);
CREATE UNLOGGED TABLE ref_q (tid tid PRIMARY KEY, score float8, terms int);

-- every query of qs that qfilter selects, on column col (its index has k1
-- and b), in both modes at k = 100, 10, 1; the sequential scan too for the
-- queries in seq_qids; problems into rank_problems
CREATE FUNCTION rank_check(round text, col text, k1 float8, b float8, seq_qids int[], qfilter text DEFAULT 'true')
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	idx text := CASE col WHEN 'body' THEN 'docs_gpx' ELSE 'docs_tsv_gpx' END;
	nlive bigint := (SELECT count(*) FROM bm25_ref.doc d WHERE d.live);
	answer constant text := 'SELECT coalesce(array_agg(ctid), ''{}''), coalesce(array_agg(-d), ''{}''), coalesce(array_agg(f), ''{}'')
		FROM (SELECT ctid, %1$I <=> $1 AS d, gpuidx_bm25(%1$I, $1) AS f FROM docs %2$s ORDER BY %1$I <=> $1 LIMIT %3$s) x';
	r record;
	mode text;
	k int;
	cond text;
	nlex int;
	eligible bigint;
	tids tid[];
	s float8[];
	f float8[];
	t100 tid[];
	row_ref float8[];
	all_tids tid[];
	all_scores float8[];
	ref_tids tid[];
	ref_f float8[];
	seq_tids tid[];
	seq_s float8[];
	plan text;
	line text;
	p text[];
BEGIN
	FOR r IN EXECUTE format('SELECT qid, q FROM qs WHERE %s ORDER BY qid', qfilter) LOOP
		BEGIN
			nlex := cardinality(bm25_ref.query_lexemes(r.q));
			TRUNCATE ref_q;
			INSERT INTO ref_q SELECT * FROM bm25_ref.scores(r.q, k1, b);
			FOREACH mode IN ARRAY ARRAY['any', 'every'] LOOP
				cond := CASE mode WHEN 'any' THEN '' ELSE format('WHERE %I @@& $1', col) END;
				eligible := CASE mode WHEN 'any' THEN nlive
							ELSE (SELECT count(*) FROM ref_q WHERE terms = nlex AND nlex > 0) END;
				-- the reference's first 101: matches best first, then (any term) the other live rows at 0
				SELECT coalesce(array_agg(x.tid ORDER BY x.score DESC, x.tid), '{}'),
					   coalesce(array_agg(x.score ORDER BY x.score DESC, x.tid), '{}')
				INTO all_tids, all_scores
				FROM (SELECT q.tid, q.score FROM ref_q q WHERE mode = 'any' OR (q.terms = nlex AND nlex > 0)
					  ORDER BY q.score DESC, q.tid LIMIT 101) x;
				IF mode = 'any' AND cardinality(all_tids) < 101 THEN
					all_tids := all_tids || ARRAY(SELECT d.tid FROM bm25_ref.doc d
												  WHERE d.live AND d.tid <> ALL (all_tids) ORDER BY d.tid LIMIT 101);
					all_scores := all_scores || array_fill(0::float8, ARRAY[cardinality(all_tids) - cardinality(all_scores)]);
				END IF;
				-- the index's plan: its ordered scan (run by the rank custom scan), no sort
				PERFORM set_config('enable_seqscan', 'off', true);
				PERFORM set_config('enable_sort', 'off', true);
				plan := '';
				FOR line IN EXECUTE format('EXPLAIN SELECT ctid FROM docs %s ORDER BY %I <=> $1 LIMIT 100', cond, col) USING r.q LOOP
					plan := plan || line || E'\n';
				END LOOP;
				IF plan !~ ('Custom Scan \(gpuidx rank\) on docs.*\n\s+Index: ' || idx || '\n') OR plan !~ 'Order By: ' OR plan ~ 'Sort' THEN
					INSERT INTO rank_problems VALUES (round, col, r.qid, mode, NULL, 'plan: ' || plan);
				END IF;
				FOREACH k IN ARRAY ARRAY[100, 10, 1] LOOP
					EXECUTE format(answer, col, cond, k) INTO tids, s, f USING r.q;
					IF k = 100 THEN
						t100 := tids;
					END IF;
					ref_tids := all_tids[1:k + 1];
					SELECT array_agg(CASE WHEN q.tid IS NOT NULL AND (mode = 'any' OR q.terms = nlex) THEN q.score
										  WHEN mode = 'any' AND d.live THEN 0 END ORDER BY u.i)
					INTO row_ref
					FROM unnest(tids) WITH ORDINALITY u(tid, i) LEFT JOIN ref_q q ON q.tid = u.tid
					LEFT JOIN bm25_ref.doc d ON d.tid = u.tid;
					EXECUTE format('SELECT array_agg((SELECT gpuidx_bm25(%I, $1) FROM docs WHERE ctid = u.tid AND u.tid <> ALL ($3))
												ORDER BY u.i) FROM unnest($2) WITH ORDINALITY u(tid, i)', col)
					INTO ref_f USING r.q, ref_tids, tids;
					p := rank_compare(k, eligible, tids, s, f, row_ref, ref_tids, all_scores[1:k + 1], ref_f);
					IF tids IS DISTINCT FROM t100[1:k] THEN
						p := p || format('prefix: LIMIT %s is not the first rows of LIMIT 100', k);
					END IF;
					IF k = 100 AND r.qid = ANY (seq_qids) THEN
						-- the same operator row by row, sorted: the same rows, order and scores
						PERFORM set_config('enable_seqscan', 'on', true);
						PERFORM set_config('enable_sort', 'on', true);
						PERFORM set_config('enable_indexscan', 'off', true);
						PERFORM set_config('enable_bitmapscan', 'off', true);
						PERFORM set_config('gpuidx.enable_customscan', 'off', true);
						plan := '';
						FOR line IN EXECUTE format('EXPLAIN SELECT ctid FROM docs %s ORDER BY %I <=> $1, ctid LIMIT 100', cond, col)
									USING r.q LOOP
							plan := plan || line || E'\n';
						END LOOP;
						IF plan !~ 'Seq Scan on docs' OR plan !~ 'Sort' OR plan ~ '(Index|Bitmap Heap|Custom) Scan' THEN
							p := p || ('seq plan: ' || plan);
						END IF;
						EXECUTE format('SELECT coalesce(array_agg(ctid), ''{}''), coalesce(array_agg(-d), ''{}'')
							FROM (SELECT ctid, %1$I <=> $1 AS d FROM docs %2$s ORDER BY %1$I <=> $1, ctid LIMIT 100) x', col, cond)
						INTO seq_tids, seq_s USING r.q;
						IF seq_tids IS DISTINCT FROM tids OR seq_s IS DISTINCT FROM s THEN
							p := p || format('seq: the sequential scan''s %s rows differ from the index''s %s, first at row %s',
								cardinality(seq_tids), cardinality(tids),
								(SELECT min(i) FROM generate_series(1, greatest(cardinality(seq_tids), cardinality(tids))) i
								 WHERE seq_tids[i] IS DISTINCT FROM tids[i] OR seq_s[i] IS DISTINCT FROM s[i]));
						END IF;
						PERFORM set_config('enable_indexscan', 'on', true);
						PERFORM set_config('enable_bitmapscan', 'on', true);
						PERFORM set_config('gpuidx.enable_customscan', 'on', true);
						PERFORM set_config('enable_seqscan', 'off', true);
						PERFORM set_config('enable_sort', 'off', true);
					END IF;
					INSERT INTO rank_problems SELECT round, col, r.qid, mode, k, unnest(p);
					INSERT INTO rank_checked VALUES (round, col, r.qid, mode, k, cardinality(tids), k = 100 AND r.qid = ANY (seq_qids));
				END LOOP;
				PERFORM set_config('enable_seqscan', 'on', true);
				PERFORM set_config('enable_sort', 'on', true);
			END LOOP;
		EXCEPTION WHEN OTHERS THEN
			INSERT INTO rank_problems VALUES (round, col, r.qid, mode, k, 'error: ' || SQLERRM);
		END;
	END LOOP;
END $$;
});

# the comparison itself can fail, one kind of problem at a time
my $ok_args = q{3, 5, '{"(0,1)","(0,2)","(0,3)"}', '{3,2,1}', '{3,2,1}', '{3,2,1}',
	'{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,NULL,0.5}'};
is(sql("SELECT rank_compare($ok_args)"), '{}', 'rank_compare: a right answer has no problem');
for my $case (
	[ 'count', q{3, 5, '{"(0,1)","(0,2)"}', '{3,2}', '{3,2}', '{3,2}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,1,0.5}'} ],
	[ 'exact', q{3, 5, '{"(0,1)","(0,2)","(0,3)"}', '{3,2,1}', '{3,2.0000000000000004,1}', '{3,2,1}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,NULL,0.5}'} ],
	[ 'order', q{3, 5, '{"(0,2)","(0,1)","(0,3)"}', '{2,3,1}', '{2,3,1}', '{2,3,1}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,NULL,0.5}'} ],
	[ 'order', q{2, 5, '{"(0,2)","(0,1)"}', '{3,3}', '{3,3}', '{3,3}', '{"(0,1)","(0,2)","(0,3)"}', '{3,3,1}', '{NULL,NULL,1}'} ],
	[ 'score', q{3, 5, '{"(0,1)","(0,2)","(0,3)"}', '{3,2,1.000001}', '{3,2,1.000001}', '{3,2,1.000001}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,NULL,0.5}'} ],
	[ 'row', q{3, 5, '{"(0,1)","(0,2)","(0,9)"}', '{3,2,1}', '{3,2,1}', '{3,2,NULL}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,1,0.5}'} ],
	[ 'row score', q{3, 5, '{"(0,1)","(0,2)","(0,3)"}', '{3,2,1}', '{3,2,1}', '{3,2,0.9}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,NULL,0.5}'} ],
	[ 'missing', q{3, 5, '{"(0,1)","(0,2)","(0,4)"}', '{3,2,1}', '{3,2,1}', '{3,2,1}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,0.5}', '{NULL,NULL,0.9,NULL}'} ],
	[ 'boundary', q{3, 5, '{"(0,1)","(0,2)","(0,4)"}', '{3,2,1}', '{3,2,1}', '{3,2,1}', '{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1,1}', '{NULL,NULL,1,NULL}'} ])
{
	my ($kind, $args) = @$case;
	like(sql("SELECT array_to_string(rank_compare($args), ' | ')"), qr/(^| \| )\Q$kind\E:/,
		"rank_compare finds a wrong answer: $kind");
}
is(sql(q{SELECT rank_compare(3, 5, '{"(0,1)","(0,2)","(0,4)"}', '{3,2,1}', '{3,2,1}', '{3,2,1}',
	'{"(0,1)","(0,2)","(0,3)","(0,4)"}', '{3,2,1.0000000000001,1}', '{NULL,NULL,0.9,NULL}')}),
	'{}', 'rank_compare: a row tied with the next within the tolerance may stand in for it');

# the plans meant, under the default settings
like(sql("EXPLAIN SELECT id FROM docs ORDER BY body <=> '$f[0] $f[1]' LIMIT 10"),
	qr/Custom Scan \(gpuidx rank\) on docs.*\n\s+Index: docs_gpx\n(.*\n)*\s+Order By: \(body <=> /,
	'ORDER BY body <=> q LIMIT 10 is the index\'s ordered scan, in the rank custom scan');
like(sql("EXPLAIN SELECT id FROM docs ORDER BY tsv <=> '$f[0] $f[1]' LIMIT 10"),
	qr/Custom Scan \(gpuidx rank\) on docs.*\n\s+Index: docs_tsv_gpx/, 'and on the tsvector column, its index');
like(sql("SET gpuidx.enable_customscan = off; EXPLAIN SELECT id FROM docs ORDER BY body <=> '$f[0] $f[1]' LIMIT 10"),
	qr/Index Scan using docs_gpx on docs/, 'with the custom scan off, the index scan itself');
unlike(sql("EXPLAIN SELECT id FROM docs ORDER BY body <=> '$f[0] $f[1]' LIMIT 10"), qr/Sort/, 'with no sort');

# Rounds: after the build every query on the text column; after the writes
# half of them before VACUUM and the other half after.  The sequential scans
# of the text column tokenize every row: one query (the query file's first
# with a lexeme in >= 1% of the documents, among those checked before VACUUM),
# after the build and before VACUUM.  The tsvector
# column checks a third of the queries a round (all of them over the three
# rounds), a tenth of those against its sequential scan.
my $seq_body = sql(qq{
	SELECT min(qid) FROM qs, unnest(tsvector_to_array(to_tsvector('english', q))) l JOIN lexdf ON lexeme = l
	WHERE kind = 'query file' AND df >= $ndocs / 100 AND ord % 2 = 0});

my @summary;
sub check_round
{
	my ($round, $body_queries, $body_seq, $tsv_queries) = @_;
	for my $c ([ 'body', 1.2, 0.75, $body_queries, $body_seq ],
		[ 'tsv', 2.0, 0.3, $tsv_queries, "ARRAY(SELECT qid FROM qs WHERE $tsv_queries AND ord % 30 < 3)" ])
	{
		my ($col, $k1, $b, $queries, $seq) = @$c;
		sql("SELECT rank_check('$round', '$col', $k1, $b, $seq, '$queries')");
		my ($nq, $answers, $rows, $seqs) = split /\|/, sql(qq{
			SELECT count(DISTINCT qid), count(*), sum(nrows), count(*) FILTER (WHERE seq)
			FROM rank_checked WHERE round = '$round' AND col = '$col'});
		my $bad = sql("SELECT count(*) FROM rank_problems WHERE round = '$round' AND col = '$col'");
		my $what = "$round: $col <=> q: $nq queries, both modes, k = 1, 10, 100: $answers answers, $rows rows, "
		  . "$seqs against the sequential scan";
		is($bad, '0', "$what (" . elapsed() . ')') or diag(sql(qq{
			SELECT string_agg(format('qid %s (%s) %s k=%s: %s', p.qid, qs.q, p.mode, p.k, p.problem), E'\n')
			FROM (SELECT * FROM rank_problems WHERE round = '$round' AND col = '$col' ORDER BY qid, mode, k LIMIT 20) p
			JOIN qs USING (qid)}));
		push @summary, "$round, $col: $nq queries, $answers answers, $rows rows, $seqs sequential, $bad problems";
	}
}

check_round('after the build', 'true', "'{$seq_body}'", 'ord % 3 = 0');

# a reference with another k1 must be caught: the check is not blind
sql(q{SELECT rank_check('control', 'body', 1.25, 0.75, '{}', 'qid IN (1, 2, 3, 1033, 1066)')});
like(sql(q{SELECT string_agg(DISTINCT split_part(problem, ':', 1), ',') FROM rank_problems WHERE round = 'control'}),
	qr/score/, 'the check against a reference with k1 = 1.25 instead of 1.2 finds score problems');

# Writes: new documents, copies (exact ties with their originals, broken by
# heap order), edge documents (NULL, empty, stop words only, a lexeme past
# 255 positions, words past position 16383), updates (one to NULL, one from
# NULL), deletes.  The reference sees each statement that adds rows, as the
# index does: a row added and then removed before VACUUM still counts.
my @write_errors;
for my $write (
	"INSERT INTO docs (id, body) SELECT id, body FROM src WHERE id > $maxid ORDER BY id LIMIT 300",
	'INSERT INTO docs (id, body) SELECT 1000000 + id, body FROM docs WHERE id % 2011 = 7',
	qq{INSERT INTO docs (id, body) VALUES (2000001, NULL), (2000002, ''), (2000003, 'the of and a to'),
		(2000004, repeat('$f[0] ', 300)), (2000005, repeat('$f[1] $f[2] ', 10000) || '$f[0] $f[0]'), (2000006, '@f')},
	"UPDATE docs SET body = body || ' ' || (SELECT s.body FROM src s WHERE s.id = 1 + (docs.id * 7919) % $nsrc)
	 WHERE id % 997 = 3",
	'UPDATE docs SET body = NULL WHERE id = 11',
	qq{UPDATE docs SET body = 'once NULL: $f[0]' WHERE id = 2000001},
	'DELETE FROM docs WHERE id % 673 = 5 OR (id > 1000000 AND id < 2000000 AND id % 3 = 0)')
{
	my ($rc, $out, $err) = $node->psql('postgres', $write, on_error_stop => 1);
	push @write_errors, "$write: $err" if $rc != 0;
	sql('SELECT bm25_ref.sync()');
}
is(scalar(@write_errors), 0, 'the writes succeed') or diag(join("\n", @write_errors));
my $ref_n = sql('SELECT n FROM bm25_ref.stats()');
my $live = sql('SELECT count(*) FROM docs WHERE body IS NOT NULL');
cmp_ok($ref_n, '>', $live, "after the writes, before VACUUM, the reference counts $ref_n documents, $live of them live");
check_round('after writes, before VACUUM', 'ord % 2 = 0', "'{$seq_body}'", 'ord % 3 = 1');

# the same rows' scores before and after VACUUM: every one moves, the way the reference's does
sql(q{
	CREATE TABLE drift AS
	SELECT qs.qid, d.ctid AS tid, gpuidx_bm25(d.body, qs.q) AS f, r.score AS ref
	FROM qs, LATERAL bm25_ref.top(qs.q, 5, true) r JOIN docs d ON d.ctid = r.tid WHERE qs.ord % 20 = 0;
	VACUUM docs;
});
sql("SELECT bm25_ref.prepare('docs', 'tsv', 'english', $all_lexemes)");
my ($drift, $same, $against) = split /\|/, sql(q{
	WITH r AS (SELECT qs.qid, s.tid, s.score FROM qs, bm25_ref.scores(qs.q) s WHERE qs.qid IN (SELECT qid FROM drift))
	SELECT count(*), count(*) FILTER (WHERE n.f = x.f), count(*) FILTER (WHERE sign(n.f - x.f) <> sign(r.score - x.ref))
	FROM drift x JOIN qs USING (qid) JOIN docs d ON d.ctid = x.tid JOIN r ON r.qid = x.qid AND r.tid = x.tid,
	LATERAL (SELECT gpuidx_bm25(d.body, qs.q) AS f) n});
cmp_ok($drift, '>', 50, "$drift scores of the same rows before and after VACUUM");
is($same, '0', 'VACUUM changes every one of them (the deleted rows no longer count)');
is($against, '0', 'each in the direction of the reference\'s');
check_round('after VACUUM', 'ord % 2 = 1', q{'{}'}, 'ord % 3 = 2');

like(sql("SELECT gpuidx_verify('docs_tsv_gpx')"), qr/is sound/, 'gpuidx_verify: the tsvector index matches the table');

# Deleted rows count until VACUUM, on 5,000 documents with b = 0, where a
# score is idf(t) * tf * (k1 + 1) / (tf + k1): a term's score falls when
# documents without it go (N falls, df stays) and rises when documents with
# it go (N and df fall alike).  The term: a query word in about 200 of them.
sql(q{
	CREATE TABLE dtab (id int PRIMARY KEY, body text);
	INSERT INTO dtab SELECT id, body FROM src ORDER BY id LIMIT 5000;
	CREATE INDEX dtab_gpx ON dtab USING gpuidx (body) WITH (b = 0);
	ANALYZE dtab;
});
my $w = sql(q{
	SELECT w FROM qwords, LATERAL (SELECT count(*) n FROM dtab WHERE body @@& w) c
	WHERE df BETWEEN 1000 AND 20000 ORDER BY abs(n - 200), w LIMIT 1});
my $dscores = qq{SELECT id, ctid AS tid, -(body <=> '$w') AS s FROM dtab WHERE body @@& '$w' ORDER BY body <=> '$w' LIMIT 1000};
sub against_reference
{
	return sql(qq{SELECT count(*) FROM ($dscores) i FULL JOIN bm25_ref.scores('$w', 1.2, 0) r USING (tid)
		WHERE i.tid IS NULL OR r.tid IS NULL OR abs(i.s - r.score) > 1e-9 * r.score});
}
sql("SELECT bm25_ref.prepare('dtab', 'body')");
sql("CREATE TABLE dscores AS $dscores");
is(against_reference(), '0',
	"b = 0, '$w' in " . sql('SELECT count(*) FROM dscores') . ' of 5,000 documents: scores = the reference');
for my $phase ([ 'without', "NOT body @@& '$w'", '<', 'lower' ], [ 'with', "body @@& '$w'", '>', 'higher' ])
{
	my ($which, $cond, $op, $way) = @$phase;
	sql("DELETE FROM dtab WHERE id % 3 = 0 AND $cond");
	sql('SELECT bm25_ref.sync()');
	is(sql("SELECT count(*) FROM ($dscores) i LEFT JOIN dscores d USING (id) WHERE d.s IS DISTINCT FROM i.s"), '0',
		"documents $which the term deleted, before VACUUM: every score unchanged");
	is(against_reference(), '0', 'and = the reference that counts the deleted rows');
	sql('VACUUM dtab');
	sql("SELECT bm25_ref.prepare('dtab', 'body')");
	my ($n, $bad) = split /\|/, sql("SELECT count(*), count(*) FILTER (WHERE NOT i.s $op d.s) FROM ($dscores) i JOIN dscores d USING (id)");
	cmp_ok($n, '>', 50, "after VACUUM, $n scores of the same rows");
	is($bad, '0', "every one $way");
	is(against_reference(), '0', 'and = the reference without the deleted rows');
	sql("DROP TABLE dscores; CREATE TABLE dscores AS $dscores");
}

diag("rank equivalence summary:\n  " . join("\n  ", @summary) . "\n  total " . elapsed());
$node->stop;
done_testing();
