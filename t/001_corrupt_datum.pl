# A postinglist whose stored bytes were damaged on disk, in the heap page and
# in the TOAST table, is reported as corrupt data (XX001) and never decoded;
# the server stays up and the undamaged rows still read.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('corrupt');
# the postinglist's own checks must meet the damage, not the server's page
# checksums (initdb's default from PostgreSQL 18; older versions ignore this)
$node->init(no_data_checksums => 1);
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	-- values whose damage keeps a valid checksum (see below): stored as they are
	CREATE TABLE crafted (id int PRIMARY KEY, p postinglist);
	ALTER TABLE crafted ALTER p SET STORAGE PLAIN;
	-- raw: 256 ids
	INSERT INTO crafted SELECT 1, pl_encode(pl_agg(10 + 3 * g), 'raw') FROM generate_series(0, 255) g;
	-- EF: pairs 32k, 32k+1: each pair shares a high part, told apart by 4 low bits
	INSERT INTO crafted SELECT 2, pl_encode(pl_agg(32 * (g / 2) + g % 2), 'ef') FROM generate_series(0, 255) g;
	-- LRC: a regular list
	INSERT INTO crafted SELECT 3, pl_encode(pl_agg(7 + 5 * g), 'lrc') FROM generate_series(0, 599) g;
	CREATE TABLE lists (id int PRIMARY KEY, p postinglist);
	-- inline in the heap: raw codec, distinctive ids
	INSERT INTO lists VALUES (1, pl_encode('{287454020,1432778632,2578103244}', 'raw'));
	-- out of line in TOAST: 3000 raw ids (12 kB), stored without compression
	INSERT INTO lists SELECT 2, pl_encode(pl_agg(1000000007 + g * 3), 'raw') FROM generate_series(0, 2999) g;
	INSERT INTO lists VALUES (3, '{1,2,3}');
	CHECKPOINT;
});

my %crafted_hex = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	q{SELECT id || '|' || encode(pl_to_bytea(p), 'hex') FROM crafted ORDER BY id});
my $crafted_file = $node->safe_psql('postgres', q{SELECT pg_relation_filepath('crafted')});
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

# CRC-32C (Castagnoli), as the lists carry it
my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;

sub crc32c
{
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[($crc ^ $_) & 0xFF] ^ ($crc >> 8) for unpack('C*', $_[0]);
	return $crc ^ 0xFFFFFFFF;
}

# damage a stored list in place and give it a valid checksum again, as bytes
# damaged before they were checksummed (or crafted) would be
sub damage_with_checksum
{
	my ($file, $hex, $edit) = @_;
	my $list = pack('H*', $hex);
	open(my $fh, '+<:raw', $file) or die "open $file: $!";
	local $/;
	my $bytes = <$fh>;
	my $at = index($bytes, $list);
	die "list not found in $file" if $at < 0;
	my $damaged = $edit->($list);
	substr($damaged, 12, 4) = pack('V', 0);
	substr($damaged, 12, 4) = pack('V', crc32c($damaged));
	seek($fh, $at, 0);
	print $fh $damaged;
	close($fh);
}

# raw: one id in the middle set to 2^32 - 1 (the review's crash in | and -)
damage_with_checksum("$datadir/$crafted_file", $crafted_hex{1},
	sub { my $l = shift; substr($l, 16 + 100 * 4, 4) = pack('V', 4294967295); $l });
# EF: the low bits of the first pair swapped: 1, 0 instead of 0, 1
damage_with_checksum("$datadir/$crafted_file", $crafted_hex{2}, sub {
	my $l = shift;
	my $data = 16 + 2 * 8;		# header, then first[2] and bitoff[2]
	die 'unexpected EF layout' unless substr($l, $data, 1) eq "\x10";
	substr($l, $data, 1) = "\x01";
	$l });
# LRC: an intercept near 2^63, which a line would overflow from
damage_with_checksum("$datadir/$crafted_file", $crafted_hex{3},
	sub { my $l = shift; substr($l, 16 + 8, 8) = pack('VV', 0xFFFFFFF0, 0x7FFFFFFF); $l });

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

# damage behind a valid checksum: every operation reports it, none decodes it
my %expect = (
	1 => qr/not strictly increasing/,
	2 => qr/not strictly increasing/,
	3 => qr/skip entries or offsets are inconsistent/);
my @operations = (
	'p::text', 'p | q', 'p - q', 'q - p', 'p & q', 'p && q', 'p = p', "pl_encode(p, 'ef')",
	"pl_encode(p, 'lrc')", 'pl_unnest(p)', 'p::bigint[]', 'pl_union(p, q)', 'pl_intersect(p, q, q)',
	'p @> 1', 'pl_union_agg(p)', 'pl_intersect_agg(p)');
for my $id (1, 2, 3)
{
	for my $op (@operations)
	{
		my ($ret, $out, $err) = $node->psql('postgres',
			"SELECT $op FROM crafted, (SELECT pl_range(0, 100000) AS q) r WHERE id = $id",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		ok($ret != 0 && $err =~ /XX001: posting list is corrupt/ && $err =~ $expect{$id},
			"crafted list $id: $op reports corrupt data (XX001)")
		  or diag("ret=$ret out=" . substr($out, 0, 200) . " err=$err");
	}
}
is($node->safe_psql('postgres', "SELECT p::text FROM lists WHERE id = 3"), '{1,2,3}',
	'server still up after every operation on crafted damage');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT pl_union_agg(p) FROM lists");
like($err, qr/posting list is corrupt/, 'an aggregate over damaged rows fails cleanly');

$node->stop;
done_testing();
