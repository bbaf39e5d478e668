# Without shared_preload_libraries (issue 21): CREATE EXTENSION works with
# no restart, and storage "auto" keeps counters in the extension's table, as
# before.  Storage "shmem" keeps them in dynamic shared memory: the first
# call creates the segment, every backend of every database shares it, the
# keeper starts with it, saves the counters at a clean shutdown and the next
# server's first call loads them.  A crash restart leaves a fresh segment,
# never the old one (the servers run with MALLOC_PERTURB_, so that a read of
# freed memory shows), nor a file saved since the server started, and
# fw_resize_counters grows the table online, and shrinks it once ended
# windows are reclaimed.  The keeper outlives pg_cancel_backend, comes back
# after pg_terminate_backend without saving, and saves at a shutdown that a
# replication connection outlives.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

local $ENV{MALLOC_PERTURB_} = 85;
my $node = new_node('nopreload', shmem => 0, conf => q{
fixed_window.max_counters = 1000
fixed_window.database_share = 100
fixed_window.role_share = 100
restart_after_crash = on
wal_level = replica
max_wal_senders = 2
});

is( $node->safe_psql('postgres',
		"SELECT ok, remaining FROM fw_limit('api', 'k', 2, '1 hour')"),
	't|1', 'fw_limit works without preload');
is($node->safe_psql('postgres', 'SELECT tokens FROM fw_counter'),
	'1', 'storage auto keeps the counter in the table');
is($node->safe_psql('postgres', q{SELECT fw_storage_in_use()}), 'table', 'auto means the table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'fixed_window keeper'}),
	'0', 'no shared memory is created, and no keeper started, while no call asks for it');

# storage = shmem, chosen by an admin: no restart.
$node->safe_psql('postgres', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.storage = 'shmem'; SELECT pg_reload_conf()});
$node->poll_query_until('postgres', q{SELECT current_setting('fixed_window.storage', true) = 'shmem'})
  or die 'the setting was not reloaded';
is($node->safe_psql('postgres', q{SELECT fw_storage_in_use()}), 'shmem', 'storage shmem works without preload');

my $day = q{'2026-01-01 00:00:00+00'};
my $spend = "SELECT ok, remaining FROM fw_limit('day', 'k', 2, '1 day', $day)";
is($node->safe_psql('postgres', $spend), 't|1', 'the first call spends');
my $other = $node->background_psql('postgres');
is($other->query_safe($spend), 't|0', 'another session sees what it spent');
$other->quit;
is($node->safe_psql('postgres', $spend), 'f|0', 'and the next call is denied');
is( $node->safe_psql('postgres', q{SELECT storage || ':' || key || ':' || remaining FROM fw_counters WHERE name = 'day'}),
	'shmem:k:0', 'fw_counters shows the counter in shared memory');
is( $node->safe_psql('postgres', q{SELECT calls || ':' || allowed || ':' || denied FROM fw_stats WHERE name = 'day'}),
	'3:2:1', 'fw_stats counts the calls');
is($node->safe_psql('postgres', q{SELECT count(*) FROM fw_counter WHERE name = 'day'}),
	'0', 'nothing went to the table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'fixed_window keeper'}),
	'1', 'the keeper started with the segment');

# Another database's counters live in the same segment.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION fixed_window');
is($node->safe_psql('other', $spend), 't|1', 'another database has counters of its own');
is( $node->safe_psql('other', q{SELECT slots_before || ':' || counters_moved FROM fw_resize_counters(2000)}),
	'1000:2', 'one segment holds both databases\' counters, and resizing moves both');
is($node->safe_psql('postgres', $spend), 'f|0', 'after the resize the first database still denies');
is($node->safe_psql('other', $spend), 't|0', 'and the other spends its last token');

# A clean restart: saved by the keeper, loaded by the first call.
my $offset = -s $node->logfile;
my $saved = $node->data_dir . '/pg_stat/fixed_window.stat';
$node->stop;
ok($node->log_contains(qr/fixed_window saved 2 counters/, $offset), 'the keeper saved the counters at shutdown');
copy($saved, "$saved.copy") or die "copying $saved: $!";
$node->start;
is($node->safe_psql('postgres', $spend), 'f|0', 'after a clean restart the counter is still spent');
ok($node->log_contains(qr/fixed_window loaded 2 of 2 saved counters/, $offset), 'the first call loaded them');
is($node->safe_psql('other', $spend), 'f|0', 'in both databases');

# A crash: a backend killed; the server starts again with a fresh registry
# and a fresh segment; the old segment's memory is gone.
# The file saved at the last shutdown, put back while the server runs, is
# not loaded after the crash: it is older than the counters the crash lost.
move("$saved.copy", $saved) or die "restoring $saved: $!";
utime(time + 60, time + 60, $saved) or die "touching $saved: $!";
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $victim_pid;
$victim->quit;
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
is($node->safe_psql('postgres', $spend), 't|1', 'after a crash calls succeed, on empty counters');
is($node->safe_psql('postgres', q{SELECT count(*) FROM fw_counters}), '1', 'only the new counter is there');
ok($node->log_contains(qr/ignoring file "pg_stat\/fixed_window.stat".*\n.*DETAIL:  The file was written after the server started/, $offset),
	'a file written after the server started is not loaded');
is( $node->safe_psql('postgres', 'SELECT slots_before FROM fw_resize_counters(3000)'),
	'2000', 'the new segment has the size fixed_window.max_counters says: 2000, which fw_resize_counters recorded');
my $keeper = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'fixed_window keeper'};
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($keeper) k")
  or die 'no keeper after the crash';
pass('one keeper runs again after the crash');
ok(!$node->log_contains(qr/server process .* was terminated by signal 11|PANIC/, $offset),
	'nothing crashed but the backend killed');

# Shrinking: refused below the live counters, allowed once their windows
# have ended, since the ended ones are reclaimed first.
my $at = q{SET fixed_window.debug_now = '2026-03-01 00:00:00+00'};
$node->safe_psql('postgres', qq{$at; SELECT count(*) FROM generate_series(1, 2500) i, fw_limit('short', i::text, 1, '1 minute')});
my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$at;\nSELECT * FROM fw_resize_counters(1000)");
like($err, qr/ERROR:  55000: cannot shrink the rate limit counters to 1000 slots/, 'shrinking below the live counters is refused');
$at = q{SET fixed_window.debug_now = '2026-03-01 00:02:00+00'};
is($node->safe_psql('postgres', "$at; SELECT slots_before || ':' || slots_after || ':' || counters_moved FROM fw_resize_counters(1000)"),
	'3000:1000:1', 'once their windows ended, the table shrinks and only the live counter moves');

# The keeper ignores pg_cancel_backend; terminated while the server runs, it
# saves the counters (for a shutdown before the next keeper starts), exits
# with status 1 and the postmaster starts it again.
my $keeper_pid = $node->safe_psql('postgres', $keeper);
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($keeper_pid)"), 't', 'the keeper can be sent a cancel');
is($node->safe_psql('postgres', $keeper), $keeper_pid, 'and goes on');
$offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($keeper_pid)");
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($keeper) k WHERE pid <> $keeper_pid")
  or die 'the keeper did not come back';
pass('a terminated keeper is started again');
ok($node->log_contains(qr/fixed_window keeper terminated while the server runs\n.*It saved the counters/, $offset),
	'it says why it stops, and that it saved the counters, for a shutdown before the next keeper');
ok(!-e $saved, 'the next keeper, which saves at the shutdown, removed that save');

# A replication connection that called fw_limit stays until after the keeper
# at a shutdown: the keeper does not wait for it, and saves its call.
my $walsender = $node->background_psql('postgres', replication => 'database');
is($walsender->query_safe(q{SELECT ok FROM fw_limit('replication', 'k', 1, '1 hour')}),
	't', 'a replication connection calls fw_limit');
$offset = -s $node->logfile;
$node->stop('fast');
ok($node->log_contains(qr/fixed_window saved 2 counters/, $offset),
	'a shutdown with a replication connection completes, and saves its counter too');
$walsender->quit;
$node->start;

# Errors: a clear one for each bad size.
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM fw_resize_counters(10)");
like($err, qr/ERROR:  22023: slots must be between 1000 and 100000000/, 'a size out of range is refused');
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM fw_resize_counters(NULL)");
like($err, qr/ERROR:  22004: argument "slots" must not be null/, 'a NULL size is refused');

# The server is still up, and loading the library defines its settings.
is($node->safe_psql('postgres', "LOAD 'fixed_window'; SHOW fixed_window.storage"),
	'shmem', 'storage is defined once the library is loaded');

$node->stop;
done_testing();
