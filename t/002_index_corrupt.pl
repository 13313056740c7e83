# Damaged gpuidx index pages, edited in the relation file with the server
# stopped: every kind of page (metapage, segment header, dictionary leaf,
# posting lists, doc map, pending area) is reported as index corruption
# (XX002) by the scans that read it and by gpuidx_verify, the server stays
# up, and no query returns rows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt_index');
# the index's own checks must meet the damage, not the server's page
# checksums (initdb's default from PostgreSQL 18; older versions ignore this)
$node->init(no_data_checksums => 1);
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
	INSERT INTO docs
	SELECT g, 'common ' || (ARRAY['red','green','blue','cyan'])[1 + g % 4] || ' word' || (g % 997)
	          || ' item' || g
	FROM generate_series(1, 40000) g;
	CREATE INDEX docs_idx ON docs USING gpuidx (body);
	-- rows in the pending area too
	INSERT INTO docs SELECT g, 'pending common row' || g FROM generate_series(40001, 40100) g;
	CHECKPOINT;
});
like($node->safe_psql('postgres', "SELECT gpuidx_verify('docs_idx')"), qr/is sound/, 'sound before damage');
like($node->safe_psql('postgres', "SET maintenance_work_mem = '1MB'; SELECT gpuidx_verify('docs_idx')"),
	qr/is sound.*in 2 passes within maintenance_work_mem$/, 'and in two passes within 1MB');
my $expected = $node->safe_psql('postgres',
	"SET enable_seqscan = off; SELECT count(*) FROM docs WHERE body @@& 'common red'");
is($expected, '10000', 'index answers before damage');

my $file = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('docs_idx')");
$node->stop;

my $clean = slurp_file($file);
my $BLCKSZ = 8192;
my $npages = length($clean) / $BLCKSZ;

# the type, stream and used bytes of each page (store/layout.h)
sub page_info
{
	my ($bytes, $blk) = @_;
	my $page = substr($bytes, $blk * $BLCKSZ, $BLCKSZ);
	my $lower = unpack('v', substr($page, 12, 2));
	my ($crc, $type, $stream) = unpack('V v v', substr($page, $BLCKSZ - 24, 8));
	return ($type, $stream, $lower - 24);
}

sub find_pages
{
	my ($type, $stream) = @_;
	my @found;
	for my $b (0 .. $npages - 1)
	{
		my ($t, $s, $used) = page_info($clean, $b);
		push @found, $b if $t == $type && (!defined $stream || $s == $stream);
	}
	return @found;
}

# flip bytes of the contents of the given blocks: at the fractions of their
# used part given (a list of fractions, or one)
sub damage
{
	my ($blocks, $where) = @_;
	my $bytes = $clean;
	my @at = ref($where) ? @$where : ($where);
	for my $b (@$blocks)
	{
		my (undef, undef, $used) = page_info($clean, $b);
		for my $f (@at)
		{
			my $off = $b * $BLCKSZ + 24 + int($used * $f);
			substr($bytes, $off, 1) = chr(ord(substr($bytes, $off, 1)) ^ 0x5a);
		}
	}
	open(my $fh, '>:raw', $file) or die "open $file: $!";
	print $fh $bytes;
	close($fh);
}

# the first term of a dictionary leaf: its first entry is a restart point,
# in the packed form (store/parse.h): one byte for its lengths, or an escape
# byte then each as a varint (one byte each for these terms)
sub leaf_first_term
{
	my ($blk) = @_;
	my $page = substr($clean, $blk * $BLCKSZ + 24, $BLCKSZ - 48);
	my ($nentries, $nrestarts) = unpack('v v', $page);
	my $p = 8 + 2 * $nrestarts;
	my $lens = ord(substr($page, $p, 1));
	return substr($page, $p + 1, $lens & 0xF) if $lens != 0xF0;
	return substr($page, $p + 3, ord(substr($page, $p + 2, 1)));
}

my @leaves = find_pages(5, 0);
my @lists = find_pages(5, 2);
my @docmap = find_pages(5, 4);
my @pending = find_pages(2);
my @heads = find_pages(3);
ok(@leaves > 2 && @lists > 0 && @docmap > 0 && @pending > 0 && @heads == 1,
	'the index has every kind of page: ' . scalar(@leaves) . ' leaves, ' . scalar(@lists)
	  . ' list pages, ' . scalar(@docmap) . ' doc map pages, ' . scalar(@pending) . ' pending pages');
my $leaf_term = leaf_first_term($leaves[1]);
ok(length($leaf_term) > 0, "second leaf starts with term '$leaf_term'");

my @cases = (
	[ 'metapage', [0], 0.02, "SELECT count(*) FROM docs WHERE body @@& 'common'" ],
	[ 'segment header', \@heads, 0.5, "SELECT count(*) FROM docs WHERE body @@& 'common'" ],
	[ 'dictionary leaf', [ $leaves[1] ], 0.5, "SELECT count(*) FROM docs WHERE body @@& '$leaf_term'" ],
	[ 'posting lists', \@lists, [ map { $_ / 64 } 1 .. 63 ],
		"SELECT count(*) FROM docs WHERE body @@& 'common red'" ],
	[ 'doc map', \@docmap, 0.3, "SELECT count(*) FROM docs WHERE body @@& 'common red'" ],
	[ 'pending area', [ $pending[0] ], 0.5, "SELECT count(*) FROM docs WHERE body @@& 'zebra'" ],
);

for my $case (@cases)
{
	my ($what, $blocks, $where, $query) = @$case;
	damage($blocks, $where);
	$node->start;
	my ($ret, $out, $err) = $node->psql('postgres', "SET enable_seqscan = off; $query",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, "$what: the scan fails");
	like($err, qr/XX002: index "docs_idx" is corrupted/, "$what: reported as index corruption (XX002)");
	is($out, '', "$what: no rows");
	($ret, $out, $err) = $node->psql('postgres', "SELECT gpuidx_verify('docs_idx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/XX002: index "docs_idx" is corrupted/, "$what: gpuidx_verify reports it");
	($ret, $out, $err) = $node->psql('postgres',
		"SET maintenance_work_mem = '1MB'; SELECT gpuidx_verify('docs_idx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/XX002: index "docs_idx" is corrupted/, "$what: and in two passes within maintenance_work_mem");
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$what: the server is still up");
	$node->stop;
}

# undamaged again: everything reads
open(my $fh, '>:raw', $file) or die;
print $fh $clean;
close($fh);
$node->start;
is($node->safe_psql('postgres',
	"SET enable_seqscan = off; SELECT count(*) FROM docs WHERE body @@& 'common red'"), '10000',
	'the restored index answers');
like($node->safe_psql('postgres', "SELECT gpuidx_verify('docs_idx')"), qr/is sound/, 'and is sound');
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no backend crashed');
$node->stop;
done_testing();
