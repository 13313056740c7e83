# An application written for GIN runs unchanged on gpuidx: on a sixth of
# GCIDE's dictionary entries and 2,530 text-search queries of every shape
# (t/GpxTsquery.pm: AND, OR and NOT up to depth 3, lone !a and !a | b,
# prefixes, phrases a <-> b and a <N> b, weights, and what plainto_tsquery,
# phraseto_tsquery and websearch_to_tsquery make of search-box strings), a
# gpuidx index answers doc @@ query with the same rows as @@ evaluated row by
# row with no index, and as GIN on a copy of the table.  Two tables: text
# with an expression index on to_tsvector('english', body), and a stored
# tsvector whose first words weigh A and B; each queried as an application
# would, to_tsvector('english', body) @@ to_tsquery('english', '...'), with
# the index forced (its bitmap scan, which EXPLAIN shows for every shape) and
# under default settings.  After the build, with inserts still in the
# pending area, after updates and deletes, after VACUUM; query @@ doc and
# doc @@@ query on a sample; and a sample through the GPU worker (CPU engine).
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
use GpxTsquery;
use Time::HiRes qw(time);

my $data = $ENV{GPUIDX_DATA} // "$ENV{HOME}/.cache/gpuidx-data";
my $docs_file = "$data/gcide/docs.tsv";
my $queries_file = "$data/gcide/queries.tsv";
if (!-r $docs_file || !-r $queries_file)
{
	BAIL_OUT("corpus gcide not found under $data, and GPUIDX_REQUIRE_CORPUS is set")
	  if ($ENV{GPUIDX_REQUIRE_CORPUS} // '') eq '1';
	diag("NOTICE: corpus 'gcide' not found under $data: run scripts/data/fetch gcide");
	plan skip_all => "corpus gcide not available under $data";
}
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

# the documents: every sixth entry; the words of every entry's query and of
# the texts the phrases come from, and which of them are stop words
sql(qq{
	@{[ $gpuidx ? 'CREATE EXTENSION gpuidx;' : '' ]}
	CREATE TABLE src (id int PRIMARY KEY, body text);
	COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	CREATE TABLE dt (id int PRIMARY KEY, body text);
	INSERT INTO dt SELECT id, body FROM src WHERE id % 6 = 0;
});
my $ndocs = sql('SELECT count(*) FROM dt');
cmp_ok($ndocs, '>=', 30000, "$ndocs documents of GCIDE (" . elapsed() . ')');

my @queries;
open(my $qf, '<', $queries_file) or die "cannot read $queries_file: $!";
while (my $line = <$qf>)
{
	chomp $line;
	my (undef, $terms) = split /\t/, $line, 2;
	push @queries, [ grep { /^[a-z]{3,}$/ } split / /, lc($terms // '') ];
}
close($qf);
my @texts = split /\n/, sql(q{SELECT regexp_replace(body, '\s+', ' ', 'g') FROM dt WHERE id % 11 = 0 ORDER BY id});
my %words;
for my $w (map { @$_ } @queries) { $words{$w} = 1; }
for my $t (@texts) { for my $w (split / /, lc $t) { $words{$w} = 1 if $w =~ /^[a-z]+$/; } }
sql(q{CREATE TABLE words (w text)});
sql("COPY words FROM STDIN;\n" . join("\n", sort keys %words) . "\n\\.\n");
my %usable = map { $_ => 1 } split /\n/, sql(q{SELECT w FROM words WHERE to_tsvector('english', w) <> ''});

my $gen = generate_tsqueries(20261126, \@queries, \@texts, \%usable);
my @shapes = tsquery_shapes();
sql(q{CREATE TABLE qs (qid int PRIMARY KEY, shape text, fn text, src text, q tsquery) WITH (parallel_workers = 0)});
sql("COPY qs (qid, shape, fn, src) FROM STDIN;\n"
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

# the stored tsvector: the entry's first 3 words weigh A, the next 9 B
sql(q{
	CREATE FUNCTION weighted(body text) RETURNS tsvector LANGUAGE sql IMMUTABLE AS $$
		SELECT setweight(to_tsvector('english', array_to_string(w[1:3], ' ')), 'A')
			|| setweight(to_tsvector('english', array_to_string(w[4:12], ' ')), 'B')
			|| to_tsvector('english', array_to_string(w[13:], ' '))
		FROM regexp_split_to_array(body, '\s+') w $$;
	CREATE TABLE dv (id int PRIMARY KEY, body text, v tsvector);
	INSERT INTO dv SELECT id, body, weighted(body) FROM dt;
	CREATE TABLE dt_gin AS SELECT * FROM dt;
	CREATE TABLE dv_gin AS SELECT * FROM dv;
	CREATE INDEX dt_gin_idx ON dt_gin USING gin (to_tsvector('english', body));
	CREATE INDEX dv_gin_idx ON dv_gin USING gin (v);
});
my $with = $gpuidx ? 'WITH (pending_list_limit = 262144)' : 'WITH (fastupdate = on, gin_pending_list_limit = 262144)';
sql(qq{
	CREATE INDEX dt_idx ON dt USING $method (to_tsvector('english', body)) $with;
	CREATE INDEX dv_idx ON dv USING $method (v) $with;
	ANALYZE;
});
note("indexes built (" . elapsed() . ')');

# the reference: every document against every query, @@ row by row (no
# index), for the documents written since (touched); pairs_TABLE (id, qid)
sql(q{
	CREATE TABLE touched (id int);
	CREATE TABLE pairs_dt (id int, qid int);
	CREATE TABLE pairs_dv (id int, qid int);
	CREATE FUNCTION refresh_pairs(tbl text, doc text) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		EXECUTE format('DELETE FROM %I WHERE id IN (SELECT id FROM touched)', 'pairs_' || tbl);
		DROP TABLE IF EXISTS ref_docs;
		EXECUTE format('CREATE UNLOGGED TABLE ref_docs AS SELECT id, %s AS v FROM %I WHERE id IN (SELECT id FROM touched)', doc, tbl);
		ANALYZE ref_docs;
		SET LOCAL enable_indexscan = off;
		SET LOCAL enable_bitmapscan = off;
		SET LOCAL gpuidx.enable_customscan = off;
		SET LOCAL parallel_setup_cost = 0;
		SET LOCAL parallel_tuple_cost = 0;
		SET LOCAL min_parallel_table_scan_size = 0;
		EXECUTE format('INSERT INTO %I SELECT d.id, qs.qid FROM ref_docs d JOIN qs ON d.v @@ qs.q', 'pairs_' || tbl);
	END $$;
	CREATE FUNCTION ref(tbl text) RETURNS TABLE (qid int, n bigint, h text) LANGUAGE plpgsql AS $$
	BEGIN
		RETURN QUERY EXECUTE format('SELECT qs.qid, count(p.id), md5(coalesce(string_agg(p.id::text, '','' ORDER BY p.id), ''''))
			FROM qs LEFT JOIN %I p USING (qid) GROUP BY qs.qid', 'pairs_' || tbl);
	END $$;
	-- how: forced (the index's bitmap scan), default (the planner's choice),
	-- commuted (query @@ doc, forced), triple (doc @@@ query, forced)
	CREATE FUNCTION answers(tbl text, doc text, how text, every int) RETURNS TABLE (qid int, n bigint, h text) LANGUAGE plpgsql AS $$
	DECLARE r record; pred text;
	BEGIN
		IF how <> 'default' THEN
			SET LOCAL enable_seqscan = off;
			SET LOCAL gpuidx.enable_customscan = off;
		END IF;
		FOR r IN SELECT * FROM qs WHERE qs.qid % every = 0 ORDER BY qs.qid LOOP
			qid := r.qid;
			pred := CASE how WHEN 'commuted' THEN format('%s(''english'', %L) @@ %s', r.fn, r.src, doc)
				WHEN 'triple' THEN format('%s @@@ %s(''english'', %L)', doc, r.fn, r.src)
				ELSE format('%s @@ %s(''english'', %L)', doc, r.fn, r.src) END;
			EXECUTE format('SELECT count(*), md5(coalesce(string_agg(id::text, '','' ORDER BY id), '''')) FROM %I WHERE %s', tbl, pred)
				INTO n, h;
			RETURN NEXT;
		END LOOP;
	END $$;
	-- the queries whose rows differ from the reference's: how many, the first
	CREATE FUNCTION differing(tbl text, doc text, how text, every int, reftbl text) RETURNS text LANGUAGE sql AS $$
		SELECT count(*) || coalesce(' (first: ' || min(format('%s %s(%L): %s rows, reference %s', qs.shape, qs.fn, qs.src, a.n, r.n)) || ')', '')
		FROM answers(tbl, doc, how, every) a JOIN ref(reftbl) r USING (qid) JOIN qs USING (qid)
		WHERE a.n <> r.n OR a.h <> r.h $$;
	-- the shapes whose first query with rows is not planned as a bitmap scan of idx
	CREATE FUNCTION unplanned(tbl text, doc text, idx text, reftbl text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE r record; line text; found bool; missing text := '';
	BEGIN
		SET LOCAL enable_seqscan = off;
		SET LOCAL gpuidx.enable_customscan = off;
		FOR r IN SELECT DISTINCT ON (qs.shape) qs.* FROM qs JOIN ref(reftbl) x USING (qid) WHERE x.n > 0 ORDER BY qs.shape, qs.qid LOOP
			found := false;
			FOR line IN EXECUTE format('EXPLAIN SELECT id FROM %I WHERE %s @@ %s(''english'', %L)', tbl, doc, r.fn, r.src) LOOP
				found := found OR line LIKE ('%Bitmap Index Scan on ' || idx || '%');
			END LOOP;
			IF NOT found THEN missing := missing || ' ' || r.shape; END IF;
		END LOOP;
		RETURN missing;
	END $$;
	INSERT INTO touched SELECT id FROM dt;
	SELECT refresh_pairs('dt', 'to_tsvector(''english'', body)');
	SELECT refresh_pairs('dv', 'v');
	TRUNCATE touched;
});
note('reference computed (' . elapsed() . ')');

# how many rows each shape's queries find, per table
for my $tbl ('dt', 'dv')
{
	my $dist = sql(qq{
		SELECT string_agg(format('%-16s %4s queries, %4s with rows, median %s rows', shape, c, nonempty, med), E'\\n' ORDER BY shape)
		FROM (SELECT shape, count(*) c, count(*) FILTER (WHERE n > 0) nonempty,
				percentile_disc(0.5) WITHIN GROUP (ORDER BY n) med
			  FROM qs JOIN ref('$tbl') USING (qid) GROUP BY shape) x});
	diag("rows per query shape on $tbl:\n$dist");
	my ($nonempty, $empty_shapes) = split /\|/, sql(qq{
		SELECT (SELECT count(*) FROM ref('$tbl') WHERE n > 0),
			   (SELECT coalesce(string_agg(shape, ' '), '') FROM (SELECT shape FROM qs JOIN ref('$tbl') USING (qid)
			    GROUP BY shape HAVING max(n) = 0) s)});
	cmp_ok($nonempty, '>=', $nq / 2, "$tbl: $nonempty of $nq queries find rows");
	is($empty_shapes, '', "$tbl: every shape has queries that find rows");
}

my %doc = (dt => q{to_tsvector('english', body)}, dv => 'v');
for my $tbl ('dt', 'dv')
{
	is(sql("SELECT unplanned('$tbl', \$\$$doc{$tbl}\$\$, '${tbl}_idx', '$tbl')"), '',
		"$tbl: with the sequential scan off, every shape is planned as a Bitmap Index Scan on ${tbl}_idx");
	is(sql("SELECT unplanned('${tbl}_gin', \$\$$doc{$tbl}\$\$, '${tbl}_gin_idx', '$tbl')"), '',
		"${tbl}_gin: and on GIN");
}

sub compare
{
	my ($step, %opt) = @_;
	for my $tbl ('dt', 'dv')
	{
		my $d = "\$\$$doc{$tbl}\$\$";
		is(sql("SELECT differing('$tbl', $d, 'forced', 1, '$tbl')"), '0',
			"$step: $tbl: the index's bitmap scan = row by row on $nq queries (" . elapsed() . ')');
		my $every = $opt{default_every}{$tbl} // 1;
		is(sql("SELECT differing('$tbl', $d, 'default', $every, '$tbl')"), '0',
			"$step: $tbl: default settings = row by row on " . ($every == 1 ? 'them all' : "every ${every}th"));
		is(sql("SELECT differing('${tbl}_gin', $d, 'forced', 1, '$tbl')"), '0', "$step: $tbl: GIN = row by row")
			if $opt{gin};
		if ($opt{commuted})
		{
			is(sql("SELECT differing('$tbl', $d, 'commuted', 7, '$tbl')"), '0',
				"$step: $tbl: query @@ doc = row by row on every 7th query");
			is(sql("SELECT differing('$tbl', $d, 'triple', 7, '$tbl')"), '0',
				"$step: $tbl: doc @@@ query = row by row on every 7th query");
		}
	}
	note("$step compared (" . elapsed() . ')');
}

# the writes (statements on dt, each RETURNING id), then the same rows in
# dv and the GIN copies; touched: the ids written
sub write_docs
{
	my @writes = @_;
	my $ctes = join(', ', map { "w$_ AS ($writes[$_])" } 0 .. $#writes);
	my $ids = join(' UNION ', map { "SELECT id FROM w$_" } 0 .. $#writes);
	sql(qq{
		TRUNCATE touched;
		WITH $ctes INSERT INTO touched $ids;
		UPDATE dv SET body = dt.body, v = weighted(dt.body) FROM dt WHERE dt.id = dv.id AND dv.id IN (SELECT id FROM touched);
		DELETE FROM dv WHERE id IN (SELECT id FROM touched) AND id NOT IN (SELECT id FROM dt);
		INSERT INTO dv SELECT id, body, weighted(body) FROM dt WHERE id IN (SELECT id FROM touched) AND id NOT IN (SELECT id FROM dv);
		DELETE FROM dt_gin WHERE id IN (SELECT id FROM touched);
		INSERT INTO dt_gin SELECT * FROM dt WHERE id IN (SELECT id FROM touched);
		DELETE FROM dv_gin WHERE id IN (SELECT id FROM touched);
		INSERT INTO dv_gin SELECT * FROM dv WHERE id IN (SELECT id FROM touched);
		SELECT refresh_pairs('dt', 'to_tsvector(''english'', body)');
		SELECT refresh_pairs('dv', 'v');
	});
}

sub pending
{
	return $gpuidx ? sql("SELECT pending_entries FROM gpuidx_index_stats('$_[0]')") : 0;
}

compare('after the build', gin => 1, commuted => 1);

write_docs(q{INSERT INTO dt SELECT id, body FROM src WHERE id % 60 = 3 RETURNING id});
my $inserted = sql('SELECT count(*) FROM touched');
if ($gpuidx)
{
	cmp_ok(pending('dt_idx'), '>', 0, "$inserted inserts wait in dt_idx's pending area: " . pending('dt_idx') . ' entries');
	cmp_ok(pending('dv_idx'), '>', 0, "and in dv_idx's: " . pending('dv_idx'));
}
compare('inserts pending');

write_docs(
	q{UPDATE dt SET body = dt.body || ' ' || s.body FROM src s WHERE s.id = dt.id + 1 AND dt.id % 97 = 0 RETURNING dt.id},
	q{UPDATE dt SET body = s.body FROM src s WHERE s.id = dt.id + 2 AND dt.id % 89 = 0 AND dt.id % 97 <> 0 RETURNING dt.id},
	q{DELETE FROM dt WHERE id % 71 = 0 AND id % 97 <> 0 AND id % 89 <> 0 RETURNING id});
note(sql('SELECT count(*) FROM touched') . ' documents updated or deleted');
compare('after updates and deletes', gin => 1);

sql('VACUUM dt; VACUUM dv; VACUUM dt_gin; VACUUM dv_gin');
is(pending('dt_idx') + pending('dv_idx'), 0, 'VACUUM merges the pending areas');
compare('after VACUUM', gin => 1, commuted => 1);

if ($gpuidx)
{
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
	for my $tbl ('dt', 'dv')
	{
		is(sql("SELECT differing('$tbl', \$\$$doc{$tbl}\$\$, 'forced', 9, '$tbl')"), '0',
			"through the worker: $tbl: every 9th query = row by row");
	}
	diag('worker requests: ' . (sql('SELECT requests FROM gpuidx_worker_stats') - $before));
}

$node->stop;
note('done (' . elapsed() . ')');
done_testing();
