# Scans while VACUUM works: ranked (ORDER BY body <=> q LIMIT 10, through
# the rank custom scan and the plain index scan) and @@& queries (count, the
# first rows, every id, through the custom scan and a bitmap scan) from
# several clients, on a primary and on its hot standby, while another client
# deletes rows, inserts them back and VACUUMs in a loop, so that docs are
# marked dead under the scans, the pending area is merged, segments are
# merged and rewritten and pages recycled.  Nothing may look like damage: no
# "index is corrupted" (XX002) anywhere; on the standby at most a scan
# cancelled because pages it was to read were recycled (40001), or in a
# deadlock with the replay of VACUUM's locks (40P01), which pgbench
# retries; gpuidx_verify on the standby meanwhile finds it sound or
# is cancelled so.  At rest, both answer as a sequential scan and
# gpuidx_verify finds the index sound.
#
# GCIDE's first 20,000 entries and its real queries when the corpus is
# there (GPUIDX_DATA, default ~/.cache/gpuidx-data), generated text
# otherwise.  GPUIDX_LOAD_SECONDS sets the load's length (default 30).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use GpxLoad;
use Time::HiRes qw(time usleep);

my $data = $ENV{GPUIDX_DATA} // "$ENV{HOME}/.cache/gpuidx-data";
my $docs_file = "$data/gcide/docs.tsv";
my $queries_file = "$data/gcide/queries.tsv";
my $real = -r $docs_file && -r $queries_file;
BAIL_OUT("corpus gcide not found under $data, and GPUIDX_REQUIRE_CORPUS is set")
  if !$real && ($ENV{GPUIDX_REQUIRE_CORPUS} // '') eq '1';
diag("NOTICE: corpus 'gcide' not found under $data: generated text") unless $real;
my $seconds = $ENV{GPUIDX_LOAD_SECONDS} // 30;
my $ndocs = 20000;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
autovacuum = off
max_connections = 40
log_line_prefix = '%m [%p] %e '
max_wal_size = 1GB
});
$primary->start;

$primary->safe_psql('postgres', 'CREATE EXTENSION gpuidx');
if ($real)
{
	$primary->safe_psql('postgres', qq{
		CREATE TABLE src (id int, body text);
		COPY src FROM PROGRAM 'head -n $ndocs $docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
		CREATE TABLE qsrc (id int, terms text);
		COPY qsrc FROM '$queries_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
		CREATE TABLE queries AS
			SELECT row_number() OVER (ORDER BY id)::int AS n, terms FROM qsrc WHERE id % 25 = 0;
		DROP TABLE qsrc;
	});
}
else
{
	# words of a skewed vocabulary, a row's words fixed by its id
	$primary->safe_psql('postgres', 'CREATE TABLE src AS ' . skewed_text_sql($ndocs, 40, 64) . qq{;
		CREATE TABLE queries AS
			SELECT g AS n, 'w' || (g % 40) || ' w' || (g * 7 % 300) || CASE WHEN g % 3 = 0 THEN ' w' || g ELSE '' END AS terms
			FROM generate_series(1, 400) g;
	});
}
$primary->safe_psql('postgres', q{
	ALTER TABLE src ADD PRIMARY KEY (id);
	ALTER TABLE queries ADD PRIMARY KEY (n);
	-- tsv: the reference's documents, so that it needs no tokenizing
	CREATE TABLE docs (id int PRIMARY KEY, body text,
	                   tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED);
	INSERT INTO docs (id, body) SELECT * FROM src;
	CREATE INDEX docs_gpx ON docs USING gpuidx (body) WITH (pending_list_limit = 64);
	VACUUM ANALYZE docs;

	-- a ranked query's top 10 ids: the rank custom scan, the index scan,
	-- or (seq) a sort by the index's scores of the tsvectors, ties in TID order
	CREATE FUNCTION ranked(qn int, how text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE q text; r text;
	BEGIN
		SELECT terms INTO q FROM queries WHERE n = qn;
		PERFORM set_config('gpuidx.enable_customscan', (how = 'custom')::text, true);
		EXECUTE format(CASE how WHEN 'seq' THEN
			'SELECT string_agg(id::text, '','' ORDER BY s DESC, ctid) FROM (SELECT id, ctid,
			 gpuidx_bm25(tsv, %L, ''docs_gpx'') AS s FROM docs ORDER BY 3 DESC, ctid LIMIT 10) t'
			ELSE 'SELECT string_agg(id::text, '','' ORDER BY o) FROM (SELECT id, row_number() OVER () AS o
			      FROM (SELECT id FROM docs ORDER BY body <=> %L LIMIT 10) t) u' END, q) INTO r;
		RETURN coalesce(r, '-');
	END $$;
	-- a @@& query's count, first 5 rows or every id: the custom scan, a
	-- bitmap scan, or (seq) the operator on each row's tsvector
	CREATE FUNCTION matches(qn int, what text, how text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE q text; r text; doc text := CASE WHEN how = 'seq' THEN 'tsv' ELSE 'body' END;
	BEGIN
		SELECT terms INTO q FROM queries WHERE n = qn;
		PERFORM set_config('gpuidx.enable_customscan', (how = 'custom')::text, true);
		PERFORM set_config('enable_seqscan', (how = 'seq')::text, true);
		PERFORM set_config('enable_bitmapscan', (how <> 'seq')::text, true);
		EXECUTE format(CASE what
			WHEN 'count' THEN 'SELECT count(*)::text FROM docs WHERE %I @@& %L'
			WHEN 'limit' THEN 'SELECT string_agg(id::text, '','') FROM (SELECT id FROM docs WHERE %I @@& %L LIMIT 5) t'
			ELSE 'SELECT string_agg(id::text, '','' ORDER BY id) FROM docs WHERE %I @@& %L' END, doc, q) INTO r;
		RETURN coalesce(r, '-');
	END $$;
});
my $nqueries = $primary->safe_psql('postgres', 'SELECT count(*) FROM queries');
note("$ndocs documents, $nqueries queries (" . ($real ? 'gcide' : 'generated') . ')');

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
# replay waits for the scans it conflicts with rather than cancel them: the
# standby's scans then meet what replay does to the index under them
$standby->append_conf('postgresql.conf', q{
max_standby_streaming_delay = -1
});
$standby->start;
$primary->wait_for_catchup($standby);

# the scripts: one writer on the primary; readers of every query shape
my $dir = $primary->basedir;
my $writer = "$dir/writer.sql";
open(my $fh, '>', $writer) or die;
print $fh "\\set a random(1, $ndocs)\n";
print $fh "DELETE FROM docs WHERE id BETWEEN :a AND :a + 120;\n";
print $fh "INSERT INTO docs (id, body) SELECT * FROM src WHERE id BETWEEN :a + 60 AND :a + 180 ON CONFLICT (id) DO NOTHING;\n";
print $fh "VACUUM docs;\n";
close($fh);
my $reader = "$dir/reader.sql";
open($fh, '>', $reader) or die;
print $fh "\\set q random(1, $nqueries)\n";
print $fh "SELECT ranked(:q, 'custom');\n";
print $fh "SELECT ranked(:q, 'index');\n";
print $fh "SELECT matches(:q, 'count', 'custom');\n";
print $fh "SELECT matches(:q, 'limit', 'custom');\n";
print $fh "SELECT matches(:q, 'ids', 'custom');\n";
print $fh "SELECT matches(:q, 'count', 'bitmap');\n";
print $fh "SELECT matches(:q, 'ids', 'bitmap');\n";
close($fh);

my $t0 = time;
my $writes = start_load($primary, $writer, 1, $seconds);
my $primary_reads = start_load($primary, $reader, 3, $seconds);
# a standby's scans may be cancelled when pages they read are recycled (40001): retried
my $standby_reads = start_load($standby, $reader, 3, $seconds, '--max-tries=1000', '--verbose-errors');

# gpuidx_verify on the standby meanwhile: sound, or cancelled (40001)
my ($verified, $cancelled) = (0, 0);
my @verify_errors;
while (time - $t0 < $seconds - 5)
{
	my ($ret, $out, $err) = $standby->psql('postgres', "SELECT gpuidx_verify('docs_gpx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	if ($ret == 0 && $out =~ /is sound/) { $verified++; }
	elsif ($err =~ /ERROR:  40001/) { $cancelled++; }
	else { push @verify_errors, $err; }
	usleep(500_000);
}
my $output = finish_load($writes, 'the writer (DELETE, INSERT, VACUUM)');
$output .= finish_load($primary_reads, 'ranked and @@& queries on the primary');
$output .= finish_load($standby_reads, 'ranked and @@& queries on the standby');
is(scalar(@verify_errors), 0, "gpuidx_verify on the standby under load: $verified times sound, $cancelled cancelled, no other error")
  or diag(join("\n", @verify_errors));
cmp_ok($verified, '>', 0, 'and it finished at least once');

unlike($output, qr/XX002|is corrupted/, 'no client saw an index reported corrupted');
for my $node ($primary, $standby)
{
	my $log = slurp_file($node->logfile);
	unlike($log, qr/XX002|is corrupted/, $node->name . ': no "index is corrupted" in the server log');
	# On the standby, VACUUM's AccessExclusiveLock on the index is replayed
	# and held to the end of its transaction (the primary releases it when
	# done with the index), and then the table's, when VACUUM truncates the
	# heap: a standby query that holds the table while it waits for the
	# index deadlocks with the replay (40P01), a recovery conflict like
	# 40001, retried as it is.
	my $conflicts = $node->name eq 'standby' ? qr/ (40001|40P01) ERROR:/ : qr/ 40001 ERROR:/;
	my @other = grep { !/$conflicts/ } ($log =~ /^.* [0-9A-Z]{5} ERROR: .*$/mg);
	is(scalar(@other), 0, $node->name . ': no error but scans cancelled for recycled pages (40001) or by the replay\'s locks (40P01)')
	  or diag(join("\n", @other[ 0 .. ($#other < 9 ? $#other : 9) ]));
	unlike($log, qr/terminated by signal/, $node->name . ': no backend crashed');
}

# at rest: the index answers as a sequential scan, on both
$primary->wait_for_catchup($standby);
my $spot = "SELECT count(*) FROM (SELECT q, ranked(q, 'seq') AS top, matches(q, 'count', 'seq') AS n,
	matches(q, 'ids', 'seq') AS ids FROM generate_series(1, $nqueries) q WHERE q % 10 = 0) s WHERE ";
$spot .= join(' OR ',
	"ranked(q, 'custom') <> top",
	"ranked(q, 'index') <> top",
	"matches(q, 'count', 'custom') <> n",
	"matches(q, 'count', 'bitmap') <> n",
	"matches(q, 'ids', 'custom') <> ids",
	"matches(q, 'ids', 'bitmap') <> ids",
	"NOT string_to_array(matches(q, 'limit', 'custom'), ',') <@ string_to_array(ids, ',')");
for my $node ($primary, $standby)
{
	is($node->safe_psql('postgres', $spot), '0',
		$node->name . ': at rest, ranked and @@& answers equal a sequential scan\'s');
	like($node->safe_psql('postgres', "SELECT gpuidx_verify('docs_gpx')"), qr/is sound/,
		$node->name . ': gpuidx_verify finds the index sound');
}
# rows changed on a few pages since the last VACUUM: a count counts from
# the index the doc map chunks whose rows lie on all-visible pages, and
# reads the rows of the others; the same answers as a sequential scan
$primary->safe_psql('postgres', q{
	DELETE FROM docs WHERE id % 500 = 7;
	INSERT INTO docs (id, body) SELECT * FROM src WHERE id % 500 = 7;
});
is($primary->safe_psql('postgres', $spot), '0',
	'primary: with pages not all-visible, @@& answers equal a sequential scan\'s');
my $common = $primary->safe_psql('postgres',
	"SELECT terms FROM queries WHERE n <= 50 ORDER BY matches(n, 'count', 'seq')::int DESC, n LIMIT 1");
my $plan = $primary->safe_psql('postgres', qq{
	SET enable_seqscan = off;
	EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM docs WHERE body @@& '$common';
});
like($plan, qr/Heap Fetches: [1-9].*Counted in Index: [1-9]/s,
	'a count with pages not all-visible reads some rows and counts the others from the index');

my $stats = $primary->safe_psql('postgres', "SELECT segments || ' segments, ' || dead_docs || ' dead docs' FROM gpuidx_index_stats('docs_gpx')");
note("after the load: $stats, " . sprintf('%.0f s', time - $t0));

$standby->stop;
$primary->stop;
done_testing();
