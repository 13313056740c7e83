# An application written for GIN runs unchanged on gpuidx: on GCIDE's
# dictionary entries and 2,760 text-search queries of every shape
# (t/GpxTsquery.pm: AND, OR and NOT up to depth 3, lone !a and !a | b,
# prefixes, phrases a <-> b and a <N> b, NOT inside phrases, weights, stop
# words, and what plainto_tsquery, phraseto_tsquery and websearch_to_tsquery
# make of search-box strings), a gpuidx index answers doc @@ query with the
# same rows as @@ evaluated row by row with no index, and as GIN on a copy of
# the table.  Two tables: text with an expression index on
# to_tsvector('english', body) (every 36th entry), and a stored tsvector
# whose first words weigh A and B (every 12th), its index built with
# positions (it settles phrases and weights itself); each queried as an
# application would, to_tsvector('english', body) @@ to_tsquery('english',
# '...'): with the index forced (its bitmap scan, which EXPLAIN shows for
# every shape), with its custom scan (rows, count(*) alone, LIMIT, and every
# row under a LIMIT, which evaluates the tree over windows of docs), under
# default settings, in parallel plans, and as a prepared statement's generic
# plan.  Rows with no document (NULL) and with no lexeme, and three long
# ones.  After the build, with inserts still in the pending area, after
# updates and deletes, after VACUUM, after inserts that merge as they go;
# query @@ doc and doc @@@ query on a sample; and a sample through the GPU
# worker (the CPU engine where there is no GPU).  About two minutes on two
# cores.
#
# Skipped, with a notice, when the corpus is not there (GPUIDX_DATA, default
# ~/.cache/gpuidx-data), unless GPUIDX_REQUIRE_CORPUS=1 (scripts/test.sh sets
# it).  GPUIDX_TSQ_METHOD=gin puts GIN where gpuidx is, to check the test.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use GpxLoad;
use GpxTsquery;
use Time::HiRes qw(time);

my ($docs_file, $queries_file) = corpus_files('gcide');
my $method = $ENV{GPUIDX_TSQ_METHOD} // 'gpuidx';
my $gpuidx = $method eq 'gpuidx';

my $node = PostgreSQL::Test::Cluster->new('tsquery');
$node->init;
$node->append_conf('postgresql.conf', q{
autovacuum = off
shared_buffers = 256MB
maintenance_work_mem = 128MB
work_mem = 64MB
max_parallel_workers_per_gather = 2
max_wal_size = 2GB
jit = off
client_min_messages = warning
});
$node->start;

my $t0 = time;
sub elapsed { return sprintf('%.0fs', time - $t0); }
sub sql { return $node->safe_psql('postgres', $_[0]); }

# the tables: text with an expression index on every 36th entry, and a
# stored tsvector, whose first 3 words weigh A and the next 9 B, on every
# 12th; each with a GIN copy.  Per configuration, which queries run: every
# Nth (the text table's executor computes to_tsvector for each row it
# rechecks, which NOT over a phrase asks of nearly every row)
my %tables = (
	dt => { every => 36, doc => q{to_tsvector('english', body)} },
	dv => { every => 12, doc => 'v' });
sql(qq{
	@{[ $gpuidx ? 'CREATE EXTENSION gpuidx;' : '' ]}
	CREATE TABLE src (id int PRIMARY KEY, body text);
	COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	CREATE FUNCTION weighted(body text) RETURNS tsvector LANGUAGE sql IMMUTABLE AS \$\$
		SELECT setweight(to_tsvector('english', array_to_string(w[1:3], ' ')), 'A')
			|| setweight(to_tsvector('english', array_to_string(w[4:12], ' ')), 'B')
			|| to_tsvector('english', array_to_string(w[13:], ' '))
		FROM regexp_split_to_array(body, '\\s+') w \$\$;
	CREATE TABLE dt (id int PRIMARY KEY, body text);
	CREATE TABLE dv (id int PRIMARY KEY, body text, v tsvector GENERATED ALWAYS AS (weighted(body)) STORED);
	INSERT INTO dt SELECT id, body FROM src WHERE id % $tables{dt}{every} = 0;
	INSERT INTO dv SELECT id, body FROM src WHERE id % $tables{dv}{every} = 0;
	-- no document (NULL: never a match) and empty ones (no lexeme: !a matches)
	INSERT INTO dt VALUES (-1, NULL), (-2, ''), (-3, 'the of and a'), (-4, NULL), (-5, '--');
	INSERT INTO dv (id, body) SELECT id, body FROM dt WHERE id < 0;
	-- long ones, of 300 entries each, in the tsvector table (the text table
	-- would compute to_tsvector of each for every recheck): positions past
	-- the last a tsvector keeps (16383), more than 256 of one lexeme
	INSERT INTO dv (id, body) SELECT -20 - g, (SELECT string_agg(body, ' ' ORDER BY id) FROM src WHERE id % 677 = g)
	FROM generate_series(1, 3) g;
	CREATE TABLE dt_gin (LIKE dt INCLUDING ALL);
	CREATE TABLE dv_gin (LIKE dv INCLUDING ALL);
	INSERT INTO dt_gin SELECT * FROM dt;
	INSERT INTO dv_gin (id, body) SELECT id, body FROM dv;
	CREATE INDEX dt_gin_idx ON dt_gin USING gin (to_tsvector('english', body));
	CREATE INDEX dv_gin_idx ON dv_gin USING gin (v);
});
my %ndocs = map { $_ => sql("SELECT count(*) FROM $_") } keys %tables;
cmp_ok($ndocs{dt}, '>=', 5000, "$ndocs{dt} documents of GCIDE in the text table, $ndocs{dv} in the tsvector one ("
	. elapsed() . ')');

# the queries: from the corpus's queries and the text table's documents;
# and which of their words are stop words
my @queries;
open(my $qf, '<', $queries_file) or die "cannot read $queries_file: $!";
while (my $line = <$qf>)
{
	chomp $line;
	my (undef, $terms) = split /\t/, $line, 2;
	push @queries, [ grep { /^[a-z]{3,}$/ } split / /, lc($terms // '') ];
}
close($qf);
my @texts = split /\n/, sql(q{SELECT regexp_replace(body, '\s+', ' ', 'g') FROM dt WHERE id % 72 = 0 ORDER BY id});
my %words;
for my $w (map { @$_ } @queries) { $words{$w} = 1; }
for my $t (@texts) { for my $w (split / /, lc $t) { $words{$w} = 1 if $w =~ /^[a-z]+$/; } }
sql("CREATE TABLE words (w text);\nCOPY words FROM STDIN;\n" . join("\n", sort keys %words) . "\n\\.\n");
my %usable = map { $_ => 1 } split /\n/, sql(q{SELECT w FROM words WHERE to_tsvector('english', w) <> ''});

my $gen = generate_tsqueries(20261126, \@queries, \@texts, \%usable);
sql("CREATE TABLE qs (qid int PRIMARY KEY, shape text, fn text, src text, q tsquery) WITH (parallel_workers = 0);\n"
	. "COPY qs (qid, shape, fn, src) FROM STDIN;\n"
	. join('', map { join("\t", $_ + 1, @{ $gen->[$_] }) . "\n" } 0 .. $#$gen) . "\\.\n");
sql(q{
	UPDATE qs SET q = CASE fn WHEN 'to_tsquery' THEN to_tsquery('english', src)
		WHEN 'plainto_tsquery' THEN plainto_tsquery('english', src)
		WHEN 'phraseto_tsquery' THEN phraseto_tsquery('english', src)
		WHEN 'websearch_to_tsquery' THEN websearch_to_tsquery('english', src) END;
});
my $nq = sql('SELECT count(*) FROM qs');
cmp_ok($nq, '>=', 2000, "$nq queries generated (" . elapsed() . ')');
is(sql(q{SELECT count(*) FROM qs WHERE q IS NULL}), '0', 'each made into a tsquery by its function');

# the tsvector table's index stores positions: it settles phrases and
# weights itself, the text table's checks them on the rows
my $with = $gpuidx ? 'WITH (pending_list_limit = 262144)' : '';
my $with_positions = $gpuidx ? 'WITH (pending_list_limit = 262144, positions = on)' : '';
sql(qq{
	CREATE INDEX dt_idx ON dt USING $method (to_tsvector('english', body)) $with;
	CREATE INDEX dv_idx ON dv USING $method (v) $with_positions;
	ANALYZE;
});
note("indexes built (" . elapsed() . ')');

# the reference: @@ row by row (no index), every document against every
# query, kept per query as the count of rows and the sum of a hash of their
# ids; after writes, the documents written (touched) are taken out before
# and added back after
sql(q{
	CREATE TABLE touched (id int);
	CREATE TABLE ref (tbl text, qid int, n bigint, s numeric, PRIMARY KEY (tbl, qid));
	INSERT INTO ref SELECT t, qid, 0, 0 FROM qs, unnest(ARRAY['dt', 'dv']) t;
	CREATE FUNCTION ref_apply(tbl text, doc text, sign int) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		DROP TABLE IF EXISTS ref_docs;
		EXECUTE format('CREATE UNLOGGED TABLE ref_docs AS SELECT id, %s AS v FROM %I WHERE id IN (SELECT id FROM touched)', doc, tbl);
		ANALYZE ref_docs;
		SET LOCAL enable_indexscan = off;
		SET LOCAL enable_bitmapscan = off;
		SET LOCAL gpuidx.enable_customscan = off;
		SET LOCAL parallel_setup_cost = 0;
		SET LOCAL parallel_tuple_cost = 0;
		SET LOCAL min_parallel_table_scan_size = 0;
		UPDATE ref r SET n = r.n + sign * x.n, s = r.s + sign * x.s
		FROM (SELECT qs.qid, count(*) n, sum(hashint4extended(d.id, 0)::numeric) s
			  FROM ref_docs d JOIN qs ON d.v @@ qs.q GROUP BY qs.qid) x
		WHERE r.tbl = ref_apply.tbl AND r.qid = x.qid;
	END $$;
	-- how: forced (the index's bitmap scan), custom (the gpuidx custom scan
	-- where it takes the query, the bitmap scan off), default (the planner's
	-- choice), commuted (query @@ doc, forced), triple (doc @@@ query, forced),
	-- generic (a prepared statement's generic plan, the tsquery a parameter),
	-- parallel (parallel plans made cheap, the sequential scan off), count
	-- (count(*) alone, counted in the custom scan: n only), limit (LIMIT 3
	-- through the custom scan: n the rows, s those of them @@ rejects),
	-- windows (every row through the custom scan under a LIMIT it never
	-- reaches: the tree evaluated over windows of 97 docs, then 388, ...);
	-- limit's windows are as small
	CREATE FUNCTION answers(tbl text, doc text, how text, every int) RETURNS TABLE (qid int, n bigint, s numeric) LANGUAGE plpgsql AS $$
	DECLARE r record; pred text;
	BEGIN
		IF how = 'generic' THEN
			SET LOCAL plan_cache_mode = force_generic_plan;
			FOR r IN SELECT * FROM qs WHERE qs.qid % every = 0 ORDER BY qs.qid LOOP
				qid := r.qid;
				IF tbl = 'dv' THEN
					SELECT count(*), coalesce(sum(hashint4extended(d.id, 0)::numeric), 0) INTO n, s FROM dv d WHERE d.v @@ r.q;
				ELSE
					SELECT count(*), coalesce(sum(hashint4extended(d.id, 0)::numeric), 0) INTO n, s FROM dt d
					WHERE to_tsvector('english', d.body) @@ r.q;
				END IF;
				RETURN NEXT;
			END LOOP;
			RETURN;
		END IF;
		IF how IN ('custom', 'count', 'limit', 'windows') THEN
			SET LOCAL enable_seqscan = off;
			SET LOCAL enable_bitmapscan = off;
			IF how IN ('limit', 'windows') THEN
				SET LOCAL gpuidx.tree_window = 97;
			END IF;
		ELSIF how = 'parallel' THEN
			SET LOCAL enable_seqscan = off;
			SET LOCAL parallel_setup_cost = 0;
			SET LOCAL parallel_tuple_cost = 0;
			SET LOCAL min_parallel_table_scan_size = 0;
			SET LOCAL min_parallel_index_scan_size = 0;
		ELSIF how <> 'default' THEN
			SET LOCAL enable_seqscan = off;
			SET LOCAL gpuidx.enable_customscan = off;
		END IF;
		FOR r IN SELECT * FROM qs WHERE qs.qid % every = 0 ORDER BY qs.qid LOOP
			qid := r.qid;
			pred := CASE how WHEN 'commuted' THEN format('%s(''english'', %L) @@ %s', r.fn, r.src, doc)
				WHEN 'triple' THEN format('%s @@@ %s(''english'', %L)', doc, r.fn, r.src)
				ELSE format('%s @@ %s(''english'', %L)', doc, r.fn, r.src) END;
			IF how = 'count' THEN
				-- count(*) alone: counted in the custom scan
				EXECUTE format('SELECT count(*) FROM %I WHERE %s', tbl, pred) INTO n;
				s := NULL;
			ELSIF how = 'windows' THEN
				EXECUTE format('SELECT count(*), coalesce(sum(hashint4extended(id, 0)::numeric), 0) FROM (SELECT id FROM %I WHERE %s LIMIT 100000000) x',
					tbl, pred) INTO n, s;
			ELSIF how = 'limit' THEN
				EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT %s @@ %L::tsquery) FROM (SELECT * FROM %I WHERE %s LIMIT 3) x',
					doc, r.q, tbl, pred) INTO n, s;
			ELSE
				EXECUTE format('SELECT count(*), coalesce(sum(hashint4extended(id, 0)::numeric), 0) FROM %I WHERE %s', tbl, pred)
					INTO n, s;
			END IF;
			RETURN NEXT;
		END LOOP;
	END $$;
	-- the queries whose rows differ from the reference's: how many, the first
	CREATE FUNCTION differing(tbl text, doc text, how text, every int, reftbl text) RETURNS text LANGUAGE sql AS $$
		SELECT count(*) || coalesce(' (first: ' || min(format('%s %s(%L): %s rows, reference %s', qs.shape, qs.fn, qs.src, a.n, r.n)) || ')', '')
		FROM answers(tbl, doc, how, every) a JOIN ref r ON r.tbl = reftbl AND r.qid = a.qid JOIN qs ON qs.qid = a.qid
		WHERE CASE how WHEN 'count' THEN a.n <> r.n WHEN 'limit' THEN a.n <> least(r.n, 3) OR a.s <> 0
			ELSE a.n <> r.n OR a.s <> r.s END $$;
	-- the shapes whose first query with rows is not planned as a bitmap scan of idx
	CREATE FUNCTION unplanned(tbl text, doc text, idx text, reftbl text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE r record; line text; found bool; missing text := '';
	BEGIN
		SET LOCAL enable_seqscan = off;
		SET LOCAL gpuidx.enable_customscan = off;
		FOR r IN SELECT DISTINCT ON (qs.shape) qs.* FROM qs JOIN ref USING (qid)
			WHERE ref.tbl = reftbl AND ref.n > 0 ORDER BY qs.shape, qs.qid LOOP
			found := false;
			FOR line IN EXECUTE format('EXPLAIN SELECT id FROM %I WHERE %s @@ %s(''english'', %L)', tbl, doc, r.fn, r.src) LOOP
				found := found OR line LIKE ('%Bitmap Index Scan on ' || idx || '%');
			END LOOP;
			IF NOT found THEN missing := missing || ' ' || r.shape; END IF;
		END LOOP;
		RETURN missing;
	END $$;
});
sub ref_apply
{
	my ($sign) = @_;
	sql(join('', map { "SELECT ref_apply('$_', \$\$$tables{$_}{doc}\$\$, $sign);\n" } sort keys %tables));
}
sql('INSERT INTO touched SELECT id FROM dt UNION SELECT id FROM dv');
ref_apply(1);
note('reference computed (' . elapsed() . ')');

# how many rows each shape's queries find, per table
for my $tbl (sort keys %tables)
{
	my $dist = sql(qq{
		SELECT string_agg(format('%-16s %4s queries, %4s with rows, median %s rows', shape, c, nonempty, med), E'\\n' ORDER BY shape)
		FROM (SELECT shape, count(*) c, count(*) FILTER (WHERE n > 0) nonempty,
				percentile_disc(0.5) WITHIN GROUP (ORDER BY n) med
			  FROM qs JOIN ref USING (qid) WHERE tbl = '$tbl' GROUP BY shape) x});
	diag("rows per query shape on $tbl ($ndocs{$tbl} documents):\n$dist");
	my ($nonempty, $empty_shapes) = split /\|/, sql(qq{
		SELECT (SELECT count(*) FROM ref WHERE tbl = '$tbl' AND n > 0),
			   (SELECT coalesce(string_agg(shape, ' ' ORDER BY shape), '') FROM (SELECT shape FROM qs JOIN ref USING (qid)
			    WHERE tbl = '$tbl' AND (tbl = 'dv' OR shape NOT LIKE 'weight%') GROUP BY shape HAVING max(n) = 0) s)});
	cmp_ok($nonempty, '>=', $nq / 2, "$tbl: $nonempty of $nq queries find rows");
	is($empty_shapes, '', "$tbl: every shape has queries that find rows"
		. ($tbl eq 'dt' ? ' (but weights: a text column weighs all D)' : ''));
}

for my $tbl (sort keys %tables)
{
	my $d = "\$\$$tables{$tbl}{doc}\$\$";
	is(sql("SELECT unplanned('$tbl', $d, '${tbl}_idx', '$tbl')"), '',
		"$tbl: with the sequential scan off, every shape is planned as a Bitmap Index Scan on ${tbl}_idx");
	is(sql("SELECT unplanned('${tbl}_gin', $d, '${tbl}_gin_idx', '$tbl')"), '', "${tbl}_gin: and on GIN");
}

my $plan = sql(q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	EXPLAIN (COSTS OFF) SELECT id FROM dv WHERE v @@ to_tsquery('english', 'water & !vessel')});
diag("the bitmap scan off too, dv is read by:\n$plan");
$plan = sql(q{PREPARE p(tsquery) AS SELECT id FROM dv WHERE v @@ $1; SET plan_cache_mode = force_generic_plan;
	EXPLAIN (COSTS OFF) EXECUTE p('water & !vessel')});
diag("a generic plan of dv:\n$plan");

# each configuration's answers against the reference: %every{table}{how}
# runs every Nth query (absent: none)
sub compare
{
	my ($step, %every) = @_;
	for my $tbl (sort keys %every)
	{
		my $d = "\$\$$tables{$tbl}{doc}\$\$";
		for my $how (sort keys %{ $every{$tbl} })
		{
			my $n = $every{$tbl}{$how};
			my ($on, $what) = $how eq 'gin' ? ("${tbl}_gin", 'forced') : ($tbl, $how);
			my $which = $n == 1 ? "all $nq queries" : "1 query in $n";
			is(sql("SELECT differing('$on', $d, '$what', $n, '$tbl')"), '0',
				"$step: $tbl, $how: rows = row by row on $which (" . elapsed() . ')');
		}
	}
}

# writes: format() strings (%1$I the table, %% for %) run on both tables
# and their GIN copies; touched: the ids they may write
sub write_docs
{
	my ($touched, @writes) = @_;
	sql("TRUNCATE touched; INSERT INTO touched $touched");
	ref_apply(-1);
	sql(join('', map { my $w = $_; map { "SELECT format(\$f\$$w\$f\$, '$_') \\gexec\n" } qw(dt dv dt_gin dv_gin) } @writes));
	ref_apply(1);
	note(sql('SELECT count(*) FROM touched') . ' documents may have been written');
}

sub pending
{
	return $gpuidx ? sql("SELECT pending_entries FROM gpuidx_index_stats('$_[0]')") : 0;
}

# the comparison sees a difference where there is one: the text table's
# rows against the tsvector table's reference
isnt(sql(qq{SELECT differing('dt', \$\$$tables{dt}{doc}\$\$, 'forced', 11, 'dv')}), '0',
	'the text table differs from the tsvector table, and the comparison says so');

compare('after the build',
	dt => { forced => 1, default => 9, gin => 5, commuted => 11, triple => 11, generic => 5, windows => 3 },
	dv => { forced => 1, default => 1, custom => 1, gin => 2, commuted => 7, triple => 7, generic => 1, parallel => 2, limit => 3,
		windows => 1 });

write_docs('SELECT id FROM src WHERE id % 120 = 6 UNION ALL SELECT generate_series(-14, -11)',
	q{INSERT INTO %1$I (id, body) SELECT id, body FROM src
		WHERE id %% (CASE WHEN %1$L LIKE 'dt%%' THEN 360 ELSE 120 END) = 6},
	q{INSERT INTO %1$I (id, body) VALUES (-11, NULL), (-12, ''), (-13, 'the and'), (-14, NULL)});
if ($gpuidx)
{
	cmp_ok(pending('dt_idx'), '>', 0, "dt_idx's pending area holds the new rows: " . pending('dt_idx') . ' entries');
	cmp_ok(pending('dv_idx'), '>', 0, "and dv_idx's: " . pending('dv_idx'));
}
compare('inserts pending', dt => { forced => 5 }, dv => { forced => 1, default => 3 });

write_docs('SELECT id FROM src WHERE id % 97 = 0 OR id % 89 = 0 OR id % 83 = 0 OR id % 71 = 0
		UNION ALL VALUES (-1), (-2), (-4), (-12)',
	q{UPDATE %1$I d SET body = d.body || ' ' || s.body FROM src s WHERE s.id = d.id + 1 AND d.id %% 97 = 0},
	q{UPDATE %1$I d SET body = s.body FROM src s WHERE s.id = d.id + 2 AND d.id %% 89 = 0},
	q{UPDATE %1$I d SET body = NULL WHERE d.id %% 83 = 0},
	q{UPDATE %1$I d SET body = s.body FROM src s WHERE s.id = 12 AND d.id IN (-1, -2)},
	q{UPDATE %1$I d SET body = '' WHERE d.id = -12},
	q{DELETE FROM %1$I WHERE id %% 71 = 0 OR id = -4});
compare('after updates and deletes', dt => { forced => 9, count => 9 },
	dv => { forced => 1, default => 5, custom => 5, generic => 5, count => 1, parallel => 5, windows => 2 });

sql('VACUUM dt; VACUUM dv; VACUUM dt_gin; VACUUM dv_gin');
is(pending('dt_idx') + pending('dv_idx'), 0, 'VACUUM merges the pending areas');
compare('after VACUUM',
	dt => { forced => 3, default => 15, commuted => 11, triple => 11, count => 3 },
	dv => { forced => 1, default => 2, gin => 3, commuted => 7, triple => 7, count => 1, custom => 1, limit => 3,
		windows => 3 });

# more writes, the pending area now small: inserts merge it into new
# segments as they go, and some pages are all-visible, others not
sql(q{ALTER INDEX dt_idx SET (pending_list_limit = 64); ALTER INDEX dv_idx SET (pending_list_limit = 64)}) if $gpuidx;
write_docs('SELECT id FROM src WHERE id % 120 = 42 OR id % 61 = 0',
	q{INSERT INTO %1$I (id, body) SELECT id, body FROM src
		WHERE id %% (CASE WHEN %1$L LIKE 'dt%%' THEN 360 ELSE 120 END) = 42},
	q{UPDATE %1$I d SET body = s.body FROM src s WHERE s.id = d.id + 3 AND d.id %% 61 = 0});
note('segments: ' . sql(q{SELECT string_agg(segments || ' in ' || i, ', ') FROM unnest(ARRAY['dt_idx', 'dv_idx']) i,
	gpuidx_index_stats(i::regclass)})) if $gpuidx;
compare('after merges while inserting', dt => { forced => 5, count => 5 },
	dv => { forced => 1, count => 1, custom => 3, windows => 2 });

if ($gpuidx)
{
	like(sql(q{SET enable_seqscan = off; SET enable_bitmapscan = off;
		EXPLAIN SELECT count(*) FROM dv WHERE v @@ to_tsquery('english', 'water & !vessel')}),
		qr/Custom Scan \(gpuidx\).*Index: dv_idx.*Aggregate: count\(\*\) of the matches, counted in the scan.*Heap: only pages not all-visible/s,
		'count(*) alone is counted in the custom scan, which reads only the pages not all-visible');
	my ($windows) = sql(q{SET enable_seqscan = off; SET enable_bitmapscan = off; SET gpuidx.tree_window = 97;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id FROM dv WHERE v @@ to_tsquery('english', 'water | !vessel')
		LIMIT 100000000}) =~ /Index Windows: (\d+)/;
	cmp_ok($windows // 0, '>=', 4,
		"under a LIMIT the custom scan evaluates a tree a window of a segment at a time (97, 388, 1552, ... docs): "
		. ($windows // 'no') . ' windows');
	# dv_idx's positions settle a phrase and a weight in the index; dt_idx checks them on the rows
	for my $q ('water <-> fire', 'water:A', 'water <2> !fire')
	{
		my %removed = map {
			my ($tbl, $doc) = @$_;
			my ($n) = sql(qq{SET enable_seqscan = off; SET gpuidx.enable_customscan = off;
				EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id FROM $tbl WHERE $doc @@ to_tsquery('english', '$q')})
				=~ /Rows Removed by Index Recheck: (\d+)/;
			($tbl => $n // 0)
		} ([ 'dt', q{to_tsvector('english', body)} ], [ 'dv', 'v' ]);
		is($removed{dv}, 0, "'$q': no row removed by the recheck through dv_idx, which has positions"
			. " (dt_idx: $removed{dt} removed)");
	}
	like(sql("SELECT gpuidx_verify('dt_idx') || gpuidx_verify('dv_idx')"), qr/is sound.*is sound/s,
		'gpuidx_verify: both indexes match their tables (' . elapsed() . ')');

	# through the worker: its engine process, the CPU engine on this machine
	$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
gpuidx.gpu_min_postings = 0
});
	$node->restart;
	$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die 'the worker never served';
	my $before = sql('SELECT requests FROM gpuidx_worker_stats');
	compare('through the worker', dt => { forced => 9 }, dv => { forced => 5, custom => 5, count => 5 });
	diag('worker requests: ' . (sql('SELECT requests FROM gpuidx_worker_stats') - $before));
	# A union of lists that overlap, longer together than the segment: the
	# backend gives its answer room for the segment's docs, which the engine
	# takes (it refused such a union as invalid once, answered on the CPU)
	sql(q{CREATE TABLE du AS SELECT i AS id, to_tsvector('english', 'alpha beta') AS v
		FROM generate_series(1, 20000) i;
		CREATE INDEX du_idx ON du USING gpuidx (v); VACUUM du});
	my $rounds = sql('SELECT worker_rounds FROM gpuidx_worker_stats');
	is(sql(q{SET enable_seqscan = off; SELECT count(*) FROM du WHERE v @@ 'alpha | beta'}), '20000',
		'a union of two lists of every doc');
	cmp_ok(sql('SELECT worker_rounds FROM gpuidx_worker_stats'), '>', $rounds, 'answered by the worker');
	is(sql('SELECT fallback_engine_error FROM gpuidx_worker_stats'), '0',
		'the engine refused no request (' . sql('SELECT engine_note FROM gpuidx_worker_stats') . ')');
}

$node->stop;
note('done (' . elapsed() . ')');
done_testing();
