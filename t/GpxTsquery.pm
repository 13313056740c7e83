# Text-search queries of every shape a GIN application writes, made from a
# corpus: the terms of its real co-occurring queries (so AND mostly finds
# rows), runs of consecutive words from its documents (so phrases do) and
# their first words (which a weighted column marks A).  The same seed gives
# the same queries on every machine: the generator draws from its own
# linear congruential sequence, not Perl's rand.
#
# Each query is [shape, function, text]: the function is to_tsquery,
# plainto_tsquery, phraseto_tsquery or websearch_to_tsquery, called with
# the 'english' configuration on the text, so stemming and stop words apply
# as users see them.
package GpxTsquery;

use strict;
use warnings;

use Exporter 'import';

our @EXPORT = qw(tsquery_shapes generate_tsqueries);

# shape => [function, how many, maker]; the makers below
my @shapes = (
	# AND / OR / NOT, up to depth 3
	[ 'and2',            'to_tsquery', 160, sub { join ' & ', $_[0]->cooc(2) } ],
	[ 'and3',            'to_tsquery', 100, sub { join ' & ', $_[0]->cooc(3) } ],
	[ 'or2',             'to_tsquery', 100, sub { join ' | ', $_[0]->cooc(2) } ],
	[ 'and_or',          'to_tsquery', 100, sub { my @t = $_[0]->cooc(3); "$t[0] & ($t[1] | $t[2])" } ],
	[ 'or_of_ands',      'to_tsquery',  80, sub { my @a = $_[0]->cooc(2); my @b = $_[0]->cooc(2); "($a[0] & $a[1]) | ($b[0] & $b[1])" } ],
	[ 'not',             'to_tsquery',  60, sub { '!' . $_[0]->term } ],
	[ 'not_or',          'to_tsquery',  60, sub { my @t = $_[0]->cooc(2); "!$t[0] | $t[1]" } ],
	[ 'and_not',         'to_tsquery', 120, sub { my @t = $_[0]->cooc(2); "$t[0] & !" . ($_[0]->chance(2) ? $t[1] : $_[0]->term) } ],
	[ 'or_and_not_and',  'to_tsquery', 100, sub { my @t = $_[0]->cooc(4); "($t[0] | $t[1]) & !($t[2] & $t[3])" } ],
	[ 'not_of_or',       'to_tsquery',  40, sub { my @t = $_[0]->cooc(3); "$t[0] & !($t[1] | $t[2])" } ],
	[ 'tree3',           'to_tsquery', 240, sub { $_[0]->tree(3) } ],
	# prefixes of 2 to 6 letters of real terms
	[ 'prefix',          'to_tsquery', 100, sub { $_[0]->prefix($_[0]->term) } ],
	[ 'prefix_and',      'to_tsquery',  80, sub { my @t = $_[0]->cooc(2); $_[0]->prefix($t[0]) . " & $t[1]" } ],
	[ 'prefix_or',       'to_tsquery',  60, sub { my @t = $_[0]->cooc(2); $_[0]->prefix($t[0]) . ' | ' . $_[0]->prefix($t[1]) } ],
	[ 'prefix_not',      'to_tsquery',  50, sub { my @t = $_[0]->cooc(2); "$t[0] & !" . $_[0]->prefix($t[1]) } ],
	# phrases of 2 to 4 words
	[ 'phrase2',         'to_tsquery', 100, sub { join ' <-> ', $_[0]->run(2) } ],
	[ 'phrase_gap',      'to_tsquery',  80, sub { $_[0]->gap } ],
	[ 'phrase3',         'to_tsquery',  60, sub { join ' <-> ', $_[0]->run(3) } ],
	[ 'phrase4',         'to_tsquery',  30, sub { join ' <-> ', $_[0]->run(4) } ],
	[ 'phrase_not',      'to_tsquery',  50, sub { my @r = $_[0]->run(2); ($_[0]->chance(3) ? '' : "$r[0] & ") . "!($r[0] <-> $r[1])" } ],
	[ 'phrase_or',       'to_tsquery',  50, sub { my @r = $_[0]->run(2); "($r[0] <-> $r[1]) | " . $_[0]->term } ],
	[ 'phrase_prefix',   'to_tsquery',  30, sub { my @r = $_[0]->run(2); "$r[0] <-> " . $_[0]->prefix($r[1]) } ],
	[ 'phrase_of_or',    'to_tsquery',  30, sub { my @r = $_[0]->run(2); "$r[0] <-> ($r[1] | " . $_[0]->term . ')' } ],
	# weights
	[ 'weight',          'to_tsquery',  60, sub { $_[0]->head . ':' . $_[0]->pick('A', 'A', 'B', 'D') } ],
	[ 'weight_set',      'to_tsquery',  40, sub { ($_[0]->chance(2) ? $_[0]->head : $_[0]->term) . ':' . $_[0]->pick('AB', 'BD', 'AC', 'ABC') } ],
	[ 'weight_prefix',   'to_tsquery',  40, sub { $_[0]->prefix($_[0]->head) . $_[0]->pick('A', 'AB', 'D') } ],
	[ 'weight_and',      'to_tsquery',  40, sub { my ($h, $w) = $_[0]->entry; "$h:A & $w" . $_[0]->pick('', '', ':B', ':D', ':AB') } ],
	[ 'weight_not',      'to_tsquery',  25, sub { '!' . $_[0]->head . ':A' . ($_[0]->chance(2) ? ' & ' . $_[0]->term : '') } ],
	[ 'weight_phrase',   'to_tsquery',  25, sub { my @r = $_[0]->run(2); "$r[0]:" . $_[0]->pick('A', 'B', 'D', 'AB', 'BD') . " <-> $r[1]" } ],
	# edges: stop words, tautologies and contradictions, NOT inside a
	# phrase, <0>, long ORs and ANDs, hyphenated words
	[ 'stopwords',       'to_tsquery',  40, sub { $_[0]->stopwords } ],
	[ 'tautology',       'to_tsquery',  30, sub { my $t = $_[0]->term; $_[0]->pick("$t | !$t", "$t & !$t", "!($t & !$t)", "!!$t", "$t & $t") } ],
	[ 'phrase_neg',      'to_tsquery',  50, sub { $_[0]->phrase_neg } ],
	[ 'or_many',         'to_tsquery',  30, sub { join ' | ', map { $_[0]->term } 1 .. 8 + $_[0]->below(5) } ],
	[ 'and_many',        'to_tsquery',  30, sub { join ' & ', $_[0]->cooc(4 + $_[0]->below(3)) } ],
	[ 'hyphen',          'plainto_tsquery', 30, sub { $_[0]->hyphen } ],
	[ 'hyphen_web',      'websearch_to_tsquery', 20, sub { my $h = $_[0]->hyphen; $_[0]->pick($h, "-$h", "\"$h\"", "$h or " . $_[0]->term) } ],
	# what applications pass from a search box
	[ 'websearch',       'websearch_to_tsquery', 220, sub { $_[0]->websearch } ],
	[ 'plain',           'plainto_tsquery',      100, sub { join ' ', $_[0]->cooc(1 + $_[0]->below(3)) } ],
	[ 'phraseto',        'phraseto_tsquery',     100, sub { join ' ', $_[0]->run(2 + $_[0]->below(3), 1) } ],
);

# shape names in the order generated
sub tsquery_shapes { return map { $_->[0] } @shapes; }

# $queries: [[term, ...], ...], the corpus's queries, terms lower case;
# $texts: [text, ...], documents the phrases come from; $usable: {word => 1}
# for the words, of both, that are not stop words.  Returns [[shape, function, text], ...].
sub generate_tsqueries
{
	my ($seed, $queries, $texts, $usable) = @_;
	my $g = bless { x => $seed & 0x7fffffff, usable => $usable }, __PACKAGE__;
	$g->{queries} = [ grep { @$_ >= 2 } map { [ grep { $usable->{$_} } @$_ ] } @$queries ];
	die 'no queries of two usable terms' unless @{ $g->{queries} };
	$g->{terms} = [ map { @$_ } @{ $g->{queries} } ];

	# runs of plain words separated by single spaces: their positions in
	# to_tsvector are consecutive; a run may hold stop words, the phrases'
	# own ends may not
	for my $text (@$texts)
	{
		my @words = split / /, lc $text;
		my @others = grep { $usable->{$_} } @words[ 1 .. $#words ];
		push @{ $g->{heads} }, [ $words[0], \@others ] if @others && $usable->{ $words[0] };
		my @run;
		for my $w (@words, '')
		{
			push @{ $g->{stops} }, $w if $w =~ /^[a-z]+$/ && !$usable->{$w};
			push @{ $g->{hyphens} }, $w if $w =~ /^[a-z]+-[a-z]+$/;
			if ($w =~ /^[a-z]+$/) { push @run, $w; next; }
			push @{ $g->{runs} }, [@run] if @run >= 5;
			@run = ();
		}
	}
	die 'no runs, stop words or hyphenated words in the texts'
	  unless $g->{runs} && $g->{heads} && $g->{stops} && $g->{hyphens};

	my @out;
	for my $s (@shapes)
	{
		my ($shape, $fn, $n, $make) = @$s;
		my %seen;
		my $tries = 0;
		while (keys %seen < $n && $tries++ < 20 * $n)
		{
			my $q = $make->($g);
			next if $seen{$q}++;
			push @out, [ $shape, $fn, $q ];
		}
	}
	return \@out;
}

# the generator's own sequence (31 bits, the high ones used)
sub below
{
	my ($g, $n) = @_;
	$g->{x} = ($g->{x} * 1103515245 + 12345) & 0x7fffffff;
	return ($g->{x} >> 8) % $n;
}
sub chance { return $_[0]->below($_[1]) == 0; }
sub pick { my $g = shift; return $_[ $g->below(scalar @_) ]; }
sub term { my $g = shift; return $g->{terms}[ $g->below(scalar @{ $g->{terms} }) ]; }
sub head { my $g = shift; return $g->{heads}[ $g->below(scalar @{ $g->{heads} }) ][0]; }

# a document's first word and another of its words
sub entry
{
	my ($g) = @_;
	my ($h, $others) = @{ $g->{heads}[ $g->below(scalar @{ $g->{heads} }) ] };
	return ($h, $others->[ $g->below(scalar @$others) ]);
}

# $n different terms of one real query, topped up from others when it is short
sub cooc
{
	my ($g, $n) = @_;
	my @q = @{ $g->{queries}[ $g->below(scalar @{ $g->{queries} }) ] };
	my @t;
	while (@t < $n)
	{
		my $w = @q ? splice(@q, $g->below(scalar @q), 1) : $g->term;
		push @t, $w unless grep { $_ eq $w } @t;
	}
	return @t;
}

# the first 2 to 6 letters of a term, as a prefix query
sub prefix
{
	my ($g, $w) = @_;
	my $len = 2 + $g->below(5);
	$len = length $w if $len > length $w;
	return substr($w, 0, $len) . ':*';
}

# $n consecutive words of a document, the first and last no stop words
# unless $raw (phraseto_tsquery and quoted websearch take them as typed)
sub run
{
	my ($g, $n, $raw) = @_;
	for (1 .. 50)
	{
		my $r = $g->{runs}[ $g->below(scalar @{ $g->{runs} }) ];
		my $at = $g->below(@$r - $n + 1);
		my @w = @$r[ $at .. $at + $n - 1 ];
		return @w if $raw || $g->{usable}{ $w[0] } && $g->{usable}{ $w[-1] };
	}
	return $g->cooc($n);
}

# a <N> b: two words N apart in a document (N = 2 or 3), or, at times, 1
sub gap
{
	my ($g) = @_;
	my $d = 1 + $g->below(3);
	my @r = $g->run($d + 1);
	return "$r[0] <$d> $r[-1]";
}

# a random tree of & | ! over co-occurring terms, $depth levels at most
sub tree
{
	my ($g, $depth) = @_;
	my @pool = $g->cooc(5);
	my $node;
	$node = sub {
		my ($d) = @_;
		my $e;
		if ($d == 0 || $g->chance(4))
		{
			$e = $pool[ $g->below(scalar @pool) ];
			$e = $g->prefix($e) if $g->chance(12);
		}
		else
		{
			my $op = $g->chance(2) ? ' & ' : ' | ';
			my @kids = map { $node->($d - 1) } 1 .. 2 + $g->chance(4);
			$e = '(' . join($op, @kids) . ')';
		}
		return $g->chance(4) ? "!$e" : $e;
	};
	my $t = $node->($depth);
	return $t;
}

# stop words where to_tsquery drops them: alone, under NOT, in phrases
sub stopwords
{
	my ($g) = @_;
	my $s = $g->{stops}[ $g->below(scalar @{ $g->{stops} }) ];
	my @t = $g->cooc(2);
	return $g->pick($s, "!$s", "$s & $t[0]", "$t[0] & !$s", "$s | $t[0]", "$s <-> $t[0]",
		"$t[0] <-> $s <-> $t[1]", "!($s | $t[0])");
}

# NOT inside a phrase (a followed by anything but b), <0>, phrases of phrases
sub phrase_neg
{
	my ($g) = @_;
	my @r = $g->run(2);
	my $t = $g->term;
	return $g->pick("$r[0] <-> !$r[1]", "!$r[0] <-> $r[1]", "$r[0] <0> $r[0]", "$r[0] <0> $r[1]",
		"($r[0] | $t) <-> $r[1]", "($r[0] <-> $r[1]) & !($r[1] <-> $r[0])", "($r[0] <-> $r[1]) <-> $t",
		"$r[0] <-> ($r[1] & !$t)", "!($r[0] <-> !$r[1])");
}

sub hyphen { my $g = shift; return $g->{hyphens}[ $g->below(scalar @{ $g->{hyphens} }) ]; }

# a search-box string: words, "quoted phrases", or, -excluded
sub websearch
{
	my ($g) = @_;
	my @t = $g->cooc(3);
	my @r = $g->run(2 + $g->below(2), 1);
	my $k = $g->below(8);
	return "$t[0] $t[1]" if $k == 0;
	return '"' . join(' ', @r) . '"' if $k == 1;
	return "$t[0] or $t[1]" if $k == 2;
	return "$t[0] -$t[1]" if $k == 3;
	return '"' . join(' ', @r) . "\" -$t[2]" if $k == 4;
	return "$t[0] or $t[1] -$t[2]" if $k == 5;
	return "-$t[0]" . ($g->chance(2) ? " or $t[1]" : '') if $k == 6;
	return "$t[0] \"" . join(' ', @r) . '" or ' . $t[2];
}

1;
