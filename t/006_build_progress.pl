# Progress of a long index build: while one session builds a gpuidx index on
# 600,000 rows with a small maintenance_work_mem (so runs spill and are
# merged), another watches pg_stat_progress_create_index and must see the
# build's own phases, with the table's blocks and rows counted as they go.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('progress');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int, body text);
	INSERT INTO t
	SELECT g, 'w' || (g % 5003) || ' v' || (g % 7919) || ' u' || g || ' x' || (g * 31 % 100003)
	FROM generate_series(1, 600000) g;
	ANALYZE t;
});

# start a build in a second session and sample the view until it is over:
# the phases seen, the most blocks and rows counted, the blocks in all
sub watch_build
{
	my ($settings) = @_;
	my $builder = $node->background_psql('postgres');
	$builder->query_until(qr/started/, qq{
		$settings
		\\echo started
		CREATE INDEX t_idx ON t USING gpuidx (body);
		\\echo built
	});
	my %phases;
	my ($max_blocks, $max_tuples, $total_blocks) = (0, 0, 0);
	my $deadline = time() + 300;
	while (time() < $deadline)
	{
		my $row = $node->safe_psql('postgres', q{
			SELECT phase || '|' || blocks_total || '|' || blocks_done || '|' || tuples_done
			FROM pg_stat_progress_create_index WHERE command = 'CREATE INDEX'});
		if ($row eq '')
		{
			last if $node->safe_psql('postgres',
				q{SELECT count(*) FROM pg_class WHERE relname = 't_idx'}) eq '1';
			usleep(5_000);
			next;
		}
		my ($phase, $bt, $bd, $td) = split /\|/, $row;
		$phases{$phase}++;
		$total_blocks = $bt if $bt > $total_blocks;
		$max_blocks = $bd if $bd > $max_blocks;
		$max_tuples = $td if $td > $max_tuples;
		usleep(5_000);
	}
	$builder->quit;
	return (\%phases, $max_blocks, $max_tuples, $total_blocks);
}

my ($phases, $max_blocks, $max_tuples, $total_blocks) = watch_build(q{SET maintenance_work_mem = '1MB';});
my %phases = %$phases;
note 'phases seen: ' . join(', ', map { "$_ ($phases{$_})" } sort keys %phases);
ok($phases{'building index: scanning table'}, 'the scan phase is reported by name');
cmp_ok($max_blocks, '>', 0, "blocks done counted during the scan ($max_blocks of $total_blocks)");
cmp_ok($max_tuples, '>', 0, "rows done counted ($max_tuples)");
my $table_blocks = $node->safe_psql('postgres',
	q{SELECT pg_relation_size('t') / current_setting('block_size')::int});
is($total_blocks, $table_blocks, 'blocks_total is the table\'s size');
like($node->safe_psql('postgres', q{SELECT gpuidx_verify('t_idx')}), qr/ok|sound|verified/i,
	'the index built under watch verifies');
is($node->safe_psql('postgres', q{SELECT (gpuidx_index_stats('t_idx')).build_runs > 1}), 't',
	'the 1 MB build spilled runs (so there was a merge phase to report)');

# A parallel build: two workers and the leader each scan a range of the
# table; the leader reports everyone's rows and blocks, and the index is the
# serial one's.
my $serial_bytes = $node->safe_psql('postgres', q{SELECT (gpuidx_index_stats('t_idx')).total_bytes});
$node->safe_psql('postgres', q{DROP INDEX t_idx; ALTER TABLE t SET (parallel_workers = 2)});
my $log_offset = -s $node->logfile;
($phases, $max_blocks, $max_tuples, $total_blocks) = watch_build(q{
	SET maintenance_work_mem = '1MB';
	SET max_parallel_maintenance_workers = 2;
	SET log_min_messages = debug1;});
%phases = %$phases;
note 'parallel build, phases seen: ' . join(', ', map { "$_ ($phases{$_})" } sort keys %phases);
ok($node->log_contains(qr/building index "t_idx" in 3 ranges, 2 of 2 parallel workers launched/, $log_offset),
	'the build ran with two workers');
ok($phases{'building index: scanning table'}, 'parallel: the scan phase is reported');
is($total_blocks, $table_blocks, 'parallel: blocks_total is the table\'s size');
cmp_ok($max_blocks, '>', 0, "parallel: blocks done counted ($max_blocks of $total_blocks)");
cmp_ok($max_tuples, '>', 0, "parallel: rows done counted ($max_tuples)");
is($node->safe_psql('postgres', q{SELECT (gpuidx_index_stats('t_idx')).total_bytes}), $serial_bytes,
	'the parallel build is as large as the serial one');
like($node->safe_psql('postgres', q{SELECT gpuidx_verify('t_idx')}), qr/sound/,
	'the parallel build verifies');
is($node->safe_psql('postgres', q{SELECT count(*) FROM t WHERE body @@& 'w17'}),
	$node->safe_psql('postgres', q{SET enable_indexscan = off; SET enable_bitmapscan = off;
		SET gpuidx.enable_customscan = off; SELECT count(*) FROM t WHERE body @@& 'w17'}),
	'the parallel build answers as the table does');

$node->stop;
done_testing();
