# Each index keeps its text search configuration through pg_dump/pg_restore
# and pg_upgrade, whatever gpuidx.text_config says there: a configuration
# given as the option, one taken from the setting at build time (written
# into the options then), and a user-defined one, whose OID pg_upgrade does
# not keep.  After each, every index is used under its own configuration
# and answers as a sequential scan does.
use strict;
use warnings;

use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->start;
$old->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TEXT SEARCH CONFIGURATION public.mycfg (COPY = german);
	CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector);
	INSERT INTO docs VALUES
		(1, 'Die Häuser und die Katzen'), (2, 'the houses and the cats'),
		(3, 'ein Haus am See'), (4, 'a house by the lake'), (5, 'Häuser houses Katze cat running runs');
	INSERT INTO docs SELECT g, 'filler row ' || g || ' house' FROM generate_series(6, 3000) g;
	UPDATE docs SET tsv = to_tsvector('german', body);
	CREATE INDEX docs_de ON docs USING gpuidx (body) WITH (text_config = german);
	SET gpuidx.text_config = 'simple';
	CREATE INDEX docs_simple ON docs USING gpuidx (body);
	RESET gpuidx.text_config;
	CREATE INDEX docs_my ON docs USING gpuidx (lower(body)) WITH (text_config = 'public.mycfg');
	CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
});

# a tsvector index has no configuration to keep (its documents are lexemes
# already; the build writes no text_config for it): only its answers are checked
my %expect = (
	docs_de     => 'pg_catalog.german',
	docs_simple => 'pg_catalog.simple',
	docs_my     => 'public.mycfg');

# each index's configuration, its use under that configuration, its answers
sub check_indexes
{
	my ($node, $db, $label) = @_;
	for my $index (sort keys %expect)
	{
		is($node->safe_psql($db, "SELECT config FROM gpuidx_index_stats('$index')"),
			$expect{$index}, "$label: $index keeps its configuration");
	}
	for my $case ([ 'german', 'body', 'Häuser', 'docs_de' ], [ 'simple', 'body', 'houses', 'docs_simple' ],
		[ 'public.mycfg', 'lower(body)', 'katzen', 'docs_my' ], [ 'english', 'tsv', 'haus', 'docs_tsv' ])
	{
		my ($cfg, $col, $q, $index) = @$case;
		my $set = "SET gpuidx.text_config = '$cfg';";
		my $plan = $node->safe_psql($db,
			"$set SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE $col @@& '$q'");
		# the index's bitmap scan or the custom scan on it, whichever is cheaper
		like($plan, qr/(?:Bitmap Index Scan on|Index:) $index(?:\n|$)/, "$label: under $cfg, '$q' uses $index");
		is($node->safe_psql($db,
				"$set SET enable_seqscan = off; SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE $col @@& '$q'"),
			$node->safe_psql($db,
				"$set SET enable_bitmapscan = off; SET enable_indexscan = off; SET gpuidx.enable_customscan = off;
				SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE $col @@& '$q'"),
			"$label: $index answers as a sequential scan");
	}
}

check_indexes($old, 'postgres', 'built');

# pg_dump, then pg_restore into a database whose setting is another one
my $tmp = tempdir(CLEANUP => 1);
$old->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/dump", '-d', $old->connstr('postgres') ], 'pg_dump');
$old->safe_psql('postgres', q{
	CREATE DATABASE restored;
	ALTER DATABASE restored SET gpuidx.text_config = 'german';});
$old->command_ok([ 'pg_restore', '-d', $old->connstr('restored'), "$tmp/dump" ], 'pg_restore');
check_indexes($old, 'restored', 'restored');
like($old->safe_psql('restored', q{SELECT gpuidx_verify('docs_simple')}), qr/is sound/, 'restored: sound');

# pg_upgrade into a new cluster: the user-defined configuration gets a new OID
my $mycfg_before = $old->safe_psql('postgres', q{SELECT 'public.mycfg'::regconfig::oid});
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$old->stop;
my $bindir = $new->config_data('--bindir');
command_ok(
	[ 'pg_upgrade', '--no-sync', '-d', $old->data_dir, '-D', $new->data_dir,
	  '-b', $bindir, '-B', $bindir, '-s', $new->host, '-p', $old->port, '-P', $new->port ],
	'pg_upgrade');
$new->start;
my $mycfg_after = $new->safe_psql('postgres', q{SELECT 'public.mycfg'::regconfig::oid});
isnt($mycfg_after, $mycfg_before, "the user-defined configuration's OID changed ($mycfg_before -> $mycfg_after)");
check_indexes($new, 'postgres', 'upgraded');
like($new->safe_psql('postgres', q{SELECT gpuidx_verify('docs_my')}), qr/is sound/, 'upgraded: sound');
$new->safe_psql('postgres', q{INSERT INTO docs VALUES (9001, 'neue Katzen im Haus')});
is($new->safe_psql('postgres', q{SET gpuidx.text_config = 'public.mycfg'; SET enable_seqscan = off;
	SELECT id FROM docs WHERE lower(body) @@& 'katze'}), "1\n5\n9001",
	'upgraded: rows inserted afterwards are tokenized under the index\'s configuration');

# the setting's name is looked up by the build: from PostgreSQL 17 under
# search_path = pg_catalog, pg_temp, where public.mycfg needs its schema
my ($ret, $out, $err) = $new->psql('postgres',
	q{SET gpuidx.text_config = 'mycfg'; CREATE INDEX docs_unqualified ON docs USING gpuidx (body)});
if ($new->pg_version >= 17)
{
	like($err, qr/text search configuration "mycfg" does not exist/,
		'an unqualified setting outside pg_catalog: not found by the build');
}
else
{
	is($ret, 0, 'an unqualified setting outside pg_catalog: found through search_path');
	is($new->safe_psql('postgres', q{SELECT config FROM gpuidx_index_stats('docs_unqualified')}),
		'public.mycfg', 'and recorded with its schema');
}

$new->stop;
done_testing();
