# Helpers for the TAP tests: background pgbench loads, started against a
# node, then finished with the checks every test makes of them (pgbench
# ended well, no transaction failed, some ran); and a corpus's files.
package GpxLoad;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use Test::More;

our @EXPORT = qw(start_load finish_load corpus_files skewed_text_sql);

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

# a corpus's docs.tsv and queries.tsv (GPUIDX_DATA, default
# ~/.cache/gpuidx-data); when they are not there the test is skipped with a
# notice, unless GPUIDX_REQUIRE_CORPUS=1 makes that a failure
sub corpus_files
{
	my ($corpus) = @_;
	my $data = $ENV{GPUIDX_DATA} // "$ENV{HOME}/.cache/gpuidx-data";
	my ($docs, $queries) = ("$data/$corpus/docs.tsv", "$data/$corpus/queries.tsv");
	return ($docs, $queries) if -r $docs && -r $queries;
	BAIL_OUT("corpus $corpus not found under $data, and GPUIDX_REQUIRE_CORPUS is set")
	  if ($ENV{GPUIDX_REQUIRE_CORPUS} // '') eq '1';
	diag("NOTICE: corpus '$corpus' not found under $data: run scripts/data/fetch $corpus");
	plan skip_all => "corpus $corpus not available under $data";
}

# SQL of a table (id, body) of $n rows of $words generated words each, of a
# skewed vocabulary, a row's words fixed by its id ($stride: ids apart)
sub skewed_text_sql
{
	my ($n, $words, $stride) = @_;
	return qq{
		SELECT g AS id, (SELECT string_agg('w' || ((hashint4(g * $stride + k) & 4095) *
		                                          (hashint4(g * $stride + k + 7) & 4095) / 4096), ' ')
		                 FROM generate_series(1, $words) k) AS body
		FROM generate_series(1, $n) g};
}

1;
