# ALTER EXTENSION gpuidx UPDATE from every earlier version makes what a
# fresh CREATE EXTENSION of the default version makes: the extension's
# members, each one's definition (functions, aggregates, types, operators,
# operator classes and families with their members, the access method,
# casts, views), comments, privileges and initial privileges are listed in
# a database where the old version was created and then updated, and in one
# where the default version was created; any difference fails, shown.
#
# Indexes built before the update keep answering: text, tsvector and
# expression indexes built under the old version's objects answer as a
# sequential scan does before the update, after it, and after rows are
# added and merged, and gpuidx_verify finds them sound; after the update
# they also serve what the new version's operator classes add.  After
# pg_upgrade of the cluster the updated databases' objects are still a fresh
# CREATE EXTENSION's and their indexes answer.
#
# Released install scripts are frozen: each one's digest is recorded below,
# and a version other than the default must be one of them (a release adds
# its script's digest here; the next change of the SQL objects starts a new
# version, the default, with its upgrade script, which this test then
# covers).
use strict;
use warnings;

use Cwd qw(getcwd);
use Digest::SHA qw(sha256_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# sha256 of each released version's install script, as installed
my %released = (
	'0.1' => '2531eaab135fb019253802d8f346a10866c631b57d45de72412e268256c12471',
);

my $node = PostgreSQL::Test::Cluster->new('extupdate');
$node->init;
$node->start;

my $default = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'gpuidx'});
my @versions = split /\n/, $node->safe_psql('postgres', q{
	SELECT version FROM pg_available_extension_versions WHERE name = 'gpuidx'
	ORDER BY string_to_array(version, '.')::int[]});
my @old = grep { $_ ne $default } @versions;
note("default version $default; earlier versions: @old");
ok(@old > 0, 'there are earlier versions to update from');

# the installed scripts: released ones unchanged, every earlier version released
my $extdir = $node->config_data('--sharedir') . '/extension';
for my $v (@old)
{
	ok(exists $released{$v}, "version $v is a released one (its digest is recorded)");
}
for my $v (sort keys %released)
{
	ok((grep { $_ eq $v } @versions), "released version $v is installed");
	my $file = "$extdir/gpuidx--$v.sql";
	next unless -f $file;    # a version reached only through update scripts
	is(sha256_hex(slurp_file($file)), $released{$v}, "gpuidx--$v.sql is the script released as $v");
}

# an update path from every earlier version to the default one
my %paths = map { split /\|/, $_, 2 } split /\n/, $node->safe_psql('postgres', qq{
	SELECT source, coalesce(path, '') FROM pg_extension_update_paths('gpuidx') WHERE target = '$default'});
for my $v (@old)
{
	ok(($paths{$v} // '') ne '', "an update path from $v to $default" . ($paths{$v} ? " ($paths{$v})" : ''));
}

# ---------------------------------------------------------------------------
# The extension's members and their definitions, a line each:
# "description => definition".  A member of a catalog this query does not
# know is listed with NO DEFINITION, which fails the test: teach it that
# catalog's definition.
my $members_sql = q{
SELECT replace(line, E'\n', ' ') FROM (
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'gpuidx'),
m AS (
	SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
fam AS (
	SELECT f.oid,
		format('family %s of %s; operators: %s; support: %s', f.opfname, a.amname,
			(SELECT string_agg(format('%s %s (%s, %s) %s%s', o.amopstrategy, o.amopopr::regoperator,
					o.amoplefttype::regtype, o.amoprighttype::regtype,
					CASE o.amoppurpose WHEN 's' THEN 'search' ELSE 'order by' END,
					CASE WHEN o.amopsortfamily <> 0 THEN ' ' || (SELECT sf.opfname FROM pg_opfamily sf WHERE sf.oid = o.amopsortfamily) ELSE '' END),
				', ' ORDER BY o.amopstrategy, o.amoplefttype::regtype::text, o.amoprighttype::regtype::text)
			 FROM pg_amop o WHERE o.amopfamily = f.oid),
			(SELECT string_agg(format('%s (%s, %s) %s', p.amprocnum, p.amproclefttype::regtype,
					p.amprocrighttype::regtype, p.amproc::regprocedure),
				', ' ORDER BY p.amprocnum, p.amproclefttype::regtype::text, p.amprocrighttype::regtype::text)
			 FROM pg_amproc p WHERE p.amprocfamily = f.oid)) AS def
	FROM pg_opfamily f JOIN pg_am a ON a.oid = f.opfmethod)
SELECT pg_describe_object(m.classid, m.objid, m.objsubid) || ' => ' ||
	coalesce(CASE m.classid
	WHEN 'pg_proc'::regclass THEN (
		SELECT CASE WHEN p.prokind = 'a' THEN
			format('aggregate %s(%s) returns %s %s %s %s: %s', p.proname, pg_get_function_arguments(p.oid),
				pg_get_function_result(p.oid), p.provolatile, p.proparallel, p.proisstrict,
				(SELECT row(g.aggkind, g.aggnumdirectargs, g.aggtransfn::oid::regprocedure,
					g.aggfinalfn::oid::regprocedure, g.aggcombinefn::oid::regprocedure,
					g.aggserialfn::oid::regprocedure, g.aggdeserialfn::oid::regprocedure,
					g.aggmtransfn::oid::regprocedure, g.aggminvtransfn::oid::regprocedure,
					g.aggmfinalfn::oid::regprocedure, g.aggfinalextra, g.aggmfinalextra,
					g.aggfinalmodify, g.aggmfinalmodify, g.aggsortop::regoperator,
					g.aggtranstype::regtype, g.aggtransspace, g.aggmtranstype::regtype,
					g.aggmtransspace, g.agginitval, g.aggminitval)::text
				 FROM pg_aggregate g WHERE g.aggfnoid = p.oid))
		ELSE pg_get_functiondef(p.oid) END || format(' acl %s', p.proacl)
		FROM pg_proc p WHERE p.oid = m.objid)
	WHEN 'pg_type'::regclass THEN (
		SELECT row(t.typname, t.typtype, t.typlen, t.typbyval, t.typcategory, t.typispreferred,
			t.typisdefined, t.typdelim, t.typrelid::regclass, t.typelem::regtype, t.typarray::regtype,
			t.typinput::oid::regprocedure, t.typoutput::oid::regprocedure,
			t.typreceive::oid::regprocedure, t.typsend::oid::regprocedure,
			t.typmodin::oid::regprocedure, t.typmodout::oid::regprocedure,
			t.typanalyze::oid::regprocedure, t.typalign, t.typstorage, t.typnotnull,
			t.typbasetype::regtype, t.typtypmod, t.typndims, t.typcollation, t.typdefault, t.typacl)::text
		FROM pg_type t WHERE t.oid = m.objid)
	WHEN 'pg_operator'::regclass THEN (
		SELECT row(o.oprname, o.oprkind, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype,
			o.oprcom::regoperator, o.oprnegate::regoperator, o.oprcode::oid::regprocedure,
			o.oprrest::oid::regprocedure, o.oprjoin::oid::regprocedure, o.oprcanmerge, o.oprcanhash)::text
		FROM pg_operator o WHERE o.oid = m.objid)
	WHEN 'pg_opclass'::regclass THEN (
		SELECT format('class %s of %s for %s default %s key %s in %s', c.opcname, a.amname,
			c.opcintype::regtype, c.opcdefault, c.opckeytype::regtype, fam.def)
		FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod JOIN fam ON fam.oid = c.opcfamily
		WHERE c.oid = m.objid)
	WHEN 'pg_opfamily'::regclass THEN (SELECT fam.def FROM fam WHERE fam.oid = m.objid)
	WHEN 'pg_am'::regclass THEN (
		SELECT row(a.amname, a.amtype, a.amhandler::oid::regprocedure)::text
		FROM pg_am a WHERE a.oid = m.objid)
	WHEN 'pg_cast'::regclass THEN (
		SELECT row(c.castsource::regtype, c.casttarget::regtype, c.castfunc::regprocedure,
			c.castcontext, c.castmethod)::text
		FROM pg_cast c WHERE c.oid = m.objid)
	WHEN 'pg_class'::regclass THEN (
		SELECT format('%s %s acl %s options %s columns %s%s', c.relname, c.relkind, c.relacl, c.reloptions,
			(SELECT string_agg(format('%s %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
			 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
			CASE WHEN c.relkind IN ('v', 'm') THEN ' view ' || pg_get_viewdef(c.oid) ELSE '' END)
		FROM pg_class c WHERE c.oid = m.objid)
	END, 'NO DEFINITION (' || m.classid::regclass::text || ')') ||
	coalesce(' comment ' || (SELECT string_agg(format('%s: %s', d.objsubid, d.description), '; ' ORDER BY d.objsubid)
		FROM pg_description d WHERE d.classoid = m.classid AND d.objoid = m.objid), '') ||
	coalesce(' initprivs ' || (SELECT string_agg(format('%s: %s %s', i.objsubid, i.privtype, i.initprivs), '; ' ORDER BY i.objsubid)
		FROM pg_init_privs i WHERE i.classoid = m.classid AND i.objoid = m.objid), '')
FROM m
UNION ALL
SELECT format('extension %s => version %s relocatable %s schema %s config %s condition %s',
	e.extname, e.extversion, e.extrelocatable, e.extnamespace::regnamespace,
	e.extconfig::regclass[], e.extcondition)
FROM pg_extension e WHERE e.extname = 'gpuidx'
) s(line)
};

sub members
{
	my ($db) = @_;
	my %def;
	for my $line (split /\n/, $node->safe_psql($db, $members_sql))
	{
		my ($key, $val) = split / => /, $line, 2;
		die "member listed twice in $db: $key" if exists $def{$key};
		$def{$key} = $val // '';
	}
	return \%def;
}

# ---------------------------------------------------------------------------
# Tables and indexes as a user of an earlier version made them

my $setup = q{
	CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector, pl postinglist);
	INSERT INTO docs (id, body)
	SELECT g, (SELECT string_agg((ARRAY['house', 'cat', 'lake', 'river', 'stone', 'bread', 'garden',
			'window', 'music', 'paper', 'winter', 'summer', 'horse', 'mountain', 'letter',
			'silver', 'morning', 'island', 'forest', 'engine'])[1 + abs(hashint8(g::bigint * 100 + k) % 20)], ' ')
		FROM generate_series(1, 4 + g % 9) k)
	FROM generate_series(1, 4000) g;
	UPDATE docs SET tsv = to_tsvector('english', body),
		pl = ARRAY[id, id + 10, id * 3]::postinglist;
	CREATE INDEX docs_body ON docs USING gpuidx (body) WITH (text_config = english);
	CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
	CREATE INDEX docs_lower ON docs USING gpuidx (lower(body)) WITH (freqs = off);
	INSERT INTO docs (id, body, tsv) VALUES
		(5001, 'the pending river', to_tsvector('english', 'the pending river')),
		(5002, 'a pending lake house', to_tsvector('english', 'a pending lake house'));
	ANALYZE docs;
};

my $seqscan = 'SET enable_indexscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;';

# a query's ids through the index (its plan must use it) and through a sequential scan
sub same_as_seqscan
{
	my ($db, $label, $index, $where) = @_;
	my $q = "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE $where";
	my $plan = $node->safe_psql($db, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) $q");
	like($plan, qr/(?:Bitmap Index Scan on|Index:|Index Scan using) $index\b/, "$label: $where uses $index");
	my $got = $node->safe_psql($db, "SET enable_seqscan = off; $q");
	my $want = $node->safe_psql($db, "$seqscan $q");
	is($got, $want, "$label: $where answers as a sequential scan");
	isnt($want, '', "$label: $where finds rows");
	return $got;
}

# the best scores of a ranked query through the index and through a sequential scan
sub ranked_as_seqscan
{
	my ($db, $label, $index, $col, $query) = @_;
	my $q = "SELECT string_agg(s::text, ',' ORDER BY s) FROM (SELECT round(($col <=> $query)::numeric, 9) AS s
		FROM docs ORDER BY $col <=> $query LIMIT 20) t";
	my $plan = $node->safe_psql($db, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) $q");
	like($plan, qr/(?:Index Scan using|Index:) $index\b/, "$label: ORDER BY $col <=> $query uses $index");
	is($node->safe_psql($db, "SET enable_seqscan = off; $q"), $node->safe_psql($db, "$seqscan $q"),
		"$label: ORDER BY $col <=> $query ranks as a sequential scan");
}

# what every version answers, through the three indexes
sub old_queries
{
	my ($db, $label) = @_;
	my %got;
	for my $case ([ 'docs_body', q{body @@& 'houses cat'} ], [ 'docs_body', q{body @@& 'pending'} ],
		[ 'docs_tsv', q{tsv @@& 'lake river'} ], [ 'docs_tsv', q{tsv @@& 'garden'} ],
		[ 'docs_lower', q{lower(body) @@& 'stone window'} ])
	{
		$got{ $case->[1] } = same_as_seqscan($db, $label, @$case);
	}
	ranked_as_seqscan($db, $label, 'docs_tsv', 'tsv', q{'horse summer'::text});
	ranked_as_seqscan($db, $label, 'docs_body', 'body', q{'music'::text});
	is($node->safe_psql($db, q{SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE pl @> 30::bigint}),
		'10,20,30', "$label: a postinglist column reads");
	return \%got;
}

# the extension's members in a database, against those of a fresh CREATE
# EXTENSION ($want): every difference shown
my $want;
sub same_members
{
	my ($db, $label) = @_;
	my $got = members($db);
	my @missing = grep { !exists $got->{$_} } sort keys %$want;
	my @extra = grep { !exists $want->{$_} } sort keys %$got;
	my @differ = grep { exists $got->{$_} && $got->{$_} ne $want->{$_} } sort keys %$want;
	ok(!@missing, "$label: no member of a fresh $default missing")
	  or diag("missing in $db:\n" . join("\n", map { "  $_ => $want->{$_}" } @missing));
	ok(!@extra, "$label: no member a fresh $default lacks")
	  or diag("left over in $db:\n" . join("\n", map { "  $_ => $got->{$_}" } @extra));
	ok(!@differ, "$label: every member defined as in a fresh $default")
	  or diag(join("\n", map { "$_\n  in $db: $got->{$_}\n  fresh: $want->{$_}" } @differ));
}

my $fresh = 'fresh';
$node->safe_psql('postgres', "CREATE DATABASE $fresh");
$node->safe_psql($fresh, 'CREATE EXTENSION gpuidx');
is($node->safe_psql($fresh, q{SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'}),
	$default, "CREATE EXTENSION makes version $default");
$want = members($fresh);
ok(keys %$want > 50, scalar(keys %$want) . " members in a fresh $default");
for my $key (sort keys %$want)
{
	unlike($want->{$key}, qr/^NO DEFINITION/, "the test knows the definition of $key");
}

for my $v (@old)
{
	(my $db = "from_$v") =~ s/\W/_/g;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION gpuidx VERSION '$v'");
	$node->safe_psql($db, $setup);
	my $before = old_queries($db, "under $v");
	is($node->safe_psql($db, q{SELECT docs + pending_entries FROM gpuidx_index_stats('docs_tsv')}),
		'4002', "under $v: this library's gpuidx_index_stats answers through the old definition");

	$node->safe_psql($db, 'ALTER EXTENSION gpuidx UPDATE');
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'}),
		$default, "$v updated to $default");

	# the same members, each defined the same
	same_members($db, "$v updated");

	# the indexes built before answer as they did, and serve what the update added
	my $after = old_queries($db, "$v updated");
	is_deeply($after, $before, "$v updated: the same answers as before the update");
	same_as_seqscan($db, "$v updated", 'docs_tsv', q{tsv @@ to_tsquery('english', 'lake & !river')});
	same_as_seqscan($db, "$v updated", 'docs_tsv', q{tsv @@ to_tsquery('english', '(horse | cat) & summer')});
	ranked_as_seqscan($db, "$v updated", 'docs_tsv', 'tsv', q{to_tsquery('english', 'horse & summer')});
	is($node->safe_psql($db, q{SELECT position_bytes IS NULL FROM gpuidx_index_stats('docs_body')}),
		't', "$v updated: gpuidx_index_stats has its new column");

	# rows written into them afterwards, merged, found
	$node->safe_psql($db, q{
		INSERT INTO docs (id, body, tsv) VALUES
			(6001, 'updated houses by the lake', to_tsvector('english', 'updated houses by the lake')),
			(6002, 'an updated stone window', to_tsvector('english', 'an updated stone window'));
		DELETE FROM docs WHERE id % 97 = 0;
		VACUUM docs;});
	same_as_seqscan($db, "$v updated, written", 'docs_body', q{body @@& 'updated house'});
	same_as_seqscan($db, "$v updated, written", 'docs_lower', q{lower(body) @@& 'stone window'});
	$node->safe_psql($db, q{SELECT gpuidx_merge_pending(i) FROM unnest(ARRAY['docs_body', 'docs_tsv', 'docs_lower']::regclass[]) i});
	same_as_seqscan($db, "$v updated, merged", 'docs_tsv', q{tsv @@& 'updated lake'});
	same_as_seqscan($db, "$v updated, merged", 'docs_tsv', q{tsv @@ to_tsquery('english', 'updat:* & !window')});
	for my $index (qw(docs_body docs_tsv docs_lower))
	{
		like($node->safe_psql($db, "SELECT gpuidx_verify('$index')"), qr/is sound/, "$v updated: $index is sound");
	}
}

# pg_upgrade of the cluster: the updated databases' objects come through as
# a fresh CREATE EXTENSION's there (the members an update adds to an
# operator family are dumped apart from its class's), and their indexes
# answer as a sequential scan
my @updated = map { (my $db = "from_$_") =~ s/\W/_/g; $db } @old;
my $new = PostgreSQL::Test::Cluster->new('extupdate_new');
$new->init;
$node->stop;
my $bindir = $new->config_data('--bindir');
# where pg_upgrade leaves its scripts
my $cwd = getcwd();
chdir(PostgreSQL::Test::Utils::tempdir()) or die "chdir: $!";
command_ok(
	[ 'pg_upgrade', '--no-sync', '-d', $node->data_dir, '-D', $new->data_dir,
	  '-b', $bindir, '-B', $bindir, '-s', $new->host, '-p', $node->port, '-P', $new->port ],
	'pg_upgrade of a cluster with updated databases');
chdir($cwd) or die "chdir: $!";
$node = $new;
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE fresh_after');
$node->safe_psql('fresh_after', 'CREATE EXTENSION gpuidx');
$want = members('fresh_after');
for my $db ('fresh', @updated)
{
	same_members($db, "$db after pg_upgrade");
}
for my $db (@updated)
{
	same_as_seqscan($db, "$db after pg_upgrade", 'docs_body', q{body @@& 'updated house'});
	same_as_seqscan($db, "$db after pg_upgrade", 'docs_tsv', q{tsv @@ to_tsquery('english', 'lake & !river')});
	ranked_as_seqscan($db, "$db after pg_upgrade", 'docs_tsv', 'tsv', q{'horse summer'::text});
	like($node->safe_psql($db, "SELECT gpuidx_verify('docs_tsv')"), qr/is sound/, "$db after pg_upgrade: docs_tsv is sound");
}

$node->stop;
done_testing();
