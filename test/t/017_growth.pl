# The counter table grows while calls go on (issue 21): 16 pgbench clients
# call fw_limit on 10,000 keys, with the clock fixed inside one window,
# while the table is resized twice, once by fw_resize_counters and once by
# a reloaded fixed_window.max_counters (set with ALTER SYSTEM, where
# fw_resize_counters recorded its size).  No call fails, every key allows
# exactly min(rate, its calls), and afterwards more keys fit than the first
# table held, without a restart.  Shrinking below what is in use is refused.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('growth', conf => q{
fixed_window.max_counters = 12000
fixed_window.database_share = 100
fixed_window.role_share = 100
fixed_window.debug_now = '2026-06-01 12:00:00+00'
max_connections = 40
});
$node->safe_psql('postgres', 'CREATE UNLOGGED TABLE calls (key text, ok boolean)');

my $clients = 16;
my $per_client = 4000;
my $total = $clients * $per_client;
my $script = $node->basedir . '/growth.sql';
append_to_file($script, q{
\set k random(1, 10000)
INSERT INTO calls SELECT :k::text, ok FROM fw_limit('grow', :k::text, 3, '1 hour');
});
my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', "--client=$clients", '--jobs=2',
		"--transactions=$per_client", '--file', $script,
		'--host', $node->host, '--port', $node->port, 'postgres'
	],
	'>', \$out, '2>', \$err);

# The first resize, by the function, once calls are under way.
$node->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM calls')
  or die 'pgbench did not start';
my ($before, $after, $moved) =
  split /\|/, $node->safe_psql('postgres', 'SELECT * FROM fw_resize_counters(20000)');
is($before, '12000', 'the first table had fixed_window.max_counters slots');
is($after, '20000', 'fw_resize_counters gave it 20000');
ok($moved > 0, "the live counters moved with it ($moved)");

# The second, by a reloaded setting, which the keeper applies.  Set with
# ALTER SYSTEM: fw_resize_counters recorded its size there, which overrides
# postgresql.conf.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.max_counters = 40000});
$node->reload;
$node->wait_for_log(qr/fixed_window moved \d+ counters to a table of 40000 slots \(was 20000\)/, $offset);
ok($node->safe_psql('postgres', 'SELECT count(*) FROM calls') < $total,
	'both resizes happened while the calls went on');

$pgbench->finish;
is($?, 0, 'pgbench ended without an error');
like($out, qr{processed: $total/$total}, 'every call was answered');
is($err =~ /ERROR/ ? $err : '', '', 'no call failed');

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT key, count(*) FILTER (WHERE ok) AS allowed, count(*) AS calls
			FROM calls GROUP BY key) AS per_key
		WHERE allowed <> least(3, calls)}),
	'0',
	'every key allowed exactly min(rate, calls) across both resizes');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT key, count(*) AS calls FROM calls GROUP BY key) AS per_key
		JOIN fw_counters c ON c.name = 'grow' AND c.key = per_key.key
		WHERE c.remaining <> greatest(0, 3 - per_key.calls)}),
	'0',
	'each key\'s counter holds what its calls left, no more and no less');
is( $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM fw_counters WHERE name = 'grow')
		     = (SELECT count(DISTINCT key) FROM calls)}),
	't',
	'one counter per key called: none lost, none duplicated');

# More keys than the first table held fit now.
is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE ok)
		FROM generate_series(1, 25000) AS g, fw_limit('more', g::text, 1, '1 hour')}),
	'25000',
	'25,000 more keys fit, beyond the 12,000 slots of the first table');

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM fw_resize_counters(20000)");
like($stderr, qr/ERROR:  55000: cannot shrink the rate limit counters to 20000 slots/,
	'shrinking below the slots in use is refused');
like($stderr, qr/DETAIL:  Live counters take \d+ of the 40000 slots now\./, 'and says how many are in use');

$node->stop;
done_testing();
