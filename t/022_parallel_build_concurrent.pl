# A parallel CREATE INDEX CONCURRENTLY (and REINDEX CONCURRENTLY) while other
# sessions insert, update and delete: the workers scan their ranges under the
# leader's snapshot, rows written meanwhile come in by the validation pass,
# and afterwards the index answers as the table does, every committed row
# found under its own word.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('parallel_cic');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\nmax_parallel_maintenance_workers = 2\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int PRIMARY KEY, body text, n int) WITH (parallel_workers = 2, fillfactor = 80);
	INSERT INTO t SELECT g, 'row u' || g || ' common tag' || (g % 17), 0 FROM generate_series(1, 200000) g;
	ANALYZE t;
	CREATE SEQUENCE more START 1000001;
	-- one transaction a row: inserts, in-place updates (HOT), updates of the
	-- indexed column, deletes
	CREATE PROCEDURE write(rows_to_write int) LANGUAGE plpgsql AS $$
	DECLARE
		i int;
	BEGIN
		FOR k IN 1 .. rows_to_write LOOP
			i := nextval('more');
			INSERT INTO t VALUES (i, 'new u' || i || ' common tag' || (i % 17), 0);
			UPDATE t SET n = n + 1 WHERE id = (i::bigint * 7919) % 200000 + 1;
			UPDATE t SET body = 'moved u' || id || ' common tag' || ((id + 1) % 17)
				WHERE id = (i::bigint * 104729) % 200000 + 1;
			DELETE FROM t WHERE id = (i * 31) % 200000 + 1;
			COMMIT;
		END LOOP;
	END $$;
});

sub writer
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'CALL write(20000)' ],
		'>', \$out, '2>', \$err);
	return [ $h, \$err ];
}

sub agrees
{
	my ($what) = @_;
	my $via_index = $node->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT count(*) FROM t WHERE body @@& 'common tag3';
	});
	my $via_table = $node->safe_psql('postgres', q{
		SET enable_indexscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;
		SELECT count(*) FROM t WHERE body @@& 'common tag3';
	});
	is($via_index, $via_table, "$what: the index counts what the table holds ($via_table rows)");
	my $missing = $node->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT count(*) FROM t
		WHERE (id % 101 = 0 OR id > 1000000 OR n > 0 OR body LIKE 'moved%')
		  AND NOT EXISTS (SELECT 1 FROM t t2 WHERE t2.body @@& ('u' || t.id) AND t2.id = t.id);
	});
	is($missing, '0', "$what: every row written, and every 101st, is found through the index under its own word");
	like($node->safe_psql('postgres', q{SELECT gpuidx_verify('t_idx')}), qr/is sound/,
		"$what: gpuidx_verify finds the index sound");
}

my $log_offset = -s $node->logfile;
my $w = writer();
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM t WHERE id > 1000000')
  or die 'the writer did not start';
my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id > 1000000');
$node->safe_psql('postgres', q{
	SET log_min_messages = debug1;
	CREATE INDEX CONCURRENTLY t_idx ON t USING gpuidx (body);
});
my $after = $node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id > 1000000');
$w->[0]->finish;
is(${ $w->[1] }, '', 'the writer ran without error');
ok($node->log_contains(qr/building index "t_idx" in 3 ranges, 2 of 2 parallel workers launched/, $log_offset),
	'CREATE INDEX CONCURRENTLY built with two workers');
cmp_ok($after, '>', $before, "rows were written while the index was built ($before new rows before, $after after)");
is($node->safe_psql('postgres', q{SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = 't_idx'::regclass}),
	't', 'the index is valid');
agrees('after CREATE INDEX CONCURRENTLY');

$log_offset = -s $node->logfile;
$w = writer();
$node->safe_psql('postgres', q{
	SET log_min_messages = debug1;
	REINDEX INDEX CONCURRENTLY t_idx;
});
$w->[0]->finish;
is(${ $w->[1] }, '', 'the second writer ran without error');
ok($node->log_contains(qr/in 3 ranges, 2 of 2 parallel workers launched/, $log_offset),
	'REINDEX CONCURRENTLY built with two workers');
agrees('after REINDEX CONCURRENTLY');

$node->stop;
done_testing();
