# Merges and VACUUM while a transaction in another database holds the xmin
# horizon back, so no retired page can be recycled: far more merges than the
# metapage has room to list retired page sets for (96) and segments (64).
# No merge may stop, VACUUM must never leave an index entry pointing at a
# TID it frees (the review's reproduction: 40 rows inserted, deleted and
# vacuumed, their TIDs taken by new rows, must not be found under the old
# rows' word), and every answer through the index equals a sequential scan.
# Once the transaction ends, VACUUM recycles what waited.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stalled');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	-- vacuum_truncate off: VACUUM frees retired pages only as the horizon
	-- allows, never all of them under a lock of the index (t/023 does that)
	CREATE TABLE t (id serial PRIMARY KEY, body text) WITH (autovacuum_enabled = off, vacuum_truncate = off);
	INSERT INTO t (body) SELECT 'seed' || g || ' common tag' || (g % 7) FROM generate_series(1, 2000) g;
	CREATE INDEX t_idx ON t USING gpuidx (body) WITH (pending_list_limit = 64);
});

# the horizon held back from another database, with an xid assigned
my $holder = $node->background_psql('other');
$holder->query_safe('BEGIN; SELECT txid_current();');

my @queries = ('common', 'common tag3', 'tag5', 'victimword', 'round7', 'doc13 common',
	'later', 'nothing_matches_this');

# every query, through the index and by a sequential scan
sub compare_with_seqscan
{
	my ($label) = @_;
	my $sql = '';
	for my $q (@queries)
	{
		$sql .= "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = on;\n";
		$sql .= "SELECT '$q', string_agg(id::text, ',' ORDER BY id) FROM t WHERE body @@& '$q';\n";
		$sql .= "SET enable_seqscan = on; SET enable_bitmapscan = off;\n";
		$sql .= "SELECT '$q', string_agg(id::text, ',' ORDER BY id) FROM t WHERE body @@& '$q';\n";
		$sql .= "RESET ALL;\n";
	}
	my @rows = split /\n/, $node->safe_psql('postgres', $sql);
	my $bad = 0;
	for (my $i = 0; $i + 1 < @rows; $i += 2)
	{
		next if $rows[$i] eq $rows[ $i + 1 ];
		$bad++;
		if ($bad <= 3)
		{
			my ($q, $index_ids) = split /\|/, $rows[$i], -1;
			my (undef, $scan_ids) = split /\|/, $rows[ $i + 1 ], -1;
			my %in_scan = map { $_ => 1 } split /,/, $scan_ids;
			my %in_index = map { $_ => 1 } split /,/, $index_ids;
			diag("$label: '$q': index only: "
				  . join(',', grep { !$in_scan{$_} } split /,/, $index_ids)
				  . '; scan only: ' . join(',', grep { !$in_index{$_} } split /,/, $scan_ids));
		}
	}
	return $bad;
}

my $mismatches = 0;
for my $round (1 .. 150)
{
	$node->safe_psql('postgres', qq{
		INSERT INTO t (body) SELECT 'round$round doc' || g || ' common tag' || (g % 7)
		FROM generate_series(1, 30) g;
		SELECT gpuidx_merge_pending('t_idx');
	});
	if ($round % 10 == 0)
	{
		$node->safe_psql('postgres', qq{DELETE FROM t WHERE id % 11 = $round % 11});
		$node->safe_psql('postgres', 'VACUUM t');
	}
	$mismatches += compare_with_seqscan("round $round") if $round % 5 == 0;
}
is($mismatches, 0, 'every answer during 150 rounds of merges equals a sequential scan');

my ($segments, $pending, $retired) = split /\|/, $node->safe_psql('postgres',
	q{SELECT segments, pending_entries, retired_sets FROM gpuidx_index_stats('t_idx')});
is($pending, 0, 'no merge stopped: nothing left pending');
cmp_ok($retired, '>', 96, "retired sets past the metapage's room ($retired), none recycled");
cmp_ok($segments, '<', 64, "segments stay below the metapage's room ($segments)");

# the review's reproduction: TIDs of vacuumed rows taken by new rows
$node->safe_psql('postgres', q{
	INSERT INTO t (body) SELECT 'victimword v' || g FROM generate_series(1, 40) g;
	DELETE FROM t WHERE body LIKE 'victimword%';
	VACUUM t;
	INSERT INTO t (body) SELECT 'later row' || g || ' common' FROM generate_series(1, 200) g;
});
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM t WHERE body @@& 'victimword'}), '0',
	'no new row is found under a vacuumed row\'s word');
is(compare_with_seqscan('after TID reuse'), 0, 'every answer after TID reuse equals a sequential scan');
like($node->safe_psql('postgres', q{SELECT gpuidx_verify('t_idx')}), qr/is sound/,
	'gpuidx_verify: sound, every row indexed once with its own lexemes');

# the horizon moves on: what waited is recycled
$holder->query_safe('COMMIT');
$holder->quit;
$node->safe_psql('postgres', 'VACUUM t');
my $left = $node->safe_psql('postgres', q{SELECT retired_sets FROM gpuidx_index_stats('t_idx')});
cmp_ok($left, '<', 5, "VACUUM recycled the retired sets once the transaction ended ($left left)");
my $free = $node->safe_psql('postgres', q{SELECT free_bytes > 0 FROM gpuidx_index_stats('t_idx')});
is($free, 't', 'their pages are free for reuse');
$node->safe_psql('postgres', q{
	INSERT INTO t (body) SELECT 'after horizon' || g || ' common' FROM generate_series(1, 500) g;
	SELECT gpuidx_merge_pending('t_idx');
});
is(compare_with_seqscan('after recycling'), 0, 'answers after recycling equal a sequential scan');
like($node->safe_psql('postgres', q{SELECT gpuidx_verify('t_idx')}), qr/is sound/,
	'gpuidx_verify: sound after recycling and page reuse');

$node->stop;
done_testing();
