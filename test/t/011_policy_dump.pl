# Named policies (1.1) survive pg_dump and restore, and their tables are
# closed to ordinary roles.
#
# Database a defines policies with several windows, a shadow window, comments
# (with quotes and a newline), a per-key phase (start NULL), a start of its
# own, overrides (one window of a key, with and without capacity) and an
# exemption, and calls them on both backends so that counters exist.  It is
# dumped in the custom format (pg_restore into b_custom) and as plain SQL
# (psql into b_plain), both created empty.  In each restored database:
#
#   - the restore exits 0 and prints nothing on stderr;
#   - fw_policies and fw_overrides list exactly what a listed (full rows, in
#     order), and the tables fw_policy and fw_override hold exactly a's rows:
#     nothing is duplicated by CREATE EXTENSION plus the data, nothing lost;
#   - no counter is carried over;
#   - the named calls answer, window by window, what a answered before it
#     spent anything (the clock is fixed), and as defined: the override's rate
#     applies to its key, the exempt key is never denied, other keys get the
#     policy, a policy of shadow windows only never denies; new definitions
#     and overrides can be added, replaced and removed.
#
# Restored into a database c whose extension already holds definitions,
# pg_restore adds the dump's rows to c's: a plain restore over clashing
# definitions fails on the primary key half-way, leaving a mix.  The ways
# the README gives restore exactly a's definitions, twice in a row: the
# whole database with --clean --if-exists in one transaction, or the
# definitions only, after TRUNCATE, in one transaction; a restore in one
# transaction that stops at its first error changes nothing.
#
# Then, in a and in both restored databases, an ordinary role cannot read or
# write fw_policy or fw_override, sees no override made by another role in
# fw_overrides (a member of pg_read_all_stats sees them all), and cannot call
# fw_define (or the other definition functions) until it is granted EXECUTE;
# once granted, it defines a policy and uses it.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('policy_dump', extension => 0, conf => q{
fixed_window.max_counters = 1000
fixed_window.debug_now = '2099-01-01 12:00:00+00'
});

# psql as another login role; errors are printed with their SQLSTATE.
sub psql_as
{
	my ($db, $user, $sql) = @_;
	return $node->psql($db, "\\set VERBOSITY verbose\n$sql",
		connstr => $node->connstr($db) . " user=$user");
}

sub safe_psql_as
{
	my ($db, $user, $sql) = @_;
	return $node->safe_psql($db, $sql, connstr => $node->connstr($db) . " user=$user");
}

# The statement fails with the SQLSTATE (and the message matches).
sub fails_with
{
	my ($db, $user, $sql, $state, $message, $test_name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($ret, $out, $err) = psql_as($db, $user, $sql);
	isnt($ret, 0, "$test_name: fails");
	like($err, qr/ERROR:\s+$state: $message/, "$test_name: SQLSTATE $state");
}

# Full, ordered listings of the definitions: the views, and the tables.
sub policies
{
	my ($db, $user) = @_;
	my $sql = q{SELECT string_agg(p::text, E'\n' ORDER BY p.name, p.period, p.shadow, p::text) FROM fw_policies p};
	return defined $user ? safe_psql_as($db, $user, $sql) : $node->safe_psql($db, $sql);
}

sub overrides
{
	my ($db, $user) = @_;
	my $sql = q{SELECT string_agg(o::text, E'\n' ORDER BY o.name, o.key, o.period NULLS FIRST, o::text)
		FROM fw_overrides o};
	return defined $user ? safe_psql_as($db, $user, $sql) : $node->safe_psql($db, $sql);
}

sub tables
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT 'fw_policy ' || count(*) || E'\n' || coalesce(string_agg(t::text, E'\n' ORDER BY t::text), '')
		FROM fw_policy t;
		SELECT 'fw_override ' || count(*) || E'\n' || coalesce(string_agg(t::text, E'\n' ORDER BY t::text), '')
		FROM fw_override t;
	});
}

# fw_limit called n times on a key: "ok/remaining" of each call (t/4).  The
# cost refers to g so that every row calls fw_limit: a function scan whose
# arguments do not change is run once and its row replayed.
sub spend
{
	my ($db, $name, $key, $n, $user) = @_;
	my $sql = qq{
		SELECT string_agg(concat_ws('/', r.ok, r.remaining), ',' ORDER BY g)
		FROM generate_series(1, $n) g, LATERAL fw_limit('$name', '$key', least(g, 1)) r};
	return defined $user ? safe_psql_as($db, $user, $sql) : $node->safe_psql($db, $sql);
}

# The same, "ok" only (t,t,f).
sub oks
{
	my ($db, $name, $key, $n, $user) = @_;
	my $sql = qq{
		SELECT string_agg(concat_ws('', r.ok), ',' ORDER BY g)
		FROM generate_series(1, $n) g, LATERAL fw_limit('$name', '$key', least(g, 1)) r};
	return defined $user ? safe_psql_as($db, $user, $sql) : $node->safe_psql($db, $sql);
}

# What every policy answers, window by window, for a fresh key and for the
# keys with overrides or an exemption, without spending.
my @probes = (
	[ 'api', 'fresh' ], [ 'api', 'vip' ], [ 'api', 'root' ],
	[ 'login', 'fresh' ], [ 'login', 'svc' ],
	[ 'plan', 'fresh' ], [ 'beta', 'fresh' ]);

sub windows
{
	my ($db) = @_;
	return join("\n", map {
		my ($name, $key) = @$_;
		"$name $key:\n" . $node->safe_psql($db, qq{
			SELECT string_agg(w::text, E'\n' ORDER BY w.period, w.shadow)
			FROM fw_check_windows('$name', '$key') w;
			SELECT r::text FROM fw_check('$name', '$key') r;
		})
	} @probes);
}

# ---------------------------------------------------------------------------
# Database a: the definitions, and counters.
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE a');
$node->safe_psql('a', 'CREATE EXTENSION fixed_window');
# the version the control file names (1.1 brought policies; any later one keeps them)
my $version = $node->safe_psql('a',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'fixed_window'});
is($node->safe_psql('a', q{SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'}),
	$version, "CREATE EXTENSION installs the default version, $version");

$node->safe_psql('a', q{
	-- api: 5 a minute (first defined as 4 a minute, then replaced through an
	-- equal period), 100 an hour rolling over up to 150, and a shadow window
	-- of 3 a day.
	SELECT fw_define('api', 4, '1 minute');
	SELECT fw_define('api', 5, '60 seconds', comment => 'burst: 5 a minute; it''s "strict" \ really');
	SELECT fw_define('api', 100, '1 hour', capacity => 150);
	SELECT fw_define('api', 3, '1 day', shadow => true, comment => E'trial\nnot enforced yet');
	-- login: each key its own phase of 15 minutes, and a day from 06:00.
	SELECT fw_define('login', 3, '15 minutes', start => NULL, comment => 'per-key phase');
	SELECT fw_define('login', 10, '1 day', start => '2026-01-01 06:00:00+00');
	-- plan: monthly from a billing day.
	SELECT fw_define('plan', 1000, '1 mon', start => '2026-01-31 00:00:00+00', capacity => 1500);
	-- beta: a shadow window only.
	SELECT fw_define('beta', 1, '1 hour', shadow => true);
	-- overrides: one window of a key with capacity, one without; an exemption.
	SELECT fw_override('api', 'vip', 10, '1 minute', capacity => 20);
	SELECT fw_override('login', 'svc', 6, '15 minutes');
	SELECT fw_exempt('api', 'root');
});

is($node->safe_psql('a', 'SELECT count(*) FROM fw_policies'), '7', 'a: 7 windows in 4 policies');
is( $node->safe_psql('a', q{
		SELECT string_agg(concat_ws('/', name, period, rate, shadow, start IS NULL, comment), ' | '
			ORDER BY name, period)
		FROM fw_policies WHERE name = 'api' OR start IS NULL}),
	qq{api/00:01:00/5/f/f/burst: 5 a minute; it's "strict" \\ really | api/01:00:00/100/f/f | }
	  . qq{api/1 day/3/t/f/trial\nnot enforced yet | login/00:15:00/3/f/t/per-key phase},
	'a: fw_policies shows the windows, the replaced one once, shadow, NULL start and comments');
is( $node->safe_psql('a', q{
		SELECT string_agg(concat_ws('/', name, key, coalesce(period::text, '-'), CASE WHEN NOT exempt THEN rate END,
			exempt), ' | ' ORDER BY name, key)
		FROM fw_overrides}),
	'api/root/-/t | api/vip/00:01:00/10/f | login/svc/00:15:00/6/f',
	'a: fw_overrides shows the overrides and the exemption');
is($node->safe_psql('a', q{SELECT capacity FROM fw_overrides WHERE key = 'vip'}), '20',
	'a: the override keeps its capacity');

my $cfg = $node->safe_psql('a', q{
	SELECT string_agg(c::regclass::text, ',' ORDER BY c::regclass::text)
	FROM pg_extension, unnest(extconfig) c WHERE extname = 'fixed_window'});
like($cfg, qr/(^|,)fw_policy(,|$)/, 'fw_policy is a configuration table of the extension');
like($cfg, qr/(^|,)fw_override(,|$)/, 'fw_override is a configuration table of the extension');
unlike($cfg, qr/fw_counter/, 'fw_counter is not');

my $policies_a = policies('a');
my $overrides_a = overrides('a');
my $tables_a = tables('a');
my $windows_a = windows('a');
like($windows_a, qr/^api fresh:\n\(00:01:00,5,5?,f,t,,4,.*\n\(01:00:00,100,150,f,t,,99,.*\n\("1 day",3,3?,t,t,,2,.*\n\(t,,4,/,
	'a: fw_check_windows lists the windows of api, and fw_check answers from the enforced ones');

# Counters: shared memory and the table.
is(spend('a', 'api', 'u1', 2), 't/4,t/3', 'a: api spends on u1');
is(spend('a', 'api', 'vip', 1), 't/9', 'a: api spends on vip at its own rate');
is(spend('a', 'api', 'root', 1), 't/5', 'a: the exempt key spends nothing');
is(spend('a', 'login', 'u1', 1), 't/2', 'a: login spends on u1');
is(spend('a', 'plan', 'c1', 1), 't/999', 'a: plan spends on c1');
is( on_storage($node, 'a', 'table', q{
		SELECT string_agg(concat_ws('/', r.ok, r.remaining), ',' ORDER BY g)
		FROM generate_series(1, 2) g, LATERAL fw_limit('api', 't1', least(g, 1)) r}),
	't/4,t/3', 'a: api spends on t1 in the table');
is( $node->safe_psql('a', q{
		SELECT string_agg(concat_ws('/', storage, key, period, remaining), ',' ORDER BY storage, key, period)
		FROM fw_counters WHERE name = 'api' AND key IN ('u1', 't1')}),
	'shmem/u1/00:01:00/3,shmem/u1/01:00:00/98,shmem/u1/24:00:00/1,'
	  . 'table/t1/00:01:00/3,table/t1/01:00:00/98,table/t1/24:00:00/1',
	'a: one counter per window of the policy, on both backends');
cmp_ok($node->safe_psql('a', 'SELECT count(*) FROM fw_counter'), '>', 0, 'a: fw_counter has rows');

# ---------------------------------------------------------------------------
# Dump a, restore into b_custom and b_plain.
# ---------------------------------------------------------------------------
my $dump = $node->basedir . '/a.dump';
my $plain = $node->basedir . '/a.sql';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('a') ], 'pg_dump -Fc a');
$node->command_ok([ 'pg_dump', '-f', $plain, '-d', $node->connstr('a') ], 'pg_dump a (plain)');
my $sql = slurp_file($plain);
like($sql, qr/^COPY public\.fw_policy /m, 'the plain dump holds the rows of fw_policy');
like($sql, qr/^COPY public\.fw_override /m, 'and of fw_override');
unlike($sql, qr/^COPY public\.fw_counter /m, 'but not the counters of fw_counter');

$node->safe_psql('postgres', 'CREATE DATABASE b_custom');
$node->safe_psql('postgres', 'CREATE DATABASE b_plain');
$node->command_checks_all([ 'pg_restore', '-d', $node->connstr('b_custom'), $dump ],
	0, [qr/^$/], [qr/^$/], 'pg_restore into b_custom: no output, no error');
$node->command_checks_all(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $plain, '-d', $node->connstr('b_plain') ],
	0, [], [qr/^$/], 'psql -f into b_plain: no error');

foreach my $db ('b_custom', 'b_plain')
{
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'}),
		$version, "$db: the extension is restored at $version");
	is(policies($db), $policies_a, "$db: fw_policies equals a's");
	is(overrides($db), $overrides_a, "$db: fw_overrides equals a's");
	is(tables($db), $tables_a, "$db: fw_policy and fw_override hold a's rows, once each");
	is($node->safe_psql($db, 'SELECT count(*) FROM fw_counter'), '0', "$db: fw_counter is empty");
	is($node->safe_psql($db, 'SELECT count(*) FROM fw_counters'), '0', "$db: no counter is carried over");
	is(windows($db), $windows_a, "$db: every policy answers window by window what a answered");

	# Calls answer as defined.  u9: 5 a minute, the hour and the shadow day
	# do not deny; calls 4 and 5 are allowed where the shadow day would deny.
	is(spend($db, 'api', 'u9', 6), 't/4,t/3,t/2,t/1,t/0,f/0', "$db: api: 5 a minute for another key");
	is( $node->safe_psql($db, q{
			SELECT concat_ws('/', calls, allowed, denied, shadow_denied) FROM fw_stats WHERE name = 'api'}),
		'6/5/1/2', "$db: fw_stats counts the calls once each, and what the shadow window would have denied");
	is(oks($db, 'api', 'vip', 11), 't,t,t,t,t,t,t,t,t,t,f', "$db: api: the override gives vip 10 a minute");
	is($node->safe_psql($db, q{
			SELECT string_agg(DISTINCT concat_ws('/', r.ok, r.remaining), ',')
			FROM generate_series(1, 20) g, LATERAL fw_limit('api', 'root', least(g, 1)) r}),
		't/5', "$db: api: the exempt key is never denied and spends nothing");
	is(spend($db, 'api', 'u10', 6), 't/4,t/3,t/2,t/1,t/0,f/0', "$db: api: and a further key gets the policy");
	is(oks($db, 'login', 'svc', 7), 't,t,t,t,t,t,f', "$db: login: the override gives svc 6 a quarter hour");
	is(oks($db, 'login', 'u9', 4), 't,t,t,f', "$db: login: 3 a quarter hour for another key");
	is(oks($db, 'beta', 'u9', 5), 't,t,t,t,t', "$db: beta: shadow windows only never deny");
	is($node->safe_psql($db, q{
			SELECT (fw_limit('plan', 'c9', 1000)).ok;
			SELECT concat_ws('/', r.ok, r.remaining, r.reset_after) FROM fw_check('plan', 'c9') r}),
		"t\nf/0/708:00:00", "$db: plan: 1000 a month from the 31st (2098-12-31 to 2099-01-31)");
	is( $node->safe_psql($db, q{
			SELECT string_agg(concat_ws('/', key, period, remaining), ',' ORDER BY key, period)
			FROM fw_counters WHERE name = 'api' AND key IN ('u9', 'vip')}),
		'u9/00:01:00/0,u9/01:00:00/95,u9/24:00:00/0,vip/00:01:00/0,vip/01:00:00/90,vip/24:00:00/0',
		"$db: the counters of the named calls, one per window");

	# Definitions go on working: an override added and removed, a window
	# replaced (not duplicated), a whole policy removed with its override.
	$node->safe_psql($db, q{SELECT fw_override('api', 'newkey', 7, '1 hour')});
	is($node->safe_psql($db, q{SELECT rate FROM fw_overrides WHERE key = 'newkey'}), '7',
		"$db: a new override can be added");
	is($node->safe_psql($db, q{SELECT fw_unoverride('api', 'newkey')}), '1', "$db: and removed");
	$node->safe_psql($db,
		q{SELECT fw_define('api', 5, '1 minute', comment => 'burst: 5 a minute; it''s "strict" \ really')});
	is(policies($db), $policies_a, "$db: redefining a restored window replaces it");
	is($node->safe_psql($db, q{SELECT fw_undefine('login')}), '2', "$db: fw_undefine removes a restored policy");
	is($node->safe_psql($db, q{SELECT count(*) FROM fw_overrides WHERE name = 'login'}), '0',
		"$db: with its override");
	is($node->safe_psql($db, q{SELECT count(*) FROM fw_overrides}), '2', "$db: other overrides are kept");
}

# ---------------------------------------------------------------------------
# Restoring into a database whose extension already holds definitions.  The
# rows of fw_policy and fw_override are data: pg_restore adds them to what
# is there.  A plain pg_restore goes on after an error, so definitions that
# clash on a primary key leave a mix; the README's ways are tried here, each
# twice in a row.
# ---------------------------------------------------------------------------
my $own_definitions = q{
	SELECT fw_define('api', 7, '1 minute');
	SELECT fw_define('only_c', 1, '1 day');
	SELECT fw_override('only_c', 'x', 3, '1 day');};
$node->safe_psql('postgres', 'CREATE DATABASE c');
$node->safe_psql('c', 'CREATE EXTENSION fixed_window');
$node->safe_psql('c', $own_definitions);
my $policies_c = policies('c');
my $overrides_c = overrides('c');

# a command's exit status (0 for success) and its standard error
sub status_and_stderr
{
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(\@_, '>', \$stdout, '2>', \$stderr);
	return ($ok ? 0 : 1, $stderr);
}
my @restore = ('pg_restore', '-d', $node->connstr('c'));
my ($ret, $err) = status_and_stderr(@restore, $dump);
like($err, qr/duplicate key value violates unique constraint "fw_policy_pkey"/,
	'c: a plain pg_restore over clashing definitions fails on the primary key');
is(policies('c'), $policies_c, "c: it kept c's policies and added none of a's");
isnt(overrides('c'), $overrides_c, "c: but it added a's overrides: a mix (the README says not to)");

# 1. The whole database, as dumped: --clean --if-exists drops the extension
#    with its definitions and creates it again, in one transaction.
foreach my $round (1, 2)
{
	$node->command_ok([ @restore, '--clean', '--if-exists', '--single-transaction', '--exit-on-error', $dump ],
		"c: pg_restore --clean --if-exists --single-transaction (round $round)");
	is(policies('c'), $policies_a, "c: round $round: fw_policies equals a's");
	is(tables('c'), $tables_a, "c: round $round: fw_policy and fw_override hold a's rows, once each");
	is(windows('c'), $windows_a, "c: round $round: every policy answers what a answered");
}

# A restore in one transaction that stops at the first error changes nothing.
$node->safe_psql('c', 'DROP EXTENSION fixed_window; CREATE EXTENSION fixed_window');
$node->safe_psql('c', $own_definitions);
($ret, $err) = status_and_stderr(@restore, '--single-transaction', '--exit-on-error', $dump);
isnt($ret, 0, 'c: pg_restore --single-transaction --exit-on-error over clashing definitions fails');
is(policies('c'), $policies_c, "c: and leaves c's policies");
is(overrides('c'), $overrides_c, "c: and c's overrides, untouched");

# 2. The definitions only, replacing the database's: the dump's rows of the
#    two tables, loaded after TRUNCATE in one transaction.
my $definitions = $node->basedir . '/definitions.sql';
$node->command_ok([ 'pg_restore', '--data-only', '--table=fw_policy', '--table=fw_override',
		'-f', $definitions, $dump ], 'pg_restore --data-only --table=fw_policy --table=fw_override -f');
foreach my $round (1, 2)
{
	$node->command_checks_all(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction',
		  '-c', 'TRUNCATE fw_override, fw_policy', '-f', $definitions, '-d', $node->connstr('c') ],
		0, [], [qr/^$/], "c: TRUNCATE and the definitions in one transaction (round $round)");
	is(tables('c'), $tables_a, "c: round $round: fw_policy and fw_override hold a's rows, once each");
	is(windows('c'), $windows_a, "c: round $round: every policy answers what a answered");
}

is(policies('a'), $policies_a, 'a: its definitions are unchanged');
is($node->safe_psql('a', q{SELECT remaining FROM fw_check('api', 'u1', 0)}), '3', 'a: its counters too');

# ---------------------------------------------------------------------------
# Ordinary roles.
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE carol LOGIN IN ROLE pg_read_all_stats;
});
my $alice_oid = $node->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'alice'});

my %definers = (
	fw_define => q{SELECT fw_define('alice_pol', 2, '1 minute')},
	fw_override => q{SELECT fw_override('alice_pol', 'k2', 4, '1 minute')},
	fw_exempt => q{SELECT fw_exempt('api', 'alice')},
	fw_unoverride => q{SELECT fw_unoverride('api', 'vip')},
	fw_undefine => q{SELECT fw_undefine('api')});

foreach my $db ('a', 'b_custom', 'b_plain')
{
	my $policies = policies($db);
	my $overrides = overrides($db);
	isnt($overrides, '', "$db: there are overrides, made by the superuser");

	foreach my $user ('alice', 'carol')
	{
		fails_with($db, $user, 'SELECT * FROM fw_policy', '42501', 'permission denied for table fw_policy',
			"$db: $user reads fw_policy");
		fails_with($db, $user, 'SELECT * FROM fw_override', '42501', 'permission denied for table fw_override',
			"$db: $user reads fw_override");
		fails_with($db, $user, q{INSERT INTO fw_override SELECT * FROM fw_override WHERE false}, '42501',
			'permission denied for table fw_override', "$db: $user writes fw_override");
		fails_with($db, $user, q{DELETE FROM fw_policy}, '42501',
			'permission denied for table fw_policy', "$db: $user deletes from fw_policy");
		is(policies($db, $user), $policies, "$db: $user reads fw_policies");
	}
	is(overrides($db, 'alice'), '', "$db: alice sees no override made by another role");
	is(overrides($db, 'carol'), $overrides, "$db: carol (pg_read_all_stats) sees every override");
	is(safe_psql_as($db, 'alice', q{SELECT (fw_limit('api', 'alice2')).ok}), 't',
		"$db: alice calls a named policy");

	foreach my $f (sort keys %definers)
	{
		fails_with($db, 'alice', $definers{$f}, '42501', "permission denied for function $f",
			"$db: alice calls $f without EXECUTE");
	}
	is(policies($db), $policies, "$db: fw_policies unchanged by alice's attempts");
	is(overrides($db), $overrides, "$db: fw_overrides unchanged by alice's attempts");

	$node->safe_psql($db, q{
		GRANT EXECUTE ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) TO alice});
	is(safe_psql_as($db, 'alice', $definers{fw_define}), '', "$db: with EXECUTE, alice calls fw_define");
	is( safe_psql_as($db, 'bob', q{
			SELECT concat_ws('/', name, period, rate) FROM fw_policies WHERE name = 'alice_pol'}),
		'alice_pol/00:01:00/2', "$db: her policy is listed for everyone");
	is(oks($db, 'alice_pol', 'k', 3, 'alice'), 't,t,f', "$db: and works");
	fails_with($db, 'alice', $definers{fw_override}, '42501', 'permission denied for function fw_override',
		"$db: alice still calls fw_override without EXECUTE");

	# Her own overrides she sees; nobody else's, and bob sees none of hers.
	$node->safe_psql($db, q{GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer) TO alice});
	is(safe_psql_as($db, 'alice', $definers{fw_override}), '', "$db: with EXECUTE, alice calls fw_override");
	like( safe_psql_as($db, 'alice', q{SELECT concat_ws('/', name, key, period, rate, created_by) FROM fw_overrides}),
		qr{^alice_pol/k2/00:01:00/4/(alice|$alice_oid)$}, "$db: alice sees exactly her override");
	is(overrides($db, 'bob'), '', "$db: bob sees none");
	is($node->safe_psql($db, q{SELECT count(*) FROM fw_overrides WHERE key = 'k2'}), '1',
		"$db: the superuser sees hers");
	is( safe_psql_as($db, 'carol', q{SELECT count(*) FROM fw_overrides}),
		$node->safe_psql($db, q{SELECT count(*) FROM fw_overrides}), "$db: carol sees them all");
	is(oks($db, 'alice_pol', 'k2', 5, 'alice'), 't,t,t,t,f', "$db: her override applies");
	fails_with($db, 'alice', 'SELECT * FROM fw_override', '42501', 'permission denied for table fw_override',
		"$db: alice with EXECUTE still cannot read fw_override");
}

$node->stop;
done_testing();
