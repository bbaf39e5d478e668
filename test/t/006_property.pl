# Property test: thousands of random calls, valid, extreme and invalid, with
# the debug clock jumping forward and back, judged against the reference
# model in fw_reference_model.py on both backends.  Every answer and every
# SQLSTATE must match (an internal error, XX000, is one the model never
# predicts), and no backend may crash: shared-memory counters written by the
# first runs must still be there at the end, as a crash restart empties them.
# Every denied fw_limit is tried again (fw_check) at the time its retry_after
# names, with nothing spent in between, and must then be allowed: the model
# and the server must both keep every promise (issue 19, item 8).
#
# With FW_EDITION=sql (make test-tap-sql) the same runs against the SQL
# edition, fixed_window_sql, whose counters are in its table: storage table
# only, each run in a database where it is created.
#
# Requires python3 on PATH: the reference model is a Python 3 script.  make
# test installs it (scripts/test.sh asks fw_base_packages for python3).
# Without it this test fails at once, naming python3; it never skips.
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $model = dirname(__FILE__) . '/fw_reference_model.py';

# Without python3 there is nothing to compare against: a failure that says
# so, not a skip that would pass.
my $python = eval {
	IPC::Run::run([ 'python3', '--version' ], '>', \my $out, '2>', \my $err);
};
if (!$python)
{
	fail('python3 runs');
	diag('t/006_property.pl needs python3 on PATH to run the reference model '
		  . "$model; install it (on Debian: apt-get install python3; "
		  . '"make test" installs it when run as root)');
	done_testing();
	exit;
}

my $calls = $ENV{FW_PROPERTY_CALLS} // 20000;
my @seeds = split /,/, ($ENV{FW_PROPERTY_SEEDS} // '20261122,7');

my $node = new_node(
	'property',
	init => [ extra => [ '--encoding=UTF8', '--locale=C' ] ],    # lengths are UTF-8 bytes
	extension => 0);

my $log_start = -s $node->logfile;
my %counters;    # shared-memory counters each run left, by database

local $ENV{PGHOST} = $node->host;
local $ENV{PGPORT} = $node->port;

foreach my $seed (@seeds)
{
	foreach my $storage (edition() eq 'sql' ? ('table') : ('shmem', 'table'))
	{
		# each run starts without counters, in a database of its own
		my $db = "property_${storage}_$seed";
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		$node->safe_psql('postgres', "ALTER DATABASE $db SET fixed_window.storage = '$storage'");
		$node->safe_psql($db, 'CREATE EXTENSION ' . extension_name());
		local $ENV{PGDATABASE} = $db;

		my ($stdout, $stderr);
		my $ok = IPC::Run::run(
			[ 'python3', $model, '--storage', $storage, '--seed', $seed, '--calls', $calls,
			  '--edition', edition() ],
			'>', \$stdout, '2>', \$stderr);
		note $stdout;
		ok($ok, "$calls random calls match the reference model ($storage, seed $seed)")
		  or diag("$stdout\n$stderr");
		like($stdout, qr/, 0 mismatches$/m, "zero mismatches reported ($storage, seed $seed)");
		like($stdout, qr/allowed \d+, denied \d+/,
			"the generator drew allowed and denied calls ($storage, seed $seed)");
		like($stdout, qr/retry times of denied calls: (?:broken 0, )?kept \d+/,
			"every denied call was tried again at its retry time, and allowed ($storage, seed $seed)");
		$counters{$db} = $node->safe_psql($db, 'SELECT count(*) FROM fw_shmem_counters()')
		  if $storage eq 'shmem';
	}
}

foreach my $db (sort keys %counters)
{
	cmp_ok($counters{$db}, '>', 0, "the run left shared-memory counters ($db)");
	is($node->safe_psql($db, 'SELECT count(*) FROM fw_shmem_counters()'),
		$counters{$db}, "and they are all still there: no crash restart ($db)");
}
my $log = slurp_file($node->logfile, $log_start);
unlike($log, qr/TRAP|PANIC|terminated by signal|reinitializing/,
	'no assertion failure or crash in the server log');

$node->stop;
done_testing();
