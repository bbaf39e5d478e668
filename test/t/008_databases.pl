# Counters and databases (review finding 5).  Shared-memory counters and
# statistics are keyed by database OID: DROP DATABASE removes them once the
# drop has succeeded (and only then), so that a database created later with
# the same OID starts empty, also across a clean restart, whose dump must not
# carry them.  Then what other database and extension operations do to the
# counters of both backends, the facts the README states:
#
#   (i)   DROP EXTENSION + CREATE EXTENSION in one database keeps the
#         shared-memory counters and statistics (they belong to the
#         database, not to the extension); the table counters go with the
#         table.
#   (ii)  CREATE DATABASE ... TEMPLATE copies no shared-memory counter, but
#         copies the rows of the unlogged table fw_counter (PostgreSQL 15,
#         both strategies, WAL_LOG the default); ALTER DATABASE ... SET is not
#         copied.
#   (iii) pg_dump carries no counters of either backend: fw_counter is not a
#         configuration table, and a restored database starts empty.
#
# The clock is fixed at an instant after the real one, so that counters are
# live for the dump and load of a clean restart.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('databases', extension => 0, conf => q{
fixed_window.max_counters = 1000
fixed_window.debug_now = '2099-01-01 12:00:00+00'
});

sub create_db
{
	my ($db, $options) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db " . ($options // ''));
	$node->safe_psql($db, 'CREATE EXTENSION fixed_window')
	  unless ($options // '') =~ /TEMPLATE/;
}

# Spend a key of limit 'api' (5 an hour) to denial: 6 calls, 5 allowed.
sub spend
{
	my ($db, $key, $storage) = @_;
	return on_storage($node, $db, $storage, qq{
		SELECT string_agg((fw_limit('api', '$key', 5, '1 hour')).ok::text, ',' ORDER BY g)
		FROM generate_series(1, 6) g});
}

# What fw_check answers for a key: ok|remaining.
sub check
{
	my ($db, $key, $storage) = @_;
	return on_storage($node, $db, $storage,
		qq{SELECT ok || '|' || remaining FROM fw_check('api', '$key', 5, '1 hour')});
}

sub counters
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT coalesce(string_agg(storage || ':' || key || ':' || remaining, ',' ORDER BY storage, key), '')
		FROM fw_counters});
}

sub stats
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT coalesce(string_agg(coalesce(name, 'NULL') || ':' || calls || ':' || allowed || ':' || denied, ','
			ORDER BY name), '')
		FROM fw_stats});
}

my $spent = 'true,true,true,true,true,false';

# Without preloading, the sessions below that drop databases never loaded
# the library: the keeper forgets what a dropped database held, within a
# second.  With preloading, every session's hook does at once.
my $dynamic = ($ENV{FW_SHMEM} // '') eq 'dynamic';
my $default_storage = $dynamic ? 'shmem' : 'auto';

sub drop_db
{
	my ($db, $oid) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "DROP DATABASE $db");
	$node->wait_for_log(qr/fixed_window forgot the counters and statistics of dropped database $oid/, $offset)
	  if $dynamic;
}
my $fresh = 'true|4';
my $denied = 'false|0';

# ---------------------------------------------------------------------------
# A database dropped and created again with the same OID starts empty.
# ---------------------------------------------------------------------------
create_db('d1', 'OID 50000');
is(spend('d1', 'k', 'shmem'), $spent, 'd1: a key spent to denial');
is(check('d1', 'k', 'shmem'), $denied, 'd1: fw_check denies it');
is(stats('d1'), 'api:6:5:1', 'd1: fw_stats counts the calls');

drop_db('d1', 50000);
create_db('d1', 'OID 50000');
is($node->safe_psql('d1', 'SELECT oid FROM pg_database WHERE datname = current_database()'),
	'50000', 'd1 created again with the same OID');
is(check('d1', 'k', 'shmem'), $fresh, 'the new d1: fw_check allows the key with every token');
is(counters('d1'), '', 'the new d1: fw_counters is empty');
is(stats('d1'), '', 'the new d1: fw_stats is empty');

# A database whose counters were all reset keeps its statistics; dropped,
# those go too.
create_db('d4', 'OID 50003');
is(spend('d4', 'k', 'shmem'), $spent, 'd4: a key spent to denial');
is(on_storage($node, 'd4', 'shmem', q{SELECT fw_reset('api')}),
	'1', 'd4: its only counter reset');
is(stats('d4'), 'api:6:5:1', 'd4: its statistics stay');
drop_db('d4', 50003);
create_db('d4', 'OID 50003');
is(stats('d4'), '', 'd4, dropped with statistics and no counter, created again: fw_stats is empty');

# ---------------------------------------------------------------------------
# A DROP DATABASE that fails drops nothing.
# ---------------------------------------------------------------------------
create_db('d3', 'OID 50002');
is(spend('d3', 'k', 'shmem'), $spent, 'd3: a key spent to denial');

my ($ret, $out, $err) = $node->psql('postgres', "BEGIN;\nDROP DATABASE d3;\nCOMMIT;");
like($err, qr/DROP DATABASE cannot run inside a transaction block/,
	'DROP DATABASE in a transaction block fails');
is(check('d3', 'k', 'shmem'), $denied, 'd3 keeps its counter');

my $session = $node->background_psql('d3');
$session->query_safe('SELECT 1');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE d3');
like($err, qr/database "d3" is being accessed by other users/,
	'DROP DATABASE fails while another session is connected');
is($session->query_safe(q{SELECT ok || '|' || remaining FROM fw_check('api', 'k', 5, '1 hour')}),
	$denied, 'd3 keeps its counter');
is(stats('d3'), 'api:6:5:1', 'and its statistics');
$session->quit;

# ---------------------------------------------------------------------------
# Across a clean restart: the dump holds only counters of databases that
# exist.
# ---------------------------------------------------------------------------
create_db('d2', 'OID 50001');
is(spend('d2', 'k', 'shmem'), $spent, 'd2: a key spent to denial');
drop_db('d2', 50001);
my $log_offset = -s $node->logfile;
$node->restart;
create_db('d2', 'OID 50001');
is(check('d2', 'k', 'shmem'), $fresh, 'd2 created again with its OID after a restart: the key is new');
ok($node->log_contains(qr/fixed_window loaded 1 of 1 saved counters/, $log_offset),
	'the dump held one counter (d3\'s), none of the dropped d2');
is(counters('d2'), '', 'and fw_counters is empty');
is(check('d3', 'k', 'shmem'), $denied, 'd3, not dropped, kept its counter across the restart');

# ---------------------------------------------------------------------------
# (i) DROP EXTENSION and CREATE EXTENSION again in one database.
# ---------------------------------------------------------------------------
create_db('e1');
is(spend('e1', 's', 'shmem'), $spent, 'e1: a shared-memory key spent');
is(spend('e1', 't', 'table'), $spent, 'e1: a table key spent');
is(counters('e1'), 'shmem:s:0,table:t:0', 'e1: fw_counters shows both');
is(stats('e1'), 'api:12:10:2', 'e1: fw_stats counts both');

$node->safe_psql('e1', 'DROP EXTENSION fixed_window');
$node->safe_psql('e1', 'CREATE EXTENSION fixed_window');
is(check('e1', 's', 'shmem'), $denied,
	'(i) after DROP and CREATE EXTENSION the shared-memory counter is still there');
is(check('e1', 't', 'table'), $fresh, '(i) the table counter is gone');
is(counters('e1'), 'shmem:s:0', '(i) fw_counters shows the shared-memory counter only');
is(stats('e1'), 'api:6:5:1', '(i) fw_stats keeps the shared-memory statistics only');

# ---------------------------------------------------------------------------
# (ii) CREATE DATABASE ... TEMPLATE.
# ---------------------------------------------------------------------------
is(spend('e1', 't', 'table'), $spent, 'e1: the table key spent again');
$node->safe_psql('postgres', "ALTER DATABASE e1 SET fixed_window.storage = 'table'");
is($node->safe_psql('e1', 'SHOW fixed_window.storage'), 'table', 'e1 uses the table by ALTER DATABASE');
foreach my $strategy ('WAL_LOG', 'FILE_COPY')
{
	my $copy = lc "copy_$strategy";
	create_db($copy, "TEMPLATE e1 STRATEGY $strategy");
	is($node->safe_psql($copy, 'SHOW fixed_window.storage'), $default_storage,
		"(ii) $strategy: ALTER DATABASE ... SET is not copied");
	is(check($copy, 's', 'shmem'), $fresh, "(ii) $strategy: no shared-memory counter is copied");
	is(check($copy, 't', 'table'), $denied, "(ii) $strategy: the table counter is copied");
	is(counters($copy), 'table:t:0', "(ii) $strategy: fw_counters shows the copied table counter");
	is(stats($copy), 'api:6:5:1', "(ii) $strategy: fw_stats shows the table statistics copied with it");
}

# ---------------------------------------------------------------------------
# (iii) pg_dump and restore.
# ---------------------------------------------------------------------------
is($node->safe_psql('e1', q{
		SELECT coalesce(string_agg(c::regclass::text, ',' ORDER BY c::regclass::text), 'none')
		FROM pg_extension, unnest(extconfig) AS c WHERE extname = 'fixed_window'}),
	'fw_metric_name,fw_override,fw_policy',
	'fw_counter is not a configuration table of the extension; the definitions and the names exported are');
my $dump = $node->basedir . '/e1.dump';
my $plain = $node->basedir . '/e1.sql';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('e1') ], 'pg_dump -Fc e1');
$node->command_ok([ 'pg_dump', '-f', $plain, '-d', $node->connstr('e1') ], 'pg_dump e1 (plain)');
$node->safe_psql('postgres', 'CREATE DATABASE r_custom');
$node->safe_psql('postgres', 'CREATE DATABASE r_plain');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('r_custom'), $dump ], 'pg_restore into r_custom');
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $plain, '-d', $node->connstr('r_plain') ],
	'psql -f into r_plain');
foreach my $db ('r_custom', 'r_plain')
{
	is($node->safe_psql($db, q{SELECT extversion = default_version FROM pg_extension, pg_available_extensions
		WHERE extname = 'fixed_window' AND name = extname}),
		't', "(iii) $db: the extension is restored at its default version");
	is($node->safe_psql($db, 'SELECT count(*) FROM fw_counter'), '0', "(iii) $db: fw_counter is empty");
	is(check($db, 's', 'shmem'), $fresh, "(iii) $db: no shared-memory counter");
	is(check($db, 't', 'table'), $fresh, "(iii) $db: no table counter");
	is(counters($db), '', "(iii) $db: fw_counters is empty");
	is(stats($db), '', "(iii) $db: fw_stats is empty");
}
is(check('e1', 't', 'table'), $denied, 'e1 itself still has its table counter');
is(check('e1', 's', 'shmem'), $denied, 'and its shared-memory counter');

$node->stop;
done_testing();
