# Counters and block numbers damaged behind valid page checksums: the
# metapage's pending-area counters and blocks, a segment's counts, lengths,
# pages and header block in the metapage, the segment header's counts,
# stream sizes and page table, a pending page's link and an entry's length,
# each rewritten on disk with the page's CRC recomputed, so only the value
# itself is wrong.  Every query shape (@@& count, ids, LIMIT, the pending
# area, through the custom scan and a bitmap scan; ranked through the rank
# scan and the index scan; EXPLAIN; gpuidx_verify, in one pass and in two;
# INSERT; VACUUM) gives XX002, or where the damaged value is not used, the
# undamaged answer: never another error (no huge allocation, no "could not
# open file" from a block past the end), never a sequential scan planned
# because of it, and the server stays up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('counters');
# the index's own checks must meet the damage, not the server's page
# checksums (initdb's default from PostgreSQL 18; older versions ignore this)
$node->init(no_data_checksums => 1);
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE docs (id int PRIMARY KEY, body text);
	INSERT INTO docs
	SELECT g, 'common ' || (ARRAY['red','green','blue','cyan'])[1 + g % 4] || ' word' || (g % 997)
	          || ' item' || g
	FROM generate_series(1, 40000) g;
	CREATE INDEX docs_idx ON docs USING gpuidx (body);
	-- dead docs in the segment, then a pending area of several pages
	DELETE FROM docs WHERE id % 50 = 0;
	VACUUM docs;
	INSERT INTO docs SELECT g, 'pending common red row' || g || repeat(' filler' || g % 7, 5)
	FROM generate_series(40001, 40600) g;
	CHECKPOINT;
});

# each statement alone, with what it answers on the sound index
my @statements = (
	[ plan => q{EXPLAIN (COSTS OFF) SELECT count(*) FROM docs WHERE body @@& 'common red'} ],
	[ count => q{SELECT count(*) FROM docs WHERE body @@& 'common red'} ],
	[ bitmap => q{SET gpuidx.enable_customscan = off; SET enable_seqscan = off;
		SELECT count(*) FROM docs WHERE body @@& 'common red'} ],
	[ ids => q{SELECT sum(id) FROM (SELECT id FROM docs WHERE body @@& 'word7 item7') t} ],
	[ limit => q{SELECT count(*) FROM (SELECT id FROM docs WHERE body @@& 'common red' LIMIT 5) t} ],
	[ pending => q{SELECT count(*) FROM docs WHERE body @@& 'pending filler3'} ],
	[ ranked => q{SELECT string_agg(id::text, ',') FROM (SELECT id FROM docs ORDER BY body <=> 'red word7' LIMIT 10) t} ],
	[ ranked_index => q{SET gpuidx.enable_customscan = off;
		SELECT string_agg(id::text, ',') FROM (SELECT id FROM docs ORDER BY body <=> 'red word7' LIMIT 10) t} ],
	[ verify => q{SELECT gpuidx_verify('docs_idx') ~ 'is sound'} ],
	# the same within 1MB: the table's blocks in two ranges, the lists read for each
	[ verify_in_passes => q{SET maintenance_work_mem = '1MB'; SELECT gpuidx_verify('docs_idx') ~ 'is sound.*in 2 passes'} ],
	[ insert => q{BEGIN; INSERT INTO docs VALUES (100000, 'inserted common red row'); ROLLBACK; SELECT 'inserted'} ],
	[ vacuum => q{VACUUM docs; SELECT 'vacuumed'} ],
);
my @names = map { $_->[0] } @statements;

# a statement's answer ('=' and its output) or its SQLSTATE
sub run
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SET statement_timeout = '20s';\n$sql",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return "=$out" if $ret == 0;
	return $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : "? $err";
}

my ($segments, $dead, $pending_pages) = split /\|/, $node->safe_psql('postgres',
	"SELECT segments, dead_docs, pending_pages FROM gpuidx_index_stats('docs_idx')");
ok($segments == 1 && $dead > 0 && $pending_pages >= 2,
	"one segment with $dead dead docs, a pending area of $pending_pages pages");
my $file = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('docs_idx')");
$node->stop;
my $clean = slurp_file($file);

# the answers of the sound index (its INSERT and VACUUM change it: put back after)
sub restore
{
	open(my $fh, '>:raw', $file) or die "open $file: $!";
	print $fh $_[0];
	close($fh);
}
$node->start;
my %sound = map { $_->[0] => run($_->[1]) } @statements;
like($sound{plan}, qr/Custom Scan \(gpuidx\)/, 'the sound index counts through the custom scan');
is($sound{verify}, '=t', 'and is sound');
is($sound{verify_in_passes}, '=t', 'and is sound checked in two passes within maintenance_work_mem');
$node->stop;
my $BLCKSZ = 8192;
my $CONTENTS = 24;				# MAXALIGN(SizeOfPageHeaderData)
my $SPECIAL = $BLCKSZ - 24;		# GpxPageOpaqueData
my $npages = length($clean) / $BLCKSZ;

# CRC-32C (Castagnoli), as src/codec/crc32c.c
my @crc_table;
for my $i (0 .. 255)
{
	my $c = $i;
	$c = ($c >> 1) ^ (($c & 1) ? 0x82F63B78 : 0) for 1 .. 8;
	$crc_table[$i] = $c;
}

sub crc32c
{
	my ($crc, $bytes) = @_;
	$crc = ~$crc & 0xFFFFFFFF;
	$crc = ($crc >> 8) ^ $crc_table[ ($crc ^ $_) & 0xFF ] for unpack('C*', $bytes);
	return ~$crc & 0xFFFFFFFF;
}

# a page's CRC as store/page.c computes it: from pd_lower to the contents'
# end, then the special space after the CRC field
sub reseal
{
	my ($bytes, $blk) = @_;
	my $page = substr($$bytes, $blk * $BLCKSZ, $BLCKSZ);
	my $lower = unpack('v', substr($page, 12, 2));
	my $crc = crc32c(0, substr($page, 12, $lower - 12));
	$crc = crc32c($crc, substr($page, $SPECIAL + 4, 20));
	substr($$bytes, $blk * $BLCKSZ + $SPECIAL, 4) = pack('V', $crc);
}

sub page_type { return unpack('v', substr($clean, $_[0] * $BLCKSZ + $SPECIAL + 4, 2)); }
sub u32 { return unpack('V', substr($clean, $_[0] * $BLCKSZ + $_[1], 4)); }
sub u64 { return unpack('Q<', substr($clean, $_[0] * $BLCKSZ + $_[1], 8)); }

# the metapage (store/layout.h: GpxMetaPageData, packed from the contents' start)
my %meta = (pend_head => 152, pend_head_off => 156, pend_tail => 164, pend_pages => 168,
	pend_entries => 176, pend_bytes => 184, nsegments => 200, retired_more => 208,
	nretired_more => 212, pend_dl => 224, merge_bytes => 232, merge_docs => 240);
my $seg0 = 248;					# the first GpxSegRef
my %segref = (id => 0, head => 4, ndocs => 8, ndead => 12, nterms => 16, npages => 20,
	npostings => 24, sum_dl => 32, dead_dl => 40);
sub meta_at { return $CONTENTS + $meta{ $_[0] }; }
sub seg_at { return $CONTENTS + $seg0 + $segref{ $_[0] }; }
is(u32(0, meta_at('nsegments')), 1, 'the metapage lists one segment where expected');
is(u32(0, meta_at('pend_pages')), $pending_pages, 'and the pending pages');
is(u32(0, seg_at('ndead')), $dead, 'and the segment\'s dead docs');

# the segment header (GpxSegHeaderData): counts, 9 streams of 16 bytes, the page table
my ($head) = grep { page_type($_) == 3 } 0 .. $npages - 1;
is(u32($head, $CONTENTS + 4), 1, "the segment header is block $head");
is(u32(0, seg_at('head')), $head, 'as the metapage says');
my %hdr = (ndocs => 8, lists_bytes => 64 + 2 * 16 + 8, npages => 224, ntables => 228, table => 232);
is(u32($head, $CONTENTS + $hdr{ndocs}), u32(0, seg_at('ndocs')), 'its doc count where expected');
my $table_pages = u32($head, $CONTENTS + $hdr{npages});
is(u32($head, $CONTENTS + $hdr{ntables}), 0, "its page table of $table_pages pages is in the header");

# the first pending page, which links to the next
my $pend_head = u32(0, meta_at('pend_head'));
isnt(u32($pend_head, $SPECIAL + 16), 0xFFFFFFFF, "the pending area's first page $pend_head links to another");

my $FAR = 2516583188;			# a block far past the end
my $all = join(' ', @names);
# VACUUM with nothing to remove reads the pending area, not the segments
my $segment_readers = 'plan count bitmap ids limit pending ranked ranked_index verify verify_in_passes';
my $pending_readers = "$segment_readers vacuum";
my @cases = (
	# [ what, [ [ block, offset, bytes (pack template), value ], ... ], statements that must fail ]
	[ 'pending entries past what the pages hold', [ [ 0, meta_at('pend_entries'), 'Q<', 1 << 60 ] ], $all ],
	[ 'one pending entry more', [ [ 0, meta_at('pend_entries'), 'Q<', u64(0, meta_at('pend_entries')) + 1 ] ],
		$pending_readers ],
	[ 'pending bytes more', [ [ 0, meta_at('pend_bytes'), 'Q<', u64(0, meta_at('pend_bytes')) + 64 ] ],
		$pending_readers ],
	[ 'pending lengths past what the entries hold', [ [ 0, meta_at('pend_dl'), 'Q<', 1 << 60 ] ], $all ],
	[ 'pending lengths one more', [ [ 0, meta_at('pend_dl'), 'Q<', u64(0, meta_at('pend_dl')) + 1 ] ],
		$pending_readers ],
	[ 'pending pages past the index', [ [ 0, meta_at('pend_pages'), 'V', 1000000000 ] ], $all ],
	[ 'pending head block past the end', [ [ 0, meta_at('pend_head'), 'V', $FAR ] ], $all ],
	[ 'pending tail block past the end', [ [ 0, meta_at('pend_tail'), 'V', $FAR ] ], $all ],
	[ 'segment docs past what its pages hold', [ [ 0, seg_at('ndocs'), 'V', 4000000000 ] ], $all ],
	[ 'segment docs one more', [ [ 0, seg_at('ndocs'), 'V', u32(0, seg_at('ndocs')) + 1 ] ], $segment_readers ],
	[ 'segment dead docs one more', [ [ 0, seg_at('ndead'), 'V', $dead + 1 ] ], 'ranked ranked_index verify verify_in_passes' ],
	[ 'segment dead docs one fewer', [ [ 0, seg_at('ndead'), 'V', $dead - 1 ] ], 'ranked ranked_index verify verify_in_passes' ],
	[ 'segment postings past its docs times its terms', [ [ 0, seg_at('npostings'), 'Q<', 1 << 40 ] ], $all ],
	[ 'segment doc lengths past their tfs', [ [ 0, seg_at('sum_dl'), 'Q<', 1 << 60 ] ], $all ],
	[ 'segment dead docs\' lengths past its docs\'', [ [ 0, seg_at('dead_dl'), 'Q<', u64(0, seg_at('sum_dl')) + 1 ] ],
		$all ],
	[ 'segment pages past the index', [ [ 0, seg_at('npages'), 'V', 1000000000 ] ], $all ],
	[ 'segment pages one more', [ [ 0, seg_at('npages'), 'V', u32(0, seg_at('npages')) + 1 ] ], $segment_readers ],
	[ 'segment header block past the end', [ [ 0, seg_at('head'), 'V', $FAR ] ], $all ],
	[ 'retired-list chain past the end', [ [ 0, meta_at('retired_more'), 'V', $FAR ],
		[ 0, meta_at('nretired_more'), 'V', 1 ] ], $all ],
	[ 'header doc count', [ [ $head, $CONTENTS + $hdr{ndocs}, 'V', 4000000000 ] ], $segment_readers ],
	[ 'header list stream bytes past its pages', [ [ $head, $CONTENTS + $hdr{lists_bytes}, 'Q<', 1 << 40 ] ],
		$segment_readers ],
	[ 'header page table past the end',
		[ map { [ $head, $CONTENTS + $hdr{table} + 4 * $_, 'V', $FAR + $_ ] } 0 .. $table_pages - 1 ], $segment_readers ],
	[ 'pending page link past the end', [ [ $pend_head, $SPECIAL + 16, 'V', $FAR ] ], $pending_readers ],
	[ 'pending entry length', [ [ $pend_head, $CONTENTS + u32(0, meta_at('pend_head_off')), 'V', 0x7FFFFFFF ] ],
		$pending_readers ],
);

for my $case (@cases)
{
	my ($what, $edits, $must) = @$case;
	my $bytes = $clean;
	my %blocks;
	for my $e (@$edits)
	{
		my ($blk, $off, $tmpl, $value) = @$e;
		substr($bytes, $blk * $BLCKSZ + $off, length(pack($tmpl, 0))) = pack($tmpl, $value);
		$blocks{$blk} = 1;
	}
	reseal(\$bytes, $_) for keys %blocks;
	restore($bytes);
	$node->start;

	my %must = map { $_ => 1 } split / /, $must;
	my @wrong;
	my $failed = 0;
	for my $s (@statements)
	{
		my ($name, $sql) = @$s;
		my $got = run($sql);
		if ($must{$name})
		{
			push @wrong, "$name: $got" unless $got eq 'XX002';
		}
		elsif ($got ne 'XX002' && $got ne $sound{$name}
			&& !($name eq 'plan' && $got =~ /docs_idx/ && $got !~ /Seq Scan/))
		{
			push @wrong, "$name: $got";
		}
		$failed++ if $got eq 'XX002';
	}
	is(join('; ', @wrong), '', "$what: XX002 from $failed statements (all of: $must), the others' answers sound");
	my (undef, $up) = $node->psql('postgres', 'SELECT 1');
	is($up, '1', "$what: the server is still up");
	$node->stop('fast', fail_ok => 1);
}

restore($clean);
$node->start;
is(run($statements[1][1]), $sound{count}, 'the restored index answers');
is(run($statements[8][1]), '=t', 'and is sound');
unlike(slurp_file($node->logfile), qr/terminated by signal|could not open file|could not read block/,
	'no backend crashed, no read past the end reached the storage manager');
$node->stop;
done_testing();
