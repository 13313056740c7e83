# Crash recovery: rows are inserted one transaction at a time (small and
# multi-page documents, pending merges past a small limit) while another
# session deletes and vacuums; the server is stopped in immediate mode in the
# middle.  After recovery gpuidx_verify finds the index sound, every committed
# row is found through the index under its own unique word, and the index
# takes writes again.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int PRIMARY KEY, body text);
	INSERT INTO t SELECT g, 'base u' || g || ' common tag' || (g % 17) FROM generate_series(1, 5000) g;
	CREATE INDEX t_idx ON t USING gpuidx (body) WITH (pending_list_limit = 64);
	CREATE PROCEDURE fill(n int) LANGUAGE plpgsql AS $$
	BEGIN
		FOR i IN 5001 .. 5000 + n LOOP
			IF i % 97 = 0 THEN
				-- a document whose pending entry spans several pages
				INSERT INTO t SELECT i, 'big u' || i || ' common ' || string_agg('w' || (i * 7 + g), ' ')
				FROM generate_series(1, 6000) g;
			ELSE
				INSERT INTO t VALUES (i, 'row u' || i || ' common tag' || (i % 17));
			END IF;
			COMMIT;
		END LOOP;
	END $$;
});

# writers in the background: inserts, and deletes with VACUUM
my ($out1, $err1, $out2, $err2) = ('', '', '', '');
my $inserts = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'CALL fill(1000000)' ],
	'>', \$out1, '2>', \$err1);
my $vacuum_sql = join('', map { "DELETE FROM t WHERE id % 50 = $_ AND id < 5000; VACUUM t;\n" } 1 .. 400);
my $vacuums = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], '<', \$vacuum_sql,
	'>', \$out2, '2>', \$err2);

$node->poll_query_until('postgres', 'SELECT count(*) > 9000 FROM t WHERE id > 5000')
  or die 'the inserts did not progress';
my $merged = $node->safe_psql('postgres', "SELECT segments FROM gpuidx_index_stats('t_idx')");
cmp_ok($merged, '>', 1, "pending areas were merged before the crash ($merged segments)");
$node->stop('immediate');
$inserts->finish;
$vacuums->finish;

$node->start;
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
cmp_ok($rows, '>', 9000, "$rows rows committed before the crash");
like($node->safe_psql('postgres', "SELECT gpuidx_verify('t_idx')"), qr/is sound: .* $rows rows of "t" found/,
	'gpuidx_verify: the recovered index is sound and holds every row');

# each committed row is found through the index under its unique word
my $missing = $node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM t
	WHERE NOT EXISTS (SELECT 1 FROM t t2 WHERE t2.body @@& ('u' || t.id) AND t2.id = t.id);
});
is($missing, '0', 'every committed row is found through the index');
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM t WHERE body @@& 'common tag3';
}), $node->safe_psql('postgres', q{
	SET enable_bitmapscan = off;
	SELECT count(*) FROM t WHERE body @@& 'common tag3';
}), 'index and sequential scan agree after recovery');

# the index takes writes again, VACUUM reclaims what the crash left behind
$node->safe_psql('postgres', q{
	INSERT INTO t SELECT g, 'later u' || g || ' common' FROM generate_series(2000001, 2003000) g;
	DELETE FROM t WHERE id % 3 = 0;
	VACUUM t;
});
like($node->safe_psql('postgres', "SELECT gpuidx_verify('t_idx')"), qr/is sound/,
	'sound after more writes and VACUUM');
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM t WHERE body @@& 'later common';
}), '2000', 'new rows found');
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no backend crashed');
$node->stop;
done_testing();
