# sqlsmith's random queries against gpuidx's indexes, views and postinglist
# values (test/sqlsmith/run.sh), as a role that is no superuser: with the GPU
# worker (shared_preload_libraries, what users run), then without it (every
# scan in the backend).  No backend may crash, no internal error (XX000) nor
# false corruption (XX002) may be logged, and the queries must reach gpuidx.
# A short run for CI; docs/RELIABILITY.md says how to run it long.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

if (system('command -v sqlsmith > /dev/null 2>&1') != 0)
{
	plan skip_all => 'NOTICE: sqlsmith is not installed (Debian package sqlsmith; scripts/deps.sh installs it)';
}

my $node = PostgreSQL::Test::Cluster->new('smith');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'gpuidx'
autovacuum = off
# one crash must not hide what the rest of the run finds
restart_after_crash = on
# only the errors, with their SQLSTATE (run.sh reads them), not every query
log_statement = none
});
$node->start;

sub smith
{
	my ($what, $seed, $seconds) = @_;
	my $out = $node->basedir . "/sqlsmith-$seed";
	my ($stdout, $stderr) = run_command([
		'bash', 'test/sqlsmith/run.sh', '--host', $node->host, '--port', $node->port,
		'--log', $node->logfile, '--seeds', $seed, '--seconds', $seconds, '--out', $out ]);
	my $ok = $stdout =~ /no crash, no internal error/;
	ok($ok, "$what: sqlsmith seed $seed, $seconds s: no crash, no internal error")
	  or diag("$stdout\n$stderr");
	note($stdout);
	my ($n, $reached, $share) = $stdout =~ /(\d+) queries; reaching gpuidx: (\d+) \(([\d.]+)%\)/;
	cmp_ok($n // 0, '>', 100, "$what: sqlsmith ran " . ($n // 0) . ' queries');
	cmp_ok($share // 0, '>', 50, "$what: " . ($share // 0) . '% of them reached gpuidx');
	my ($calls) = $stdout =~ /calls of gpuidx functions (\d+)/;
	cmp_ok($calls // 0, '>', 0, "$what: gpuidx's functions were called " . ($calls // 0) . ' times');
	my ($read) = $stdout =~ /index entries read from gpuidx indexes (\d+)/;
	cmp_ok($read // 0, '>', 0, "$what: gpuidx indexes were scanned");
	my ($requests) = $stdout =~ /worker requests (-?\d+)/;
	return $requests // 0;
}

$node->safe_psql('postgres', 'CREATE EXTENSION gpuidx');
$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die 'the worker never served';
cmp_ok(smith('with the worker', 1, 30), '>', 0, 'with the worker: the queries reached it');
is($node->safe_psql('postgres', 'SELECT serving FROM gpuidx_worker_stats'), 't', 'and it still serves');

$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->restart;
smith('without the worker', 2, 15);

# a crash may have left the server down: the failures above say so already
$node->stop('fast', fail_ok => 1);
done_testing();
