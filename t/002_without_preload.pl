# Without shared_preload_libraries there is no shared memory for counters:
# the extension installs, and fw_limit and fw_check fail with a clear error
# (SQLSTATE 55000) and a hint, never a crash and never an answer.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION fixed_window');

foreach my $fn ('fw_limit', 'fw_check')
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT * FROM $fn('api', 'k', 10, '1 minute')");
	isnt($ret, 0, "$fn fails without preload");
	like($stderr, qr/ERROR:  55000: fixed_window must be loaded via shared_preload_libraries/,
		"$fn names the missing preload with SQLSTATE 55000");
	like($stderr, qr/HINT:  Add fixed_window to shared_preload_libraries/,
		"$fn hints at the fix");
	is($stdout, '', "$fn returns no row");
}

# Bad arguments are still reported as such.
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT fw_limit('api', 'k', 0, '1 minute')");
like($stderr, qr/rate must be greater than zero/, 'arguments are checked first');

# The server is still up, and loading the library defines the clock setting.
is($node->safe_psql('postgres', "LOAD 'fixed_window'; SHOW fixed_window.debug_now"),
	'', 'debug_now is defined once the library is loaded');

$node->stop;
done_testing();
