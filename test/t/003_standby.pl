# On a hot standby: shared-memory counters keep working, local to the
# standby; the table backend fails with a clear error saying the standby
# cannot write; the views work there (issue 19, item 22: 1.2.1's fw_counters
# and fw_stats failed on a standby, "cannot access temporary or unlogged
# relations during recovery", since they read the unlogged table): they show
# the standby's shared-memory counters and statistics, and say that the
# table's are not readable there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $primary = new_node('primary', init => [ allows_streaming => 1 ], conf => q{
fixed_window.max_counters = 1000
# a fixed clock (copied to the standby): no window ends during the test
fixed_window.debug_now = '2026-06-01 12:00:00+00'
});
$primary->safe_psql('postgres', q{SELECT fw_limit('api', 'k', 5, '1 hour')});
on_storage($primary, 'postgres', 'table', q{SELECT fw_limit('api', 'on-table', 5, '1 hour')});
is( $primary->safe_psql('postgres', "SELECT string_agg(key || ' ' || storage, ', ' ORDER BY key) FROM fw_counters"),
	'k shmem, on-table table', 'the primary lists counters of both storages');
# a database whose calls keep counters in the table, for the standby
$primary->safe_psql('postgres', q{CREATE DATABASE tab});
$primary->safe_psql('postgres', q{ALTER DATABASE tab SET fixed_window.storage = 'table'});
$primary->safe_psql('tab', 'CREATE EXTENSION fixed_window');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby is in recovery');

# Shared memory: counters of the standby's own, starting fresh.
is( $standby->safe_psql('postgres', q{
	SELECT string_agg(ok || ':' || remaining, ' ')
	FROM generate_series(1, 3) AS g,
		LATERAL fw_limit('api', 'k', 2, '1 hour', cost => 1 + 0 * g)}),
	'true:1 true:0 false:0',
	'shared-memory counters work on the standby');
is($primary->safe_psql('postgres', "SELECT remaining FROM fw_check('api', 'k', 5, '1 hour', cost => 0)"),
	'4', 'the primary keeps its own counters');

# The table backend cannot write on a standby.
my ($ret, $stdout, $stderr) = $standby->psql('tab',
	"\\set VERBOSITY verbose\nSELECT * FROM fw_limit('api', 'k', 5, '1 hour')");
isnt($ret, 0, 'the table backend fails on the standby');
like($stderr, qr/ERROR:  25006: fixed_window cannot keep counters in its table on a standby/,
	'with SQLSTATE 25006 and a clear message');
like($stderr, qr/HINT:  Preload fixed_window on the standby/, 'and a hint');

($ret, $stdout, $stderr) = $standby->psql('tab', "SELECT * FROM fw_check('api', 'k', 5, '1 hour')");
like($stderr, qr/cannot keep counters in its table on a standby/, 'fw_check says the same');

# The views on the standby: its shared-memory counters and statistics, and a
# notice that the table's cannot be read there.
($ret, $stdout, $stderr) = $standby->psql('postgres',
	"SELECT string_agg(key || ' ' || storage || ' ' || remaining, ', ') FROM fw_counters");
is($ret, 0, 'fw_counters works on the standby') or diag($stderr);
is($stdout, 'k shmem 0', "and lists the standby's shared-memory counter");
like($stderr, qr/NOTICE:  the counters of fixed_window's table are not readable on a standby/,
	"saying that the table's are not readable there");
($ret, $stdout, $stderr) = $standby->psql('postgres', "SELECT name, calls, allowed, denied FROM fw_stats");
is($ret, 0, 'fw_stats works on the standby') or diag($stderr);
is($stdout, 'api|3|2|1', "and counts the standby's own calls");
like($stderr, qr/NOTICE:  the statistics of fixed_window's table are not readable on a standby/,
	"saying that the table's are not readable there");
# an ordinary role reads them too, keys hidden as on the primary
$primary->safe_psql('postgres', 'CREATE ROLE reader LOGIN');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT count(*), count(key) FROM fw_counters', extra_params => [ '-U', 'reader' ]),
	'1|0', "an ordinary role reads fw_counters on the standby, without other roles' keys");

$standby->stop;
$primary->stop;
done_testing();
