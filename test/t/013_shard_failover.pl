# Failover of a shard behind the router: what a promoted standby holds, and
# the router following the promotion by itself.
#
# The shard has a streaming standby.  The router reaches it with both hosts
# in one connection string and target_session_attrs=read-write, so it always
# talks to the primary.  Two databases on the shard, two routers:
#
# - mem: shared-memory counters (the default).  They live in the primary's
#   memory and nothing replicates them: after the failover a key starts
#   fresh, so a key may get up to its rate again in the window of the
#   failover (the documented bound).
# - tab: the table backend with fw_counter made LOGGED (ALTER TABLE ...
#   SET LOGGED), the choice for a DBA who wants counters to survive
#   failover: they replicate like any table, so the promoted standby holds
#   every spent token that reached it (all of them here, after catch-up;
#   with synchronous replication, all of them always).
#
# The clock is fixed (fixed_window.debug_now, copied to the standby), so no
# window ends during the test.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

require_plproxy();

my $primary = new_shard(
	'shard_primary',
	init => [ allows_streaming => 1 ],
	databases => [ 'mem', 'tab' ],
	conf => q{
fixed_window.database_share = 100
fixed_window.role_share = 100
fixed_window.debug_now = '2026-06-01 12:00:00+00'
});
$primary->safe_psql('postgres', "ALTER DATABASE tab SET fixed_window.storage = 'table'");
$primary->safe_psql('tab', 'ALTER TABLE fw_counter SET LOGGED');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('shard_standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my $router = new_router('failover_router');
my $hosts = join(',', $primary->host, $standby->host);
my $ports = join(',', $primary->port, $standby->port);
foreach my $db ('mem', 'tab')
{
	$router->safe_psql('postgres', "CREATE DATABASE router_$db");
	$router->safe_psql("router_$db", qq{
CREATE EXTENSION fixed_window_proxy CASCADE;
CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (
    p0 'host=$hosts port=$ports dbname=$db target_session_attrs=read-write');
CREATE USER MAPPING FOR PUBLIC SERVER fw_shards;
});
	is($router->safe_psql("router_$db", "SELECT ok FROM fw_limit('api', 'k', 3, '1 hour', cost => 3)"),
		't', "$db: the key spends its three tokens through the router");
	is($router->safe_psql("router_$db", "SELECT ok FROM fw_limit('api', 'k', 3, '1 hour')"),
		'f', "$db: and is denied");
}

$primary->wait_for_catchup($standby);
is($standby->safe_psql('tab', "SELECT remaining FROM fw_counters WHERE key = 'k'"),
	'0', 'tab: the standby holds the spent counter (a logged table replicates)');
my ($ret, $out, $err) = $standby->psql('tab', "SELECT calls, denied FROM fw_stats WHERE name = 'api'");
is($out, '2|1', "tab: the standby's fw_stats counts the calls on the logged table's rows");
like($err, qr/NOTICE:  the statistics of fixed_window's table are not readable on a standby\n.*A standby holds no rows of unlogged tables \(fw_stat, fw_stat_unnamed\)/,
	'tab: and says that it cannot read fw_stat and fw_stat_unnamed, which are still unlogged');
is($standby->safe_psql('mem', "SELECT count(*) FROM fw_shmem_counters()"),
	'0', "mem: the standby's shared memory holds nothing of the primary's");

# The primary is lost; the standby is promoted.
$primary->stop('immediate');
$standby->promote;

is($router->safe_psql('router_tab', "SELECT ok FROM fw_limit('api', 'k', 3, '1 hour')"),
	'f', 'tab: after the failover the key is still denied: its counter was replicated');
my $after = $router->safe_psql('router_mem', "SELECT ok, remaining FROM fw_limit('api', 'k', 3, '1 hour')");
is($after, 't|2', 'mem: after the failover the key starts fresh: up to its rate again in this window');
is($router->safe_psql('router_mem', "SELECT count(*) FROM fw_limit('api', 'k', 3, '1 hour', cost => 2) WHERE ok"),
	'1', 'mem: the bound: at most rate extra (3 more, 6 in all) in the window of the failover');
is($router->safe_psql('router_mem', "SELECT ok FROM fw_limit('api', 'k', 3, '1 hour')"),
	'f', 'mem: then the window holds again');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f',
	'the router reached the promoted standby by itself (target_session_attrs=read-write)');

$standby->stop;
$router->stop;
done_testing();
