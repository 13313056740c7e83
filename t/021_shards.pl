# A table sharded over three servers with postgres_fdw, each shard with its
# own gpuidx indexes, against one server holding all of it: gcide's first
# GPUIDX_SHARD_DOCS (2,000) documents hashed by id over three clusters, a
# partitioned table of foreign tables on the first (the coordinator), and a
# single table with the same rows beside it.  For queries of the corpus's
# query file: counts, ids and LIMITs of tsv @@ tsquery sent to the shards,
# and the ranked top 10 with global statistics (bm25query from every
# shard's gpuidx_term_stats) against the single index's top 10: the same
# scores to the bit and the same rows above the 10th score.  After the
# build, after inserts, deletes and updates on the shards, and after
# VACUUM.  Skipped, with a notice, when the corpus is not there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use GpxLoad;

my ($docs_file, $queries_file) = corpus_files('gcide');
my $ndocs = $ENV{GPUIDX_SHARD_DOCS} // 2000;

my @shards;
for my $i (1 .. 3)
{
	my $node = PostgreSQL::Test::Cluster->new("shard$i");
	$node->init;
	$node->append_conf('postgresql.conf', "autovacuum = off\njit = off\n");
	$node->start;
	# the shard: its part of the table, its indexes (rebuilt once loaded), its statistics as a view
	$node->safe_psql('postgres', q{
		CREATE DATABASE shard;
	});
	$node->safe_psql('shard', q{
		CREATE EXTENSION gpuidx;
		CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector);
		CREATE INDEX docs_body ON docs USING gpuidx (body);
		CREATE VIEW docs_terms AS SELECT * FROM gpuidx_term_stats('docs_body');
	});
	push @shards, $node;
}
my $coord = $shards[0];
sub sql { return $coord->safe_psql('postgres', $_[0]); }

# the coordinator: the shards as the partitions of docs, the single copy beside it
sql(q{
	CREATE EXTENSION gpuidx;
	CREATE EXTENSION postgres_fdw;
	CREATE TABLE docs (id int, body text, tsv tsvector) PARTITION BY HASH (id);
	CREATE VIEW docs_terms AS SELECT NULL::text AS lexeme, NULL::bigint AS documents, NULL::bigint AS length,
		NULL::regconfig AS config, NULL::float8 AS k1, NULL::float8 AS b WHERE false;
});
my @terms;
for my $i (1 .. 3)
{
	my $port = $shards[ $i - 1 ]->port;
	my $host = $shards[ $i - 1 ]->host;
	my $r = $i - 1;
	sql(qq{
		CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw
			OPTIONS (host '$host', port '$port', dbname 'shard', extensions 'gpuidx',
					 async_capable 'true', batch_size '1000');
		CREATE USER MAPPING FOR CURRENT_USER SERVER shard$i;
		CREATE FOREIGN TABLE docs_$i PARTITION OF docs FOR VALUES WITH (MODULUS 3, REMAINDER $r)
			SERVER shard$i OPTIONS (table_name 'docs');
		CREATE FOREIGN TABLE docs_terms_$i (lexeme text, documents bigint, length bigint,
			config regconfig, k1 float8, b float8) SERVER shard$i OPTIONS (table_name 'docs_terms');
	});
	push @terms, "SELECT * FROM docs_terms_$i";
}
sql('CREATE OR REPLACE VIEW docs_terms AS ' . join(' UNION ALL ', @terms));
sql(qq{
	CREATE TABLE src (id int PRIMARY KEY, body text);
	COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	DELETE FROM src WHERE id NOT IN (SELECT id FROM src ORDER BY id LIMIT $ndocs + 500);
	CREATE TABLE qsrc (id int, terms text);
	COPY qsrc FROM '$queries_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	CREATE TABLE single (id int PRIMARY KEY, body text, tsv tsvector);
	INSERT INTO single SELECT id, body, to_tsvector('english', body) FROM src ORDER BY id LIMIT $ndocs;
	INSERT INTO docs SELECT * FROM single;
	CREATE INDEX single_body ON single USING gpuidx (body);
	CREATE INDEX single_tsv ON single USING gpuidx (tsv);
	ANALYZE single;
});
for my $node (@shards)
{
	$node->safe_psql('shard', q{
		REINDEX INDEX docs_body;
		CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
		ANALYZE docs;
	});
}
is(sql('SELECT count(*) FROM docs'), $ndocs, "$ndocs documents over three shards");
my @per_shard = map { $_->safe_psql('shard', 'SELECT count(*) FROM docs') } @shards;
ok((grep { $_ > $ndocs / 5 } @per_shard) == 3, "each shard holds a part (@per_shard)");

# the queries: the query file's, every 40th
sql(q{
	CREATE TABLE qs AS SELECT id AS qid, terms AS q FROM qsrc WHERE id % 250 = 0 AND terms ~ '[a-z]';
});
my $nq = sql('SELECT count(*) FROM qs');
ok($nq >= 8, "$nq queries");

# the plans: the filter and the order go to the shards, the LIMIT scans asynchronously
my $plan = sql(q{
	EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM docs ORDER BY body <=> (SELECT gpuidx_bm25query('gold ring', 'docs_terms')) LIMIT 10
});
like($plan, qr/Merge Append/, 'ranked: the shards\' rows merged in order');
like($plan, qr/ORDER BY \(body OPERATOR\(public\.<=>\) \$1::public\.bm25query\)/, 'ranked: ORDER BY doc <=> bm25query sent to the shards');
$plan = sql(q{EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM docs WHERE tsv @@ plainto_tsquery('english', 'gold ring') LIMIT 10});
like($plan, qr/Async Foreign Scan/, 'LIMIT: the shards scanned asynchronously');
like($plan, qr/Remote SQL: SELECT id FROM public\.docs WHERE \(\(tsv @@/, 'LIMIT: the filter sent to the shards');
$plan = sql(q{EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(n) FROM (SELECT count(*) AS n FROM docs_1 WHERE tsv @@ plainto_tsquery('english', 'gold')
	UNION ALL SELECT count(*) FROM docs_2 WHERE tsv @@ plainto_tsquery('english', 'gold')
	UNION ALL SELECT count(*) FROM docs_3 WHERE tsv @@ plainto_tsquery('english', 'gold')) c});
like($plan, qr/Remote SQL: SELECT count\(\*\) FROM public\.docs WHERE/, 'count: each shard counts');

sql(q{
	-- each side run once (a ranked query through the shards reads every
	-- shard's statistics twice): its scores, and its ids above its 10th score
	CREATE FUNCTION top_same(whole text, merged text) RETURNS boolean LANGUAGE plpgsql AS $$
	DECLARE a text; b text; ka text; kb text;
	  q constant text := 'WITH x AS MATERIALIZED (%s) SELECT string_agg(float8send(s)::text, '' '' ORDER BY s DESC), '
	    || 'string_agg(id::text, '' '' ORDER BY id) FILTER (WHERE s > (SELECT min(s) FROM x)) FROM x';
	BEGIN
	  EXECUTE format(q, whole) INTO a, ka;
	  EXECUTE format(q, merged) INTO b, kb;
	  RETURN a IS NOT DISTINCT FROM b AND ka IS NOT DISTINCT FROM kb;
	END $$;
});

sub check_all
{
	my ($phase) = @_;
	# a LIMIT without ORDER BY over asynchronous shards may return any 10
	# matches, and other ones each time it is rescanned: taken once (the
	# MATERIALIZED CTE) before its rows are checked against the single copy
	my $r = sql(q{
		SELECT count(*),
			count(*) FILTER (WHERE (SELECT count(*) FROM docs WHERE tsv @@ plainto_tsquery('english', q))
				= (SELECT count(*) FROM single WHERE tsv @@ plainto_tsquery('english', q))),
			count(*) FILTER (WHERE (SELECT sum(n) FROM (
					SELECT count(*) AS n FROM docs_1 WHERE tsv @@ plainto_tsquery('english', q)
					UNION ALL SELECT count(*) FROM docs_2 WHERE tsv @@ plainto_tsquery('english', q)
					UNION ALL SELECT count(*) FROM docs_3 WHERE tsv @@ plainto_tsquery('english', q)) c)
				= (SELECT count(*) FROM single WHERE tsv @@ plainto_tsquery('english', q))),
			count(*) FILTER (WHERE (SELECT array_agg(id ORDER BY id) FROM docs WHERE tsv @@ websearch_to_tsquery('english', q))
				IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM single WHERE tsv @@ websearch_to_tsquery('english', q))),
			count(*) FILTER (WHERE (WITH l AS MATERIALIZED (SELECT id FROM docs WHERE tsv @@ plainto_tsquery('english', q) LIMIT 10)
					SELECT count(*) FROM l WHERE id IN (SELECT id FROM single WHERE tsv @@ plainto_tsquery('english', q)))
				= (SELECT least(10, count(*)) FROM single WHERE tsv @@ plainto_tsquery('english', q))),
			count(*) FILTER (WHERE top_same(
				format('SELECT id, -(body <=> %L) s FROM single ORDER BY body <=> %L LIMIT 10', q, q),
				format('SELECT id, -(body <=> b) s FROM docs, (SELECT gpuidx_bm25query(%L, ''docs_terms'') b) g ORDER BY body <=> (SELECT gpuidx_bm25query(%L, ''docs_terms'')) LIMIT 10', q, q))),
			count(*) FILTER (WHERE top_same(
				format('SELECT id, -(tsv <=> plainto_tsquery(''english'', %L)) s FROM single ORDER BY tsv <=> plainto_tsquery(''english'', %L) LIMIT 10', q, q),
				format('SELECT id, -(tsv <=> b) s FROM docs, (SELECT gpuidx_bm25query(plainto_tsquery(''english'', %L), ''docs_terms'') b) g ORDER BY tsv <=> (SELECT gpuidx_bm25query(plainto_tsquery(''english'', %L), ''docs_terms'')) LIMIT 10', q, q)))
		FROM qs
	});
	my ($n, $count, $pushed, $ids, $limit, $ranked, $ranked_tsv) = split /\|/, $r;
	is($count, $n, "$phase: count(*) through the partitioned table, every query");
	is($pushed, $n, "$phase: count(*) of each shard summed, every query");
	is($ids, $n, "$phase: ids of websearch queries, every query");
	is($limit, $n, "$phase: LIMIT 10 returns matching rows, as many as there are");
	is($ranked, $n, "$phase: ranked top 10 with global statistics (text), every query");
	is($ranked_tsv, $n, "$phase: ranked top 10 with global statistics (tsvector), every query");
}

my @scans_before = map { $_->safe_psql('shard', q{SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'docs_body'}) } @shards;
check_all('after the build');
my @scans_after = map { $_->safe_psql('shard', q{SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'docs_body'}) } @shards;
ok((grep { $scans_after[$_] > $scans_before[$_] } 0 .. 2) == 3, 'each shard ranked through its gpuidx index');

# writes on the shards through the coordinator, and the same on the single copy
sql(qq{
	INSERT INTO single SELECT id, body, to_tsvector('english', body) FROM src WHERE id > (SELECT max(id) FROM single) ORDER BY id LIMIT 200;
	INSERT INTO docs SELECT * FROM single WHERE id NOT IN (SELECT id FROM docs);
	DELETE FROM single WHERE id % 17 = 0;
	DELETE FROM docs WHERE id % 17 = 0;
	UPDATE single SET body = body || ' gold ring', tsv = to_tsvector('english', body || ' gold ring') WHERE id % 23 = 0;
	UPDATE docs SET body = body || ' gold ring', tsv = to_tsvector('english', body || ' gold ring') WHERE id % 23 = 0;
});
is(sql('SELECT count(*) FROM docs'), sql('SELECT count(*) FROM single'), 'the same rows after the writes');
check_all('after writes (pending rows, deleted rows not yet vacuumed)');
sql('VACUUM single');
$_->safe_psql('shard', 'VACUUM docs') for @shards;
check_all('after VACUUM');

# statistics from elsewhere
my ($ret, $out, $err) = $coord->psql('postgres', q{SELECT gpuidx_bm25query('gold', 'single')});
isnt($ret, 0, 'a relation that is not statistics is refused');
# one shard's statistics alone rank as that shard does, not as the whole table
isnt(sql(q{SELECT gpuidx_bm25query('gold', 'docs_terms_1')::text}), sql(q{SELECT gpuidx_bm25query('gold', 'docs_terms')::text}),
	'one shard\'s statistics differ from the sum of all');

$_->stop for @shards;
done_testing();
