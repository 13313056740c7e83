# Streaming replication: every change to a gpuidx index travels as WAL (the
# build as full pages, every later change as generic WAL records), so a hot
# standby answers the same queries as the primary, with the same rows, after
# the build, inserts into the pending area, merges, deletes, VACUUM (dead
# docs, rewritten segments, recycled pages) and an index built while the
# standby runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "autovacuum = off\n");
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int PRIMARY KEY, body text, tsv tsvector);
	INSERT INTO t SELECT g, 'row ' || (ARRAY['alpha','beta','gamma','delta','omega'])[1 + g % 5]
	                         || ' group' || (g % 31) || ' item' || g, NULL
	FROM generate_series(1, 20000) g;
	UPDATE t SET tsv = to_tsvector('english', body);
	CREATE INDEX t_body ON t USING gpuidx (body) WITH (pending_list_limit = 64);
});
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my @queries = ('alpha', 'beta group3', 'gamma group7 item77', 'omega', 'delta group30',
	'row', 'new rows', 'alpha group1', 'nothing here', 'item19999');

# each query's rows, through the index
sub answers
{
	my ($node, $column) = @_;
	my $sql = "SET enable_seqscan = off;\n";
	$sql .= "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM t WHERE $column @@& '$_';\n"
	  for @queries;
	return $node->safe_psql('postgres', $sql);
}

sub compare
{
	my ($step) = @_;
	$primary->wait_for_catchup($standby);
	my $p = answers($primary, 'body');
	is(answers($standby, 'body'), $p, "$step: the standby answers as the primary");
	my $seq = $primary->safe_psql('postgres', "SET enable_bitmapscan = off;\n"
		  . join('', map { "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '-') FROM t WHERE body @@& '$_';\n" } @queries));
	is($p, $seq, "$step: and both as a sequential scan");
}

compare('base backup');
is($standby->safe_psql('postgres', "SELECT docs FROM gpuidx_index_stats('t_body')"), '20000',
	'the standby has the built index');

$primary->safe_psql('postgres', q{
	INSERT INTO t SELECT g, 'new rows alpha group' || (g % 31) || ' item' || g, NULL
	FROM generate_series(20001, 20300) g;
});
compare('inserts into the pending area');

$primary->safe_psql('postgres', q{
	INSERT INTO t SELECT g, 'more new rows beta item' || g, NULL FROM generate_series(20301, 26000) g;
	SELECT gpuidx_merge_pending('t_body');
});
compare('merges into segments');
cmp_ok($standby->safe_psql('postgres', "SELECT segments FROM gpuidx_index_stats('t_body')"), '>', 1,
	'the standby has the new segments');

$primary->safe_psql('postgres', q{
	DELETE FROM t WHERE id % 3 = 0;
	UPDATE t SET body = body || ' omega' WHERE id % 10 = 1;
	VACUUM t;
});
compare('deletes, updates and VACUUM');
$primary->safe_psql('postgres', q{
	DELETE FROM t WHERE id > 1000;
	VACUUM t;
	VACUUM t;
	INSERT INTO t SELECT g, 'row alpha recycled item' || g, NULL FROM generate_series(30001, 36000) g;
	SELECT gpuidx_merge_pending('t_body');
});
compare('segments rewritten and pages recycled');

$primary->safe_psql('postgres', q{
	UPDATE t SET tsv = to_tsvector('english', body) WHERE tsv IS NULL OR id % 2 = 0;
	CREATE INDEX t_tsv ON t USING gpuidx (tsv);
});
$primary->wait_for_catchup($standby);
is(answers($standby, 'tsv'), answers($primary, 'tsv'), 'an index built while the standby runs replicates');

like($standby->safe_psql('postgres', "SELECT gpuidx_verify('t_body')"), qr/is sound/,
	'gpuidx_verify finds the standby\'s index sound');
like($standby->safe_psql('postgres', "SELECT gpuidx_verify('t_tsv')"), qr/is sound/,
	'and the tsvector index too');
my ($ret, $out, $err) = $standby->psql('postgres', "SELECT gpuidx_merge_pending('t_body')");
like($err, qr/recovery is in progress/, 'a standby cannot merge');

$standby->stop;
$primary->stop;
done_testing();
