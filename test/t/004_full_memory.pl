# Bounded memory.  When every counter slot is taken, a call for a new key
# reclaims every counter whose window has ended -- with or without
# rollover -- while the other callers wait for it and then find the room it
# made; a live counter is never evicted (that would over-admit).  Only when
# nothing can be reclaimed does fixed_window.fail_open decide, between a
# clear error (SQLSTATE 53400, with a detail that is true) and allowing
# uncounted with a warning; fw_check then answers as fw_limit would.  One
# database may hold fixed_window.database_share percent of the slots and of
# the 1,024 statistics entries, so that a flood of keys or limit names in
# one database leaves room for the others; calls of names that find no room
# for statistics are counted in the database's row whose name is NULL, and
# fw_stats_reset() frees the database's entries.
#
# The clock is fixed (fixed_window.debug_now) at instants in the past, as a
# reclaim never judges a counter ended before the real clock says so; the one
# exception, the rollover flood of part 3, runs on the real clock on purpose.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

# Reload a new fixed_window.database_share (a reload setting), then create
# databases with the extension.
sub share_and_databases
{
	my ($cluster, $share, @dbs) = @_;
	$cluster->safe_psql('postgres', qq{
		ALTER SYSTEM SET fixed_window.database_share = $share;
		SELECT pg_reload_conf();
	});
	$cluster->poll_query_until('postgres', 'SHOW fixed_window.database_share', $share)
	  or die 'database_share was not reloaded';
	foreach my $db (@dbs)
	{
		$cluster->safe_psql('postgres', "CREATE DATABASE $db");
		$cluster->safe_psql($db, 'CREATE EXTENSION fixed_window');
	}
}

# ---------------------------------------------------------------------------
# Part 1: a large table full of dead counters and 16 pgbench clients on new
# keys (review finding 1).  Every call must be answered and counted: the
# first caller reclaims while the others wait on it.
# ---------------------------------------------------------------------------

my $slots = 1_000_000;
my $clients = 16;
my $per_client = 200;
my $calls = $clients * $per_client;

my $big = new_node('big', conf => qq{
fixed_window.max_counters = $slots
fixed_window.database_share = 100
fixed_window.role_share = 100
fixed_window.debug_now = '2026-07-01 12:00:00+00'
max_connections = 40
});
$big->safe_psql('postgres', 'CREATE UNLOGGED TABLE calls (round int, key text, ok boolean)');

# Run pgbench with every session's clock (and fail_open) set through
# PGOPTIONS; returns exit code, stdout and stderr.
sub run_pgbench
{
	my ($node, $round, $options) = @_;
	my $script = $node->basedir . "/004_round_$round.sql";
	open(my $fh, '>', $script) or die "open $script: $!";
	print $fh qq{\\set k random(1, 1000000000000)
INSERT INTO calls SELECT $round, 'u' || :k, ok FROM fw_limit('nk$round', 'u' || :k, 10, '1 hour');
};
	close $fh;

	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGOPTIONS} = $options;
	my ($stdout, $stderr) = ('', '');
	IPC::Run::run(
		[
			'pgbench', '--no-vacuum', "--client=$clients", "--jobs=$clients",
			"--transactions=$per_client", '--file', $script, 'postgres'
		],
		'>', \$stdout, '2>', \$stderr);
	return ($? >> 8, $stdout, $stderr);
}

# Fill every slot with one-second counters at $at.
sub fill_dead
{
	my ($at) = @_;
	return $big->safe_psql('postgres', qq{
		SET fixed_window.debug_now = '$at';
		SELECT count(*) FILTER (WHERE ok)
		FROM generate_series(1, $slots) g, fw_limit('fill', g::text, 1, '1 second')});
}

# Checks of one round: every call answered, allowed and counted.
sub check_round
{
	my ($round, $rc, $stdout, $stderr, $what) = @_;

	is($rc, 0, "$what: pgbench exits 0");
	like($stdout, qr{number of transactions actually processed: $calls/$calls},
		"$what: all $calls transactions processed");
	like($stdout, qr{number of failed transactions: 0 }, "$what: no failed transaction");
	unlike($stderr, qr/aborted|ERROR|53400/, "$what: no client aborted, no error")
	  or diag($stderr);

	my $logged = $big->safe_psql('postgres', qq{
		SELECT count(*), count(*) FILTER (WHERE ok), count(DISTINCT key)
		FROM calls WHERE round = $round});
	my ($n, $allowed, $keys) = split /\|/, $logged;
	is($n, $calls, "$what: every call logged");
	is($allowed, $calls, "$what: every call on a new key allowed");

	# Counted: the counters hold exactly the tokens the allowed calls spent,
	# and the statistics saw every call.
	is( $big->safe_psql('postgres', qq{
			SET fixed_window.debug_now = '2026-07-01 12:00:02+00';
			SELECT count(*) || '|' || coalesce(sum(10 - remaining), 0)
			FROM fw_counters WHERE name = 'nk$round'}),
		"$keys|$allowed",
		"$what: one counter per key, holding every allowed call");
	is( $big->safe_psql('postgres',
			qq{SELECT calls || '|' || allowed || '|' || denied FROM fw_stats WHERE name = 'nk$round'}),
		"$calls|$allowed|0",
		"$what: fw_stats counted every call");
}

# Round 1, fail_open off: 1,000,000 one-second counters at 12:00:00, then
# 16 clients on new keys at 12:00:02.
is(fill_dead('2026-07-01 12:00:00+00'), $slots, "$slots one-second counters fill every slot");
my ($ret, $out, $err) = $big->psql('postgres', q{
	SET fixed_window.debug_now = '2026-07-01 12:00:00.5+00';
	SELECT ok FROM fw_check('nk0', 'u0', 10, '1 hour')});
like($err, qr/no room for a new rate limit counter/, 'the table is full while they are live');

my $log_offset = -s $big->logfile;
my ($rc, $stdout, $stderr) = run_pgbench($big, 1, '-c fixed_window.debug_now=2026-07-01T12:00:02+00');
check_round(1, $rc, $stdout, $stderr, 'fail_open off');
is( $big->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 12:00:02+00';
		SELECT count(*) FROM fw_counters WHERE name = 'fill'}),
	'0', 'the dead counters were reclaimed');

# Round 2, fail_open on: no call may be admitted uncounted, and none warns.
is( $big->safe_psql('postgres', "SELECT fw_reset('nk1')"),
	$big->safe_psql('postgres', 'SELECT count(DISTINCT key) FROM calls WHERE round = 1'),
	'round 1 counters removed');
is(fill_dead('2026-07-01 12:00:10+00'), $slots, 'every slot filled again with one-second counters');
($rc, $stdout, $stderr) = run_pgbench($big, 2,
	'-c fixed_window.debug_now=2026-07-01T12:00:12+00 -c fixed_window.fail_open=on');
check_round(2, $rc, $stdout, $stderr, 'fail_open on');
unlike($stderr, qr/rate limit counters are full/,
	'fail_open on: no call was allowed uncounted (no warning to the clients)');
ok(!$big->log_contains(qr/rate limit counters are full/, $log_offset),
	'fail_open on: and none in the server log');

# ---------------------------------------------------------------------------
# Part 2 (on the same server): statistics of 1,100 limit names in one
# database (review finding 7).  With database_share = 50 one database may
# name 512 of the 1,024 entries; the rest of its calls are counted in its row
# whose name is NULL; another database still gets its limits counted by
# name, and fw_stats_reset() frees the entries.
# ---------------------------------------------------------------------------

share_and_databases($big, 50, 'stats_a', 'stats_b');

# 1,100 names, each called twice with rate 1: 2,200 calls, 1,100 allowed.
foreach my $round (1, 2)
{
	is( $big->safe_psql('stats_a', q{
			SELECT count(*) FILTER (WHERE ok)
			FROM generate_series(1, 1100) g, fw_limit('name' || g, 'k', 1, '1 hour')}),
		$round == 1 ? '1100' : '0', "1,100 limit names in database stats_a, round $round");
}
is( $big->safe_psql('stats_a', q{
		SELECT count(name), count(*) FILTER (WHERE name IS NULL),
		       count(*) FILTER (WHERE name IS NOT NULL AND (calls, allowed, denied) <> (2, 1, 1))
		FROM fw_stats}),
	'512|1|0', 'stats_a lists 512 names (50% of 1,024), each exactly, and one row without a name');
is( $big->safe_psql('stats_a', q{
		SELECT calls || '|' || allowed || '|' || denied FROM fw_stats WHERE name IS NULL}),
	'1176|588|588', 'the row without a name counts the calls of the other 588 names');
is( $big->safe_psql('stats_a', q{
		SELECT sum(calls) || '|' || sum(allowed) || '|' || sum(denied) FROM fw_stats}),
	'2200|1100|1100', 'every call is counted once');

# Another database's new limit is counted by name.
$big->safe_psql('stats_b', q{
	SELECT fw_limit('b_limit', 'k', 2, '1 hour') FROM generate_series(1, 3)});
is( $big->safe_psql('stats_b', q{
		SELECT coalesce(name, 'NULL') || '|' || calls || '|' || allowed || '|' || denied FROM fw_stats}),
	'b_limit|3|2|1', 'a new limit in stats_b is counted by name');

# stats_b takes what is left of the 1,024 entries: postgres holds a few
# names (fill, nk1, nk2), stats_a 512.
my $in_postgres = $big->safe_psql('postgres', 'SELECT count(name) FROM fw_stats');
$big->safe_psql('stats_b', q{
	SELECT fw_limit('more_b' || g, 'k', 1, '1 hour') FROM generate_series(1, 600) g});
is( $big->safe_psql('stats_b', q{
		SELECT count(name) || '|' || count(*) FILTER (WHERE name IS NULL) || '|' || sum(calls) FROM fw_stats}),
	(1024 - 512 - $in_postgres) . '|1|603',
	'stats_b names what is left of the 1,024 entries, and counts the rest without a name');

# All 1,024 entries are taken: a third database counts its calls, in its row
# without a name.
$big->safe_psql('postgres', 'CREATE DATABASE stats_c');
$big->safe_psql('stats_c', 'CREATE EXTENSION fixed_window');
$big->safe_psql('stats_c', "SELECT fw_limit('c_limit', 'k', 1, '1 hour')");
is( $big->safe_psql('stats_c', q{
		SELECT coalesce(name, 'NULL') || '|' || calls FROM fw_stats}),
	'NULL|1', 'with every entry taken, a third database still counts its calls');

# fw_stats_reset() frees stats_a's entries: fw_stats there is empty, a new
# limit in stats_c is counted by name, and so are new names in stats_a.
$big->safe_psql('stats_a', 'SELECT fw_stats_reset()');
is($big->safe_psql('stats_a', 'SELECT count(*) FROM fw_stats'),
	'0', 'after fw_stats_reset() stats_a lists nothing');
$big->safe_psql('stats_c', "SELECT fw_limit('c_limit2', 'k', 1, '1 hour')");
is( $big->safe_psql('stats_c', q{
		SELECT string_agg(coalesce(name, 'NULL') || '|' || calls, ',' ORDER BY name) FROM fw_stats}),
	'c_limit2|1,NULL|1', 'the freed entries count a new limit of stats_c by name');
$big->safe_psql('stats_a', q{
	SELECT fw_limit('again' || g, 'k', 1, '1 hour') FROM generate_series(1, 10) g});
is( $big->safe_psql('stats_a', q{
		SELECT count(name) || '|' || count(*) || '|' || sum(calls) FROM fw_stats}),
	'10|10|10', 'and new names in stats_a are counted by name again');
is($big->safe_psql('stats_b', "SELECT calls FROM fw_stats WHERE name = 'b_limit'"),
	'3', 'stats_b kept its statistics');

$big->stop;

# ---------------------------------------------------------------------------
# Part 3: a small table, 2,000 slots.  What was always true (reclaim,
# live counters never evicted, the error, fail_open), then rollover counters
# (review finding 4) and the per-database share.
# ---------------------------------------------------------------------------

my $node = new_node('full', conf => q{
fixed_window.max_counters = 2000
fixed_window.database_share = 100
fixed_window.role_share = 100
});

sub at
{
	my ($time, $sql, $db) = @_;
	return $node->psql($db // 'postgres',
		"SET fixed_window.debug_now = '$time';\n\\set VERBOSITY verbose\n$sql");
}

my $all_live = qr/DETAIL:  All 2000 counter slots \(fixed_window.max_counters\) hold counters whose windows have not ended\./;

# 2000 one-second counters fill every slot.
($ret, $out, $err) = at('2026-07-01 12:00:00+00',
	"SELECT count(*) FILTER (WHERE (fw_limit('fill', g::text, 1, '1 second')).ok) FROM generate_series(1, 2000) g");
is($out, '2000', 'two thousand counters fit');

# In the same second all are live: a new key is refused, clearly and truly.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00', "SELECT ok FROM fw_limit('fill', 'new', 1, '1 second')");
isnt($ret, 0, 'a new key fails while every counter is live');
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'with SQLSTATE 53400');
like($err, $all_live, 'the detail says every slot holds a live counter');
like($err, qr/HINT:  Raise fixed_window.max_counters/, 'naming the setting to raise');
unlike($err, qr/HINT:.*_share/, 'and not the shares, which cannot help a full table');
is( $node->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 12:00:00.5+00';
		SELECT count(*) FROM fw_counters}),
	'2000', 'and fw_counters shows 2000 live counters');

# fw_check answers what fw_limit would: the same error.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00', "SELECT ok FROM fw_check('fill', 'new', 1, '1 second')");
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'fw_check on a new key fails the same way');
like($err, $all_live, 'with the same detail');

# A call denied on a new key needs room too, since 1.3: its counter must
# gather tokens until the retry time it is told (a key new again then would
# be denied again, forever).  Full: 53400, as for any call that needs room.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00',
	"SELECT ok FROM fw_limit('fill', 'poor', 1, '1 second', cost => 2, capacity => 2)");
like($err, qr/ERROR:  53400: no room for a new rate limit counter/,
	'a call denied on a new key needs room for its counter');

# ... and the live counters still deny: nothing was evicted.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00', "SELECT ok FROM fw_limit('fill', '7', 1, '1 second')");
is($out, 'f', 'a spent live counter is not forgotten');

# fail_open: allowed, uncounted, with one warning per minute and session;
# fw_check agrees.
# A call denied there is denied all the same, and promises no retry time.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00',
	"SET fixed_window.fail_open = on;\nSELECT ok, remaining FROM fw_check('fill', 'new', 1, '1 second');\nSELECT ok, remaining FROM fw_limit('fill', 'new', 1, '1 second');\nSELECT ok FROM fw_limit('fill', 'new2', 1, '1 second');\nSELECT ok, retry_after IS NULL FROM fw_limit('fill', 'poor', 1, '1 second', cost => 2, capacity => 2);");
is($out, "t|0\nt|0\nt\nf|t", 'fail_open allows calls for new keys, fw_check and fw_limit alike, and denies with no promise what it cannot count');
my @warnings = ($err =~ /WARNING:  53400: rate limit counters are full/g);
is(scalar @warnings, 1, 'one warning for four calls');
is( $node->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 12:00:00.5+00';
		SELECT count(*) FROM fw_counters WHERE key IN ('new', 'new2', 'poor')}),
	'0', 'and nothing was created for them');

# Calls that found no room are counted, refused (53400, no other column) or
# allowed uncounted (fail_open, also in calls and allowed); fw_check is not
# counted.  fw_capacity shows why: every slot holds a live counter.
is( $node->safe_psql('postgres', q{
		SELECT calls, allowed, denied, no_room FROM fw_stats WHERE name = 'fill'}),
	'2004|2002|2|5', 'fw_stats counts the five calls that found no room');
is( $node->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 12:00:00.5+00';
		SELECT scope, capacity, used, live, reclaimable, live_percent FROM fw_capacity
		WHERE storage = 'shmem' AND scope IN ('counters', 'database') ORDER BY scope}),
	"counters|2000|2000|2000|0|100.0\ndatabase|2000|2000|2000|0|100.0",
	'fw_capacity: every slot, and the database\'s whole share, live');
is( $node->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 12:00:01+00';
		SELECT used, live, reclaimable, live_percent FROM fw_capacity WHERE scope = 'counters'}),
	'2000|0|2000|0.0', 'a second later: every slot reclaimable, none yet freed');

# Only superusers may turn it on.
$node->safe_psql('postgres', 'CREATE ROLE plain');
($ret, $out, $err) = $node->psql('postgres', "LOAD 'fixed_window'; SET ROLE plain; SET fixed_window.fail_open = on;");
like($err, qr/permission denied to set parameter "fixed_window.fail_open"/, 'fail_open is superuser-only');

# One second later every window has ended: the counters are reclaimed.
($ret, $out, $err) = at('2026-07-01 12:00:01+00', "SELECT ok, remaining FROM fw_limit('fill', 'new', 1, '1 second')");
is($out, 't|0', 'a new key gets a reclaimed slot');
is($node->safe_psql('postgres', q{
	SET fixed_window.debug_now = '2026-07-01 12:00:01+00';
	SELECT count(*) FROM fw_counters WHERE name = 'fill'}), '1', 'dead counters were reclaimed');

# Counters of a current hour are live for the hour: full again, and no amount
# of asking evicts them.
($ret, $out, $err) = at('2026-07-01 12:00:02+00',
	"SELECT count(*) FILTER (WHERE (fw_limit('hour', g::text, 1, '1 hour')).ok) FROM generate_series(1, 1999) g");
is($out, '1999', 'the free slots fill with hourly counters');
# Half an hour later only the one-second counter 'new' is dead: its slot is
# the only one to reclaim.
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', 'one more', 1, '1 hour')");
is($out, 't', 'the dead one-second counter makes room for one more');
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', 'two more', 1, '1 hour')");
like($err, qr/53400/, 'then the table is full of live counters');
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', '5', 1, '1 hour')");
is($out, 'f', 'an hourly counter still denies half an hour later');
is($node->safe_psql('postgres', "SELECT fw_reset('hour')"), '2000', 'fw_reset empties the table');

# Rollover counters (capacity > rate) whose window has ended are reclaimed
# too.  On the real clock, 3,000 new keys with one-microsecond windows pass
# through 2,000 slots.
is( $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE ok)
		FROM generate_series(1, 3000) g, fw_limit('x', g::text, 1, '1 microsecond', capacity => 2)}),
	'3000', '3,000 rollover counters of one microsecond pass through 2,000 slots (real clock)');
is($node->safe_psql('postgres', "SELECT fw_reset('x') <= 2000"), 't', 'removed');

# With the clock fixed: 2,000 live rollover counters fill the table; a
# microsecond later, their windows have ended and a new key finds room.
($ret, $out, $err) = at('2026-07-01 13:00:00+00',
	"SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 2000) g, fw_limit('x', g::text, 1, '1 microsecond', capacity => 2)");
is($out, '2000', '2,000 rollover counters fill the table');
($ret, $out, $err) = at('2026-07-01 13:00:00+00', "SELECT ok FROM fw_limit('x', 'new', 1, '1 microsecond', capacity => 2)");
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'no room while they are live');
like($err, $all_live, 'and the detail says so');
($ret, $out, $err) = at('2026-07-01 13:00:00.000001+00',
	"SELECT ok, remaining FROM fw_limit('x', 'new', 1, '1 microsecond', capacity => 2)");
is($out, 't|0', 'a microsecond later a new key is allowed: ended rollover counters were reclaimed');
is( $node->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 13:00:00.000001+00';
		SELECT count(*) FROM fw_counters WHERE name = 'x'}),
	'1', 'only the new counter is live');

# The per-database share.  database_share is a reload setting.
($ret, $out, $err) = $node->psql('postgres', "LOAD 'fixed_window'; SET fixed_window.database_share = 50");
like($err, qr/parameter "fixed_window.database_share" cannot be changed now/,
	'database_share cannot be SET in a session');
share_and_databases($node, 50, 'fw_a', 'fw_b');

# A flood of live counters in fw_a stops at its share, 1,000 slots.
($ret, $out, $err) = at('2026-07-01 14:00:00+00',
	"SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 1000) g, fw_limit('flood', g::text, 1, '1 hour')", 'fw_a');
is($out, '1000', 'fw_a takes 1,000 slots');
my $a_full = qr/DETAIL:  Database "fw_a" holds 1000 counter slots in windows that have not ended, and one database may hold 1000 \(fixed_window.database_share = 50% of the table's 2000 slots\)\./;
($ret, $out, $err) = at('2026-07-01 14:00:00+00',
	"SELECT ok FROM fw_limit('flood', 'one more', 1, '1 hour')", 'fw_a');
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'then a new key in fw_a fails with 53400');
like($err, $a_full, 'with the per-database detail');
like($err, qr/HINT:  Raise fixed_window.database_share/, 'and the database\'s share to raise');
is( $node->safe_psql('fw_a', q{
		SET fixed_window.debug_now = '2026-07-01 14:00:00+00';
		SELECT count(*) FROM fw_counters}),
	'1000', 'and fw_a does have 1,000 live counters');
($ret, $out, $err) = at('2026-07-01 14:00:00+00',
	"SELECT ok FROM fw_check('flood', 'one more', 1, '1 hour')", 'fw_a');
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'fw_check for a new key in fw_a fails too');
like($err, $a_full, 'with the same detail');
($ret, $out, $err) = at('2026-07-01 14:00:00+00',
	"SET fixed_window.fail_open = on;\nSELECT ok, remaining FROM fw_check('flood', 'one more', 1, '1 hour');\nSELECT ok, remaining FROM fw_limit('flood', 'one more', 1, '1 hour');",
	'fw_a');
is($out, "t|0\nt|0", 'with fail_open fw_check and fw_limit both allow');
like($err, qr/WARNING:  53400: rate limit counters are full/, 'with the warning');
like($err, $a_full, 'and its true detail');

# fw_b still has room.
($ret, $out, $err) = at('2026-07-01 14:00:00+00',
	"SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 1000) g, fw_limit('flood', g::text, 1, '1 hour')", 'fw_b');
is($out, '1000', 'new keys in fw_b still work, up to its share');

# Now every slot holds a live counter: a third database gets the global detail.
($ret, $out, $err) = at('2026-07-01 14:00:00+00', "SELECT ok FROM fw_check('other', 'k', 1, '1 hour')");
like($err, $all_live, 'a full table names max_counters in any database (fw_check)');
($ret, $out, $err) = at('2026-07-01 14:00:00+00', "SELECT ok FROM fw_limit('other', 'k', 1, '1 hour')");
like($err, $all_live, 'a full table names max_counters in any database (fw_limit)');

$node->stop;

# One role cannot take every slot either (found in review: one role with
# CONNECT on two databases filled both databases' shares).  At the default
# shares, 50% each, alice's flood in r1 takes 1,000 of 2,000 slots; in r2 her
# first new key fails, naming her share, while bob in r2 and the superuser
# in a third database still get counters.
my $roles = new_node('roles', conf => q{
fixed_window.max_counters = 2000
fixed_window.debug_now = '2026-07-01 15:00:00+00'
});
$roles->safe_psql('postgres', 'CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN');
foreach my $db ('r1', 'r2')
{
	$roles->safe_psql('postgres', "CREATE DATABASE $db");
	$roles->safe_psql($db, 'CREATE EXTENSION fixed_window');
}
is( $roles->safe_psql('postgres', "LOAD 'fixed_window'; SHOW fixed_window.role_share"), '50', 'role_share is 50 by default');
($ret, $out, $err) = $roles->psql('r1',
	"SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 1000) g, fw_limit('x', g::text, 1, '1000 years')",
	extra_params => [ '-U', 'alice' ]);
is($out, '1000', 'alice takes 1,000 slots in r1');
($ret, $out, $err) = $roles->psql('r2', "\\set VERBOSITY verbose\nSELECT ok FROM fw_limit('x', 'first', 1, '1000 years')",
	extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'alice gets no new counter in r2');
like($err, qr/DETAIL:  Role "alice" holds 1000 counter slots in windows that have not ended, in all databases, and one role may hold 1000 \(fixed_window.role_share = 50% of the table's 2000 slots\)\./,
	'the detail names her share');
like($err, qr/HINT:  Raise fixed_window.role_share/, 'and the hint the role\'s share to raise');
($ret, $out, $err) = $roles->psql('r2', "SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 500) g, fw_limit('x', g::text, 1, '1000 years')",
	extra_params => [ '-U', 'bob' ]);
is($out, '500', 'bob still gets counters in r2');
is( $roles->safe_psql('postgres', "SELECT ok FROM fw_limit('x', 'admin', 1, '1000 years')"),
	't', 'and so does the superuser in a third database');
# What alice holds she keeps: her counters still deny.
($ret, $out, $err) = $roles->psql('r1', "SELECT ok FROM fw_limit('x', '7', 1, '1000 years')",
	extra_params => [ '-U', 'alice' ]);
is($out, 'f', 'her live counters are not evicted');
$roles->stop;
done_testing();
