# Scaling out on servers of their own: three shards and a router set up
# as a production fleet is (each shard its own server with fixed_window
# preloaded, the router another), then three shards to four.  The docs
# layer (scripts/run_docs.py) runs docs/scaling-out.md as written, its shards
# databases of one server; this test runs the same steps across servers, the
# connection strings naming hosts, and takes from the guide its Python (the
# block after "<!-- run: python -->"), whose functions, asked for the shards
# of 1,000 keys, must answer as the router does.  Each block below runs where
# its marker says: on each first shard, on the new shard, on the router
# (psql, stopping at the first error), in bash (-euo pipefail).  The host
# names shardN.example and router.example stand for this test's servers:
# "host=shardN.example" is replaced by the server's socket directory and
# port, wherever it appears.
#
# Checked: every block runs without an error; the role created calls through
# the router, on the first shards and on the new one; after the change every
# window of every policy is on every shard; the copy of the definitions
# (steps 2 and 3 of the guide's "Adding shards") can run again, and its check
# fails when a new shard differs.
#
# The keys the change moves, measured through the routers as a caller sees
# them: before the change 1,000 keys spend their one token, after it the keys
# admitted again are those whose counter is now on another shard.  A new
# router routes by jump consistent hashing: from 3 to 4 shards about a
# quarter of the keys move, every one to the new shard.  A router that keeps
# 1.2's modulo (one updated from 1.2, or told to, as the guide says) moves
# about three quarters, two thirds of them between old shards.
use strict;
use warnings;

use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

require_plproxy();

my $guide = dirname(__FILE__) . '/../../docs/scaling-out.md';

# The steps on servers of their own; "<!-- the guide's python -->" stands
# for the guide's Python block.
my $steps = <<'STEPS';
<!-- run: on each shard -->
```sql
-- postgresql.conf: shared_preload_libraries = 'fixed_window', then restart
CREATE DATABASE fw;
CREATE ROLE app LOGIN;                 -- every role that calls through the router
\c fw
CREATE EXTENSION fixed_window;         -- version 1.3 or later, in the schema the router uses (public here)
```

<!-- run: on the router -->
```sql
CREATE EXTENSION fixed_window_proxy CASCADE;          -- also creates plproxy
CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (
    modular_mapping '1',                              -- any number of shards, not only 2^k
    p0 'host=shard0.example dbname=fw',
    p1 'host=shard1.example dbname=fw',
    p2 'host=shard2.example dbname=fw');
CREATE USER MAPPING FOR PUBLIC SERVER fw_shards;      -- each role reaches the shards as itself
CREATE ROLE app LOGIN;
GRANT USAGE ON FOREIGN SERVER fw_shards TO app;

SELECT fw_define('api', 100, '1 minute');             -- defined on every shard
SELECT * FROM fw_limit('api', 'user-42');             -- answered by the key's shard
SELECT * FROM fw_shards;                              -- shard, connstr
```

<!-- run: on the router -->
```sql
CREATE ROLE policy_admin NOLOGIN;
GRANT EXECUTE ON FUNCTION
    fw_define(text, integer, interval, timestamptz, integer, boolean, text),
    fw_undefine(text, interval), fw_override(text, text, integer, interval, integer),
    fw_exempt(text, text), fw_unoverride(text, text, interval),
    fw_each_shard(text, text, text, integer, interval, timestamptz, integer, boolean, text),
    fw_route_definition(integer, text, text, text, integer, interval, timestamptz, integer, boolean, text)
TO policy_admin;
```

<!-- the guide's python -->

<!-- run: on each new shard -->
```sql
-- postgresql.conf: shared_preload_libraries = 'fixed_window', then restart
CREATE DATABASE fw;
CREATE ROLE app LOGIN;
\c fw
CREATE EXTENSION fixed_window;
```

<!-- run: shell -->
```sh
for new in "host=shard3.example dbname=fw"; do
    { echo 'TRUNCATE fw_policy, fw_override;'
      pg_dump --data-only --table=fw_policy --table=fw_override -d "host=shard0.example dbname=fw"
    } | psql -X -q -v ON_ERROR_STOP=1 --single-transaction -d "$new"
done
```

<!-- run: shell -->
```sh
definitions() {
    psql -X -At -d "$1" -c 'TABLE fw_policy ORDER BY name, period_id' \
                        -c 'TABLE fw_override ORDER BY name, key, period_id'
}
for new in "host=shard3.example dbname=fw"; do
    diff <(definitions "host=shard0.example dbname=fw") <(definitions "$new") ||
        { echo "$new differs from shard0: copy again"; exit 1; }
done
```

<!-- run: on the router -->
```sql
ALTER SERVER fw_shards OPTIONS (ADD p3 'host=shard3.example dbname=fw');
```

<!-- run: on the router -->
```sql
SELECT name, period, shards FROM fw_policies;     -- shards = {0,1,2,3} on every row
```
STEPS

# The blocks to run: [where, text], in order.
sub marked_blocks
{
	my ($text, $from) = @_;
	my @found;
	my @lines = split /\n/, $text;
	for (my $i = 0; $i < @lines; $i++)
	{
		next unless $lines[$i] =~ /^\s*<!-- run: (.*?) -->\s*$/;
		my $where = $1;
		my ($indent) = $lines[ $i + 1 ] =~ /^(\s*)```/
		  or die "the marker at line " . ($i + 1) . " of $from is not followed by a code block";
		my @text;
		for ($i += 2; $lines[$i] !~ /^\s*```\s*$/; $i++)
		{
			(my $line = $lines[$i]) =~ s/^\Q$indent\E//;
			push @text, $line;
		}
		push @found, [ $where, join("\n", @text) . "\n" ];
	}
	return @found;
}
my @python = grep { $_->[0] eq 'python' } marked_blocks(slurp_file($guide), 'the guide');
is(scalar(@python), 1, 'the guide marks its Python block');
my @blocks;
foreach my $part (split /^(<!-- the guide's python -->)$/m, $steps)
{
	push @blocks, $part =~ /^<!-- the guide's python -->$/ ? @python : marked_blocks($part, 'the steps');
}
my %kinds = map { $_->[0] => 1 } @blocks;
is(join(', ', sort keys %kinds), 'on each new shard, on each shard, on the router, python, shell',
	'the steps run on every kind of server');

my @shards;
foreach my $i (0 .. 3)
{
	push @shards, new_shard("guide_shard$i", databases => []);
}
my $router = new_router('guide_router');

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
	    $where eq 'on each shard' ? @shards[ 0 .. 2 ]
	  : $where eq 'on each new shard' ? $shards[3]
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
	if ($where eq 'python')
	{
		# the shards of 1,000 keys among 3 and 4, by jump and by modulo
		my ($out, $err) = ('', '');
		IPC::Run::run([ 'python3', '-c', $text . q{
print(",".join(" ".join(str(fw_shard("api", "user-%d" % g, n, method))
                        for n, method in ((3, "jump"), (4, "jump"), (3, "modulo"), (4, "modulo")))
               for g in range(1, 1001)))
} ], '>', \$out, '2>', \$err) or return fail("$name: $err");
		chomp $out;
		return is($out, $router->safe_psql('postgres', q{
			SELECT string_agg(concat_ws(' ', fw_key_shard(name, key), fw_shard(name, key, 4, 'jump'),
			                            fw_shard(name, key, 3), fw_shard(name, key, 4, 'modulo')), ',' ORDER BY g)
			FROM generate_series(1, 1000) AS g, LATERAL (VALUES ('api', 'user-' || g)) AS v(name, key)}),
			"$name: the guide's Python finds the shards the router does, by jump and by modulo");
	}
	return pass($name);
}

# The keys a change of shards moves, as callers see them: before it, 1,000
# keys of a name spend their one token of a century (a window live on the
# real clock, that no test outlives); after it, the keys allowed again are
# those that now reach another shard, which fw_counters names.  The keys
# are fixed, so are their shards: the counts below are the same every run.
my $keys = 1000;
sub spend
{
	my ($db, $name) = @_;
	return split /,/, $router->safe_psql($db, qq{
		SELECT string_agg(g::text, ',' ORDER BY g) FROM generate_series(1, $keys) AS g
		WHERE (fw_limit('$name', 'k' || g, 1, '100 years', '2000-01-01 00:00+00')).ok});
}
sub counter_shards
{
	my ($db, $name) = @_;
	my %shards;
	foreach (split /\n/, $router->safe_psql($db,
		"SELECT key, shard FROM fw_counters WHERE name = '$name' ORDER BY key, shard"))
	{
		my ($key, $shard) = split /\|/;
		push @{ $shards{$key} }, $shard;
	}
	return \%shards;
}
my %before;
sub before_change
{
	my ($db, $name) = @_;
	my @allowed = spend($db, $name);
	is(scalar(@allowed), $keys, "$db: $keys keys spend their token on three shards");
	@allowed = spend($db, $name);
	is(scalar(@allowed), 0, "$db: and are denied");
	$before{$db} = counter_shards($db, $name);
}
# What the change did: the keys allowed again, those now on another old
# shard, those now on the new shard.
sub after_change
{
	my ($db, $name) = @_;
	my @again = spend($db, $name);
	my $now = counter_shards($db, $name);
	my @moved;
	my ($old, $new) = (0, 0);
	foreach my $key (keys %$now)
	{
		my @shards = grep { $_ != $before{$db}->{$key}->[0] } @{ $now->{$key} };
		next unless @shards;
		push @moved, substr($key, 1);
		$shards[0] < 3 ? $old++ : $new++;
	}
	is(join(',', sort { $a <=> $b } @again), join(',', sort { $a <=> $b } @moved),
		"$db: exactly the keys whose counter moved are allowed again");
	note "$db: from 3 to 4 shards, " . scalar(@again) . " of $keys keys allowed again: "
	  . "$old moved between old shards, $new to the new one";
	return (scalar(@again), $old, $new);
}

# A router that keeps 1.2's routing, beside the guide's: in a database of
# the router's server, over the same shards, set up as the guide sets up a
# router that joins a fleet routing by modulo.
sub legacy_router
{
	$router->safe_psql('postgres', 'CREATE DATABASE legacy');
	$router->safe_psql('legacy', local_hosts(q{
		CREATE EXTENSION fixed_window_proxy CASCADE;
		INSERT INTO fw_routing VALUES ('-infinity', 'modulo');
		CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (
		    modular_mapping '1',
		    p0 'host=shard0.example dbname=fw',
		    p1 'host=shard1.example dbname=fw',
		    p2 'host=shard2.example dbname=fw');
		CREATE USER MAPPING FOR PUBLIC SERVER fw_shards;}));
}

my $n = 0;
foreach my $block (@blocks)
{
	$n++;
	my $adds_shards = $block->[1] =~ /ALTER SERVER fw_shards/;
	if ($adds_shards)
	{
		legacy_router();
		before_change('postgres', 'moves');
		before_change('legacy', 'moves_by_modulo');
	}
	run_block(@$block, "step $n runs ($block->[0])");
	$router->safe_psql('legacy', local_hosts($block->[1])) if $adds_shards;
}

# The guide's router routes by jump: a quarter of the keys move, all to the
# new shard (1,000 keys: 250, 3.6 standard deviations either side).
my ($again, $between, $to_new) = after_change('postgres', 'moves');
cmp_ok($again, '>', 200, 'the guide\'s router moved about a quarter of the keys (more than 200 of 1,000)');
cmp_ok($again, '<', 300, 'the guide\'s router moved about a quarter of the keys (fewer than 300 of 1,000)');
is($between, 0, 'and none between old shards: each moved key went to the new shard');

# 1.2's modulo: three quarters move, two thirds of them between old shards.
($again, $between, $to_new) = after_change('legacy', 'moves_by_modulo');
cmp_ok($again, '>', 700, 'a router routing by modulo moved about three quarters (more than 700 of 1,000)');
cmp_ok($again, '<', 800, 'a router routing by modulo moved about three quarters (fewer than 800 of 1,000)');
cmp_ok($between, '>', 450, 'about half of all keys between old shards (more than 450)');
cmp_ok($between, '<', 550, 'about half of all keys between old shards (fewer than 550)');

# The role the guide creates calls through the router: its keys reach the
# first shards and the new ones.
is( $router->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE (fw_limit('api', 'user-' || g)).ok),
		       count(DISTINCT fw_key_shard('api', 'user-' || g))
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
