# Every state survives every transition (issue 30, findings 3 to 8): the
# counters of shared memory through a clean restart after a resize, after
# the admin lowered the size, with counters made under another role; a
# resize keeps counters that carry tokens over; a shrink that would leave a
# database over its share is refused; a reloaded size and a dropped
# database are applied and forgotten when no keeper runs; a database made
# again with a dropped one's OID starts empty, its statistics are its own,
# and a counter file copied from another server is not loaded.
#
# The servers of the first parts keep counters in shared memory as
# FwTest's shmem_conf() says (preloaded, or not with FW_SHMEM=dynamic); the
# last part's server does not preload the library and has no worker slot for
# a keeper.  The clock is fixed after the real one, so that the windows of the
# counters saved at a clean shutdown have not ended when they are loaded.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $shmem = shmem_conf();
my $clock = q{fixed_window.debug_now = '2099-01-01 12:00:00+00'};

# psql's output, or its error: a suite that fails goes on to say what else.
sub query
{
	my ($node, $db, $sql, @rest) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql, @rest);
	return $ret == 0 ? $out : "error: $err";
}

# Poll a query until it says true, for at most 10 seconds: what a
# backend's call does when the keeper is absent happens at once, or a
# second later.
sub poll
{
	my ($node, $db, $sql) = @_;
	for (1 .. 100)
	{
		return 1 if query($node, $db, $sql) eq 't';
		usleep(100_000);
	}
	return 0;
}

sub server
{
	my ($name, @conf) = @_;
	return new_node($name, shmem => 0, conf => join("\n", @conf) . "\n");
}

# (Without preload the first call after a restart loads the saved counters,
# with preload the keeper as the server starts: the log is read after a
# call, and waited for.)

# Spend one token of each of n keys (prefix.1 .. prefix.n) of a day's
# limit of 1, as role (through SET ROLE) if given; returns how many were
# allowed.
sub spend
{
	my ($node, $db, $prefix, $n, $role) = @_;
	return query($node, $db, ($role ? "SET ROLE $role;\n" : '') . qq{
		SELECT count(*) FILTER (WHERE (fw_limit('day', '$prefix.' || g, 1, '1 day')).ok)
		FROM generate_series(1, $n) g});
}

# How many of those keys a check would allow now.
sub allowed
{
	my ($node, $db, $prefix, $n) = @_;
	return query($node, $db, qq{
		SELECT count(*) FILTER (WHERE (fw_check('day', '$prefix.' || g, 1, '1 day')).ok)
		FROM generate_series(1, $n) g});
}

sub capacity
{
	my ($node, $db, $where) = @_;
	return query($node, $db, qq{
		SELECT coalesce(string_agg(name || ':' || used, ',' ORDER BY name), '')
		FROM fw_capacity WHERE storage = 'shmem' AND $where});
}

# ---------------------------------------------------------------------------
# Finding 3: a clean restart after growing the table online keeps every
# counter; so does one after the admin lowered the size below them.
# ---------------------------------------------------------------------------
my $node = server('grown', $shmem, $clock, 'fixed_window.max_counters = 1000',
	'fixed_window.database_share = 100', 'fixed_window.role_share = 100');
is($node->safe_psql('postgres', 'SELECT slots_after FROM fw_resize_counters(2000)'),
	'2000', 'the table grew online to 2000 slots');
is(spend($node, 'postgres', 'g', 1500), '1500', '1500 keys spent their token');
my $offset = -s $node->logfile;
$node->restart;
is(allowed($node, 'postgres', 'g', 1500), '0', 'no key spent before the restart is allowed again');
ok($node->wait_for_log(qr/fixed_window loaded 1500 of 1500 saved counters/, $offset),
	'the restart loaded every counter');
is($node->safe_psql('postgres', q{LOAD 'fixed_window'; SHOW fixed_window.max_counters}),
	'2000', 'the size fw_resize_counters set is the setting in force');
is(query($node, 'postgres', q{SELECT capacity FROM fw_capacity WHERE storage = 'shmem' AND scope = 'counters'}),
	'2000', 'and the table has it');

# The admin lowers the size below the live counters, then restarts.
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.max_counters = 1000});
$offset = -s $node->logfile;
$node->restart;
is(allowed($node, 'postgres', 'g', 1500), '0',
	'after a restart with a smaller max_counters, no key is allowed again');
ok( $node->wait_for_log(
		qr/WARNING:  the saved counters need 1500 slots, more than fixed_window.max_counters \(1000\)/,
		$offset),
	'the load says loudly that it kept more counters than max_counters');
is(query($node, 'postgres', q{SELECT capacity FROM fw_capacity WHERE storage = 'shmem' AND scope = 'counters'}),
	'2000', 'the table has the size it had before the restart');
is(spend($node, 'postgres', 'after', 10), '10', 'and new keys find room in it');

# A keeper terminated just before a clean restart: the counters are kept.
my $keeper = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'fixed_window keeper'};
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($keeper) k") or die 'no keeper';
$node->safe_psql('postgres', "SELECT pg_terminate_backend(pid) FROM ($keeper) k");
$offset = -s $node->logfile;
$node->restart;
is(allowed($node, 'postgres', 'g', 1500) + allowed($node, 'postgres', 'after', 10), 0,
	'a restart right after the keeper was terminated keeps every counter');

# What a terminated keeper saved is not loaded after an immediate shutdown,
# as no clean shutdown's is: once the next keeper runs, the save is gone.
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($keeper) k") or die 'no keeper';
my $keeper_pid = $node->safe_psql('postgres', $keeper);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($keeper_pid)");
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($keeper) k WHERE pid <> $keeper_pid")
  or die 'no new keeper';
$node->stop('immediate');
$node->start;
is(allowed($node, 'postgres', 'after', 10), '10',
	'after an immediate shutdown the counters start empty, the terminated keeper\'s save not loaded');

# Moving a database to another tablespace, or renaming it, keeps its counters.
my $ts = $node->basedir . '/ts';
mkdir $ts or die "mkdir $ts: $!";
$node->safe_psql('postgres', qq{CREATE TABLESPACE ts LOCATION '$ts'});
$node->safe_psql('postgres', 'CREATE DATABASE moving');
$node->safe_psql('moving', 'CREATE EXTENSION fixed_window');
is(spend($node, 'moving', 'm', 5), '5', 'a database spends 5 keys');
$node->safe_psql('postgres', "LOAD 'fixed_window';\nALTER DATABASE moving SET TABLESPACE ts;");
is(allowed($node, 'moving', 'm', 5), '0', 'moved to another tablespace, it keeps its counters');
$node->safe_psql('postgres', 'ALTER DATABASE moving RENAME TO moved');
is(allowed($node, 'moved', 'm', 5), '0', 'renamed, too');
$node->stop;

# ---------------------------------------------------------------------------
# Finding 4: the load charges each counter to the role that made it, not to
# the role of its last call.
# ---------------------------------------------------------------------------
$node = server('owners', $shmem, $clock, 'fixed_window.max_counters = 2000',
	'fixed_window.database_share = 100', 'fixed_window.role_share = 30');
$node->safe_psql('postgres', q{
	CREATE ROLE anon NOLOGIN;
	CREATE ROLE alice LOGIN IN ROLE anon;
	CREATE ROLE bob LOGIN IN ROLE anon;
});
for my $role (qw(alice bob))
{
	my $out = query($node, 'postgres', qq{
		SET ROLE anon;
		SELECT count(*) FILTER (WHERE (fw_limit('day', '$role.' || g, 1, '1 day')).ok)
		FROM generate_series(1, 400) g}, extra_params => [ '-U', $role ]);
	is($out, '400', "$role, as anon, spent 400 keys");
}
is(capacity($node, 'postgres', q{scope = 'role'}), 'alice:400,bob:400',
	'the counters count against the login roles');
$node->restart;
is(allowed($node, 'postgres', 'alice', 400) + allowed($node, 'postgres', 'bob', 400), 0,
	'after a restart no key is allowed again, though anon\'s share (600) is less than 800');
is(capacity($node, 'postgres', q{scope = 'role'}), 'alice:400,bob:400',
	'and the counters count against the roles that made them');
$node->stop;

# ---------------------------------------------------------------------------
# Findings 5 and 6: a resize keeps the counters a reclaim keeps; a shrink
# that would leave a database over its share is refused.
# ---------------------------------------------------------------------------
$node = server('resizes', $shmem, 'fixed_window.max_counters = 2000',
	'fixed_window.database_share = 50', 'fixed_window.role_share = 100');
my $roll = q{SELECT ok, retry_after FROM fw_limit('roll', 'k', 5, '3 seconds', '2026-01-01', 8, 10)};
is( $node->safe_psql('postgres', qq{SET fixed_window.debug_now = '2026-01-01 00:00:00+00'; $roll}),
	'f|00:00:03', 'a cost of 8 is denied to a new key of rate 5, capacity 10, until the next window');
is( $node->safe_psql('postgres', qq{
		SET fixed_window.debug_now = '2026-01-01 00:00:03.2+00';
		SELECT slots_after FROM fw_resize_counters(3000)}),
	'3000', 'the table grows after the window ended');
is( query($node, 'postgres', qq{SET fixed_window.debug_now = '2026-01-01 00:00:03.2+00'; $roll}),
	't|', 'the counter carried its tokens over the resize: the call is allowed');

$node->safe_psql('postgres', qq{SET fixed_window.debug_now = '2099-01-01 12:00:00+00';
	SELECT count(*) FROM generate_series(1, 700) g, fw_limit('day', 's.' || g, 1, '1 day')});
my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM fw_resize_counters(1000)");
isnt($ret, 0, 'a shrink to 1000 slots, whose share for a database (500) is below the 700 it holds, is refused');
like($err, qr/ERROR:  55000: cannot shrink the rate limit counters to 1000 slots/, 'with SQLSTATE 55000');
like($err, qr/DETAIL:  Database "postgres" holds 70\d counter slots, more than its share of 1000 slots \(500, fixed_window.database_share = 50\)/,
	'naming the database, what it holds and its share');
is( query($node, 'postgres', q{SET fixed_window.debug_now = '2099-01-01 12:00:00+00';
		SELECT (fw_limit('day', 'new', 1, '1 day')).ok}),
	't', 'a new key of the database still finds room');
is(query($node, 'postgres', 'SELECT slots_after FROM fw_resize_counters(1500)'), '1500',
	'a shrink that keeps every share is done');
# with the share lowered below what the database holds, no smaller size helps
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.database_share = 30; SELECT pg_reload_conf()});
$node->poll_query_until('postgres', q{SELECT current_setting('fixed_window.database_share', true) = '30'})
  or die 'the reload was not read';
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM fw_resize_counters(1400)");
like($err, qr/HINT:  Raise fixed_window.database_share, or wait until more of its windows have ended\./,
	'a shrink refused where no smaller size would do says to raise the share, not to shrink less');
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM RESET fixed_window.database_share; SELECT pg_reload_conf()});

# A resize its caller may not record holds until the setting changes: an
# unrelated reload does not undo it.
$node->safe_psql('postgres', q{
	CREATE ROLE ops LOGIN;
	GRANT EXECUTE ON FUNCTION fw_resize_counters(integer) TO ops;
});
($ret, $out, $err) = $node->psql('postgres', 'SELECT slots_after FROM fw_resize_counters(3000)',
	extra_params => [ '-U', 'ops' ]);
is($out, '3000', 'a role granted fw_resize_counters resizes the table');
like($err, qr/WARNING:  could not record fixed_window.max_counters = 3000/, 'with a warning that it is not recorded');
$node->safe_psql('postgres', q{ALTER SYSTEM SET work_mem = '8MB'; SELECT pg_reload_conf()});
$node->safe_psql('postgres', q{SELECT pg_reload_conf()});
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.max_counters = 4000; SELECT pg_reload_conf()});
ok($node->wait_for_log(qr/fixed_window moved \d+ counters to a table of 4000 slots \(was 3000\)/, $offset),
	'unrelated reloads left the size 3000 until max_counters changed');

# ---------------------------------------------------------------------------
# Finding 8: statistics held for a database are not dropped by a reset of
# another whose OID is equal modulo 1024.
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE s1 OID 50000');
$node->safe_psql('postgres', 'CREATE DATABASE s2 OID 51024');
$node->safe_psql($_, 'CREATE EXTENSION fixed_window') for qw(s1 s2);
my $holder = $node->background_psql('s2');
$holder->query_safe(q{BEGIN; SELECT count(*) FROM generate_series(1, 3) g, fw_limit('held', g::text, 5, '1 hour')});
$node->safe_psql('s1', 'SELECT fw_stats_reset()');
$holder->query_safe('COMMIT');
$holder->quit;
is(query($node, 's2', q{SELECT calls FROM fw_stats WHERE name = 'held'}), '3',
	'calls held in s2 while s1 (OID + 1024) was reset are counted');
$node->stop;

# ---------------------------------------------------------------------------
# Finding 8: a counter file copied from another server is not loaded.
# ---------------------------------------------------------------------------
my $other = server('other', $shmem, $clock);
is(spend($other, 'postgres', 'o', 5), '5', 'another server spends 5 keys');
$other->stop;
my $copy = server('copy', $shmem, $clock);
$copy->stop;
copy($other->data_dir . '/pg_stat/fixed_window.stat', $copy->data_dir . '/pg_stat/fixed_window.stat')
  or die "copy failed: $!";
$offset = -s $copy->logfile;
$copy->start;
is(allowed($copy, 'postgres', 'o', 5), '5', 'the copied counters are not loaded: every key is allowed');
ok($copy->log_contains(qr/ignoring file "pg_stat\/fixed_window.stat".*\n.*another server/, $offset),
	'the log says the file is another server\'s');
$copy->stop;

# ---------------------------------------------------------------------------
# Findings 7 and 8: no keeper (no worker slot for it), no preload.  Any
# backend applies a reloaded size and forgets dropped databases; a database
# made again with a dropped one's OID inherits nothing.
# ---------------------------------------------------------------------------
$node = server('keeperless', 'fixed_window.storage = shmem', 'max_worker_processes = 0',
	'fixed_window.max_counters = 1000', 'fixed_window.database_share = 100',
	'fixed_window.role_share = 100', $clock);
is(spend($node, 'postgres', 'p', 3), '3', 'calls create the table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'fixed_window keeper'}),
	'0', 'no keeper runs');
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.max_counters = 1500; SELECT pg_reload_conf()});
ok( poll($node, 'postgres', q{
		SELECT (fw_limit('day', 'poll', 1000, '1 day')).ok IS NOT NULL
		   AND capacity = 1500
		FROM fw_capacity WHERE storage = 'shmem' AND scope = 'counters'}),
	'a reloaded max_counters is applied by the backends\' calls');

$node->safe_psql('postgres', 'CREATE DATABASE gone');
$node->safe_psql('gone', 'CREATE EXTENSION fixed_window');
is(spend($node, 'gone', 'x', 4), '4', 'a database spends 4 keys');
# dropped by a session that never loaded the library
$node->safe_psql('postgres', 'DROP DATABASE gone');
ok( poll($node, 'postgres', q{
		SELECT (fw_limit('day', 'poll', 1000, '1 day')).ok IS NOT NULL
		   AND NOT EXISTS (SELECT FROM fw_capacity WHERE scope IN ('database', 'statistics')
		                   AND name NOT IN ('postgres'))}),
	'its counters and statistics are forgotten by the backends\' calls');

$node->safe_psql('postgres', 'CREATE DATABASE again OID 60000');
$node->safe_psql('again', 'CREATE EXTENSION fixed_window');
is(spend($node, 'again', 'k', 1), '1', 'a database spends a key');
# dropped and made again with its OID in one session, before any sweep
$node->safe_psql('postgres', 'DROP DATABASE again; CREATE DATABASE again OID 60000');
$node->safe_psql('again', 'CREATE EXTENSION fixed_window');
is(allowed($node, 'again', 'k', 1), '1', 'the database made again with its OID does not inherit the key');
is(query($node, 'again', q{SELECT count(*) FROM fw_counters}), '0', 'its fw_counters is empty');
is(query($node, 'again', q{SELECT count(*) FROM fw_stats}), '0', 'its fw_stats is empty');
$node->stop;

done_testing();
