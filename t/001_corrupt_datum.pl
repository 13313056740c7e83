# A postinglist whose stored bytes were damaged on disk, in the heap page and
# in the TOAST table, is reported as corrupt data (XX001) and never decoded;
# the server stays up and the undamaged rows still read.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE lists (id int PRIMARY KEY, p postinglist);
	-- inline in the heap: raw codec, distinctive ids
	INSERT INTO lists VALUES (1, pl_encode('{287454020,1432778632,2578103244}', 'raw'));
	-- out of line in TOAST: 3000 raw ids (12 kB), stored without compression
	INSERT INTO lists SELECT 2, pl_encode(pl_agg(1000000007 + g * 3), 'raw') FROM generate_series(0, 2999) g;
	INSERT INTO lists VALUES (3, '{1,2,3}');
	CHECKPOINT;
});

my $datadir = $node->data_dir;
my $heap = $node->safe_psql('postgres', q{SELECT pg_relation_filepath('lists')});
my $toast = $node->safe_psql('postgres',
	q{SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 'lists'});
$node->stop;

# replace the first occurrence of one little-endian uint32 with another,
# keeping the list sorted so that only the checksum can notice
sub patch_uint32
{
	my ($file, $from, $to) = @_;
	open(my $fh, '+<:raw', $file) or die "open $file: $!";
	local $/;
	my $bytes = <$fh>;
	my $at = index($bytes, pack('V', $from));
	die "pattern not found in $file" if $at < 0;
	seek($fh, $at, 0);
	print $fh pack('V', $to);
	close($fh);
	return $at;
}

patch_uint32("$datadir/$heap", 1432778632, 1432778633);
patch_uint32("$datadir/$toast", 1000000007 + 1500 * 3, 1000000007 + 1500 * 3 + 1);
$node->start;

for my $id (1, 2)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT pl_length(p), p::text FROM lists WHERE id = $id",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, "row $id: reading the damaged list fails");
	like($err, qr/XX001: posting list is corrupt/, "row $id: reported as corrupt data (XX001)");
	like($err, qr/checksum mismatch/, "row $id: the checksum caught it");
	is($out, '', "row $id: nothing decoded");
}

is($node->safe_psql('postgres', "SELECT p::text FROM lists WHERE id = 3"), '{1,2,3}',
	'server still up, undamaged row reads');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT pl_union_agg(p) FROM lists");
like($err, qr/posting list is corrupt/, 'an aggregate over damaged rows fails cleanly');

$node->stop;
done_testing();
