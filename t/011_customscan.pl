# The custom scan under concurrent writes (READ COMMITTED): an UPDATE or
# DELETE through it that waits for another transaction's update of the same
# row rechecks the new version (EvalPlanQual) and leaves it alone when it no
# longer matches, as the index's bitmap scan and a sequential scan do.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('customscan');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int PRIMARY KEY, body text, hits int DEFAULT 0);
	INSERT INTO t SELECT g, 'word' || g || ' common' FROM generate_series(1, 5000) g;
	CREATE INDEX t_body ON t USING gpuidx (body);
	VACUUM ANALYZE t;
});
my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = off;';
like($node->safe_psql('postgres', "$force EXPLAIN (COSTS OFF) UPDATE t SET hits = hits + 1 WHERE body @@& 'word7'"),
	qr/Custom Scan \(gpuidx\) on t/, 'the UPDATE runs through the custom scan');

for my $case (
	[ 'the other transaction changes the row so that it no longer matches', "body = 'changed'", 0, 'changed|0' ],
	[ 'the other transaction changes another column', "hits = 10", 1, 'word7 common|11' ])
{
	my ($what, $set, $updated, $final) = @$case;
	$node->safe_psql('postgres', "UPDATE t SET body = 'word7 common', hits = 0 WHERE id = 7");
	my $s1 = $node->background_psql('postgres');
	$s1->query_safe("BEGIN; UPDATE t SET $set WHERE id = 7;");
	my $s2 = $node->background_psql('postgres');
	$s2->query_until(qr/started/, "$force\n\\echo started\nUPDATE t SET hits = hits + 1 WHERE body @@& 'word7';\n");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE t SET hits%'")
	  or die 'the second update does not wait';
	$s1->query_safe('COMMIT');
	$s1->quit;
	my $out = $s2->query_safe('SELECT 1');
	$s2->quit;
	is($node->safe_psql('postgres', 'SELECT body || \'|\' || hits FROM t WHERE id = 7'), $final, "$what: right row state");
}
done_testing();
