# Without shared_preload_libraries: CREATE EXTENSION works with no restart,
# storage "auto" keeps counters in the extension's table, and asking for
# shared memory fails with a clear error (SQLSTATE 55000) and a hint, never
# a crash and never an answer.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION fixed_window');

is( $node->safe_psql('postgres',
		"SELECT ok, remaining FROM fw_limit('api', 'k', 2, '1 hour')"),
	't|1', 'fw_limit works without preload');
is($node->safe_psql('postgres', 'SELECT tokens FROM fw_counter'),
	'1', 'storage auto keeps the counter in the table');

foreach my $fn ('fw_limit', 'fw_check')
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET fixed_window.storage = shmem;\n"
		  . "SELECT * FROM $fn('api', 'k', 10, '1 minute')");
	isnt($ret, 0, "$fn with storage shmem fails without preload");
	like($stderr,
		qr/ERROR:  55000: fixed_window must be loaded via shared_preload_libraries/,
		"$fn names the missing preload with SQLSTATE 55000");
	like($stderr, qr/HINT:  Add fixed_window to shared_preload_libraries/,
		"$fn hints at the fix");
	is($stdout, '', "$fn returns no row");
}

# The server is still up, and loading the library defines its settings.
is($node->safe_psql('postgres', "LOAD 'fixed_window'; SHOW fixed_window.storage"),
	'auto', 'storage is defined once the library is loaded');

$node->stop;
done_testing();
