# Background pgbench loads for the TAP tests: started against a node, then
# finished with the checks every test makes of them (pgbench ended well, no
# transaction failed, some ran).
package GpxLoad;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use Test::More;

our @EXPORT = qw(start_load finish_load);

# pgbench -n against $node running $script: $clients clients for $seconds s, @extra options
sub start_load
{
	my ($node, $script, $clients, $seconds, @extra) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', $clients, '-j', ($clients < 4 ? $clients : 4), '-T', $seconds,
		  '-f', $script, @extra, '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

# the load ended well: transactions ran and none failed; returns what pgbench printed
sub finish_load
{
	my ($load, $what) = @_;
	my ($h, $out, $err) = @$load;
	$h->finish;
	is($h->result(0), 0, "$what: pgbench ends well") or diag($$err);
	like($$out, qr/number of failed transactions: 0 /, "$what: no transaction failed") or diag($$err);
	my ($n) = $$out =~ /number of transactions actually processed: (\d+)/;
	my ($retried) = $$out =~ /number of transactions retried: (\d+)/;
	cmp_ok($n // 0, '>', 0,
		"$what: " . ($n // 0) . ' transactions' . ($retried ? ", $retried retried" : ''));
	return $$out . $$err;
}

1;
