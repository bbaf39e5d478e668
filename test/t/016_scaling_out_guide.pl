# The scaling-out guide, docs/scaling-out.md, run as written (issue 19,
# item 13): its set-up on two shards and a router, then its steps from two
# shards to four.  Each block the guide marks "<!-- run: ... -->" runs, in
# the guide's order, where the marker says: on each first shard, on each new
# shard, on the router (psql, stopping at the first error), or in bash
# (-euo pipefail).  The host names shardN.example and router.example stand
# for this test's servers: "host=shardN.example" is replaced by the
# server's socket directory and port, wherever it appears.
#
# Checked: every block runs without an error; the role the guide creates
# calls through the router, on the first shards and on the new ones; after
# the change every window of every policy is on every shard; the copy of the
# definitions (steps 2 and 3) can run again, and its check fails when a new
# shard differs.  1.0's guide failed: it granted to a role it never created,
# and never created the calling roles on the new shards.
use strict;
use warnings;

use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
BAIL_OUT("PL/Proxy is not installed ($pkglibdir/plproxy.so is missing): "
	  . "apt-get install postgresql-15-plproxy, or run make test as root")
  unless -f "$pkglibdir/plproxy.so";

my $guide = dirname(__FILE__) . '/../../docs/scaling-out.md';

# The blocks to run: [where, text], in the guide's order.
my @blocks;
{
	my @lines = split /\n/, slurp_file($guide);
	for (my $i = 0; $i < @lines; $i++)
	{
		next unless $lines[$i] =~ /^\s*<!-- run: (.*?) -->\s*$/;
		my $where = $1;
		my ($indent) = $lines[ $i + 1 ] =~ /^(\s*)```/
		  or die "the marker at line " . ($i + 1) . " of the guide is not followed by a code block";
		my @text;
		for ($i += 2; $lines[$i] !~ /^\s*```\s*$/; $i++)
		{
			(my $line = $lines[$i]) =~ s/^\Q$indent\E//;
			push @text, $line;
		}
		push @blocks, [ $where, join("\n", @text) . "\n" ];
	}
}
my %kinds = map { $_->[0] => 1 } @blocks;
is(join(', ', sort keys %kinds), 'on each new shard, on each shard, on the router, shell',
	'the guide marks blocks for every kind of server');

my @shards;
foreach my $i (0 .. 3)
{
	my $shard = PostgreSQL::Test::Cluster->new("guide_shard$i");
	$shard->init;
	$shard->append_conf('postgresql.conf', "shared_preload_libraries = 'fixed_window'");
	$shard->start;
	push @shards, $shard;
}
my $router = PostgreSQL::Test::Cluster->new('guide_router');
$router->init;
$router->start;

# The guide's host names, as this test's servers.
sub local_hosts
{
	my ($text) = @_;
	$text =~ s{host=shard(\d)\.example}{'host=' . $shards[$1]->host . ' port=' . $shards[$1]->port}ge;
	$text =~ s{host=router\.example}{'host=' . $router->host . ' port=' . $router->port}ge;
	return $text;
}

# Runs one block where it says; returns whether it ran without an error.
sub run_block
{
	my ($where, $text, $name) = @_;
	my @servers =
	    $where eq 'on each shard' ? @shards[ 0, 1 ]
	  : $where eq 'on each new shard' ? @shards[ 2, 3 ]
	  : $where eq 'on the router' ? ($router)
	  : ();
	$text = local_hosts($text);
	foreach my $server (@servers)
	{
		my ($ret, $out, $err) = $server->psql('postgres', $text,
			on_error_stop => 1, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
		return fail("$name: $err") if $ret != 0;
		note $out;
	}
	if ($where eq 'shell')
	{
		my ($out, $err) = ('', '');
		my $ok = IPC::Run::run([ 'bash', '-euo', 'pipefail', '-c', $text ], '>', \$out, '2>', \$err);
		note $out;
		return fail("$name: $err") unless $ok;
	}
	return pass($name);
}

my $n = 0;
foreach my $block (@blocks)
{
	$n++;
	run_block(@$block, "block $n of the guide runs ($block->[0])");
}

# The role the guide creates calls through the router: its keys reach the
# first shards and the new ones.
is( $router->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE (fw_limit('api', 'user-' || g)).ok),
		       count(DISTINCT fw_shard('api', 'user-' || g, 4))
		FROM generate_series(1, 100) AS g}, extra_params => [ '-U', 'app' ]),
	'100|4', 'the role the guide creates calls through the router, on all four shards');
is( $router->safe_psql('postgres',
		"SELECT string_agg(DISTINCT shards::text, ',') FROM fw_policies"),
	'{0,1,2,3}', 'every window of every policy is on every shard');

# Steps 2 and 3 again: the copy can be repeated; the check catches a shard
# that differs.
my @shell = grep { $_->[0] eq 'shell' } @blocks;
run_block(@$_, 'the copy and its check run again') foreach @shell;
$shards[3]->safe_psql('fw', "SELECT fw_define('stray', 1, '1 hour')");
my ($out, $err) = ('', '');
ok(!IPC::Run::run([ 'bash', '-euo', 'pipefail', '-c', local_hosts($shell[1]->[1]) ], '>', \$out, '2>', \$err),
	'the check fails when a new shard holds other definitions');
like($out, qr/dbname=fw differs from shard0: copy again/, 'saying which');
run_block(@{ $shell[0] }, 'copying again');
run_block(@{ $shell[1] }, 'mends it');

$_->stop foreach ($router, @shards);
done_testing();
