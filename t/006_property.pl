# Property test: thousands of random calls, valid, extreme and invalid, with
# the debug clock jumping forward and back, judged against the reference
# model in fw_reference_model.py on both backends.  Every answer and every
# SQLSTATE must match, no call may fail with an internal error, and the
# server must not restart.
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $model = dirname(__FILE__) . '/fw_reference_model.py';
my $calls = $ENV{FW_PROPERTY_CALLS} // 20000;
my @seeds = split /,/, ($ENV{FW_PROPERTY_SEEDS} // '20261122,7');

my $node = PostgreSQL::Test::Cluster->new('property');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
log_line_prefix = '%m [%p] %e '
});
$node->start;

my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $log_start = -s $node->logfile;

local $ENV{PGHOST} = $node->host;
local $ENV{PGPORT} = $node->port;

foreach my $seed (@seeds)
{
	foreach my $storage ('shmem', 'table')
	{
		# each run starts without counters, in a database of its own
		my $db = "property_${storage}_$seed";
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		$node->safe_psql($db, 'CREATE EXTENSION fixed_window');
		local $ENV{PGDATABASE} = $db;

		my ($stdout, $stderr);
		my $ok = IPC::Run::run(
			[ 'python3', $model, '--storage', $storage, '--seed', $seed, '--calls', $calls ],
			'>', \$stdout, '2>', \$stderr);
		note $stdout;
		ok($ok, "$calls random calls match the reference model ($storage, seed $seed)")
		  or diag("$stdout\n$stderr");
		like($stdout, qr/, 0 mismatches$/m, "zero mismatches reported ($storage, seed $seed)");
		like($stdout, qr/allowed \d+, denied \d+/,
			"calls were both allowed and denied ($storage, seed $seed)");
	}
}

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started, 'the server never restarted');
my $log = slurp_file($node->logfile, $log_start);
unlike($log, qr/ XX000 |TRAP|PANIC|terminated by signal/,
	'no internal error, assertion or crash in the server log');

$node->stop;
done_testing();
