# An admin changing a policy never fails its callers, and every call is
# judged by exactly one definition (issue 19, items 2 and 3).
#
# 16 pgbench sessions call fw_limit_windows('churn', key) for a few seconds
# while one session redefines the policy, overrides keys and removes
# overrides in a loop of its own transactions, on each backend.  1.2.1 failed
# such calls with SQLSTATE 55000 ("the table fw_policy of fixed_window is
# missing or altered", 7 errors in 20 s on shared memory, 16-20 on the
# table) and, on the table backend, answered some with a period read from
# freed memory.  The server runs with MALLOC_PERTURB_ (make test sets it),
# so that such a read shows.
#
# Every definition the loop writes ties its two windows together: version v
# of the policy is (1 minute: 1000 + v, 1 hour: 1000000 + v), and version v
# of a key's override is (1 minute: 5000 + v, 1 hour: 5000000 + v), each
# written in one transaction.  A call that mixed two definitions would show
# an hour rate that is not its minute rate plus 999000 (the policy's) or
# plus 4995000 (an override's).
#
# A DBA's maintenance runs meanwhile: VACUUM and ANALYZE of the extension's
# tables, and REINDEX INDEX CONCURRENTLY of their primary keys, in one
# loop, and VACUUM of fw_counter as fast as it goes in another, while
# further sessions create counters of new keys.  1.3 before its review
# failed table-backend calls with 55000 ("the counter table of fixed_window
# is missing or altered": VACUUM's invalidation reset the table's id while a
# call looked it up), and wrote new rows into the primary key alone, so that
# the index being rebuilt missed them and keys got two counters.
#
# Checked for each backend: no call fails, the loops themselves fail
# nothing; every call has its two windows, each with a period of the
# definition; every call's rates come from one definition; the run tested
# something: calls saw many versions, with and without overrides; and
# fw_counter's index holds every row, one per counter.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $seconds = 8;
my $clients = 16;
my $admins = 2;

my $node = new_node('admin_load', conf => q{
max_connections = 40
fixed_window.max_counters = 1000000
fixed_window.database_share = 100
fixed_window.role_share = 100
fixed_window.debug_now = '2026-07-01 10:00:00+00'
});

$node->safe_psql('postgres', q{
CREATE EXTENSION amcheck;
SELECT fw_define('churn', 1000, '1 minute');
SELECT fw_define('churn', 1000000, '1 hour');
CREATE TABLE call_log (run text, call bigint, key text, period interval, rate integer);
});

# The admin's loop: redefine, override a key, remove another key's
# overrides, each its own transaction, until the deadline.
sub admin_loop
{
	my ($storage) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			'-c', qq{
DO \$\$
DECLARE
    v integer := 0;
    deadline timestamptz := clock_timestamp() + interval '$seconds seconds';
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        v := v + 1;
        PERFORM fw_define('churn', 1000 + v % 900, '1 minute');
        PERFORM fw_define('churn', 1000000 + v % 900, '1 hour');
        COMMIT;
        PERFORM fw_override('churn', 'k' || v % 4, 5000 + v % 900, '1 minute');
        PERFORM fw_override('churn', 'k' || v % 4, 5000000 + v % 900, '1 hour');
        COMMIT;
        PERFORM fw_unoverride('churn', 'k' || (v + 2) % 4);
        COMMIT;
    END LOOP;
    RAISE NOTICE 'admin loop: % rounds', v;
END \$\$;}
		],
		'>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

# The DBA's loop: maintenance commands, and a scrape's reads of fw_capacity
# and fw_stats, each its own statement, until the deadline (pgbench runs
# them outside any transaction block).
my $maintenance = $node->basedir . '/maintenance.sql';
PostgreSQL::Test::Utils::append_to_file($maintenance, q{
VACUUM fw_counter;
ANALYZE fw_counter;
VACUUM fw_counter;
ANALYZE fw_policy, fw_override;
VACUUM fw_override;
REINDEX INDEX CONCURRENTLY fw_counter_pkey;
REINDEX INDEX CONCURRENTLY fw_policy_pkey;
REINDEX INDEX CONCURRENTLY fw_override_pkey;
SELECT count(*) FROM fw_capacity;
SELECT count(*) FROM fw_stats;
});
my $vacuum = $node->basedir . '/vacuum.sql';
PostgreSQL::Test::Utils::append_to_file($vacuum, "VACUUM fw_counter;\n");
sub maintenance_loop
{
	my ($file) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--protocol=simple', '--client=1', "--time=$seconds",
			'--file', $file, $node->connstr('postgres')
		],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

foreach my $storage ('shmem', 'table')
{
	$node->safe_psql('postgres',
		"ALTER DATABASE postgres SET fixed_window.storage = '$storage'");

	my @admins = map { [ admin_loop($storage) ] } 1 .. $admins;
	my @maintenance = map { maintenance_loop($_) } ($maintenance, $vacuum);
	$node->pgbench(
		"--no-vacuum --client=$clients --jobs=2 --protocol=prepared --time=$seconds",
		0,
		[ qr{processed: \d+}, qr{number of failed transactions: 0 \(} ],
		[qr{^$}],
		"$clients sessions calling a policy while it is redefined: no call fails ($storage)",
		{
			"014_churn_$storage" => qq{
	\\set k random(0, 7)
	INSERT INTO call_log (run, call, key, period, rate)
	SELECT '$storage', pg_current_xact_id()::text::bigint, 'k' || :k, w.period, w.rate
	FROM fw_limit_windows('churn', 'k' || :k) AS w;
	},
			"014_new_keys_$storage" => q{
	\set k random(1, 100000000)
	SELECT (fw_limit('fresh', 'n' || :k, 5, '1 hour')).ok;
	}
		});
	foreach my $loop (@maintenance)
	{
		my ($h, $out, $err) = @$loop;
		ok($h->finish, "a maintenance loop failed nothing ($storage)") or diag($$err);
		like($$out, qr{number of failed transactions: 0 }, "its commands all ran ($storage)");
	}
	foreach my $admin (@admins)
	{
		my ($h, $out, $err) = @$admin;
		ok($h->finish, "the admin's loop failed nothing ($storage)") or diag($$err);
		my ($rounds) = $$err =~ /admin loop: (\d+) rounds/;
		note "$storage: an admin's loop made " . ($rounds // '?') . ' rounds';
	}

	my ($calls, $bad_rows, $bad_periods, $mixed, $versions, $with_override, $without) =
	  split /\|/, $node->safe_psql('postgres', qq{
		WITH calls AS (
			SELECT call, count(*) AS nrows,
			       max(rate) FILTER (WHERE period = '1 minute') AS m,
			       max(rate) FILTER (WHERE period = '1 hour') AS h,
			       count(*) FILTER (WHERE period NOT IN ('1 minute', '1 hour')) AS odd
			FROM call_log WHERE run = '$storage' GROUP BY call)
		SELECT count(*),
		       count(*) FILTER (WHERE nrows <> 2 OR m IS NULL OR h IS NULL),
		       sum(odd),
		       count(*) FILTER (WHERE h - m NOT IN (999000, 4995000)),
		       count(DISTINCT m),
		       count(*) FILTER (WHERE h - m = 4995000),
		       count(*) FILTER (WHERE h - m = 999000)
		FROM calls});
	note "$storage: $calls calls; $versions distinct minute rates; "
	  . "$with_override judged with an override, $without without";

	cmp_ok($calls, '>', 0, "calls were logged ($storage)");
	is($bad_rows, 0, "every call has its two windows ($storage)");
	is($bad_periods, 0, "every window's period is one of the definition's ($storage)");
	is($mixed, 0, "every call's rates come from one definition ($storage)");
	cmp_ok($versions, '>', 10, "the calls saw many versions of the policy ($storage)");
	cmp_ok($with_override, '>', 0, "some calls were judged with an override ($storage)");
	cmp_ok($without, '>', 0, "some calls were judged without ($storage)");
}

# The index of fw_counter holds every row, and no counter has two rows.
is( $node->safe_psql('postgres', q{
		SELECT bt_index_check('fw_counter_pkey', true), bt_index_check('fw_policy_pkey', true),
		       bt_index_check('fw_override_pkey', true)}),
	'||', "the tables' primary keys hold every row, after the reindexing");
is( $node->safe_psql('postgres', q{
		SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
		SELECT count(*) - count(DISTINCT (name, key, period_id)) FROM fw_counter}),
	'0', 'no counter has two rows');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM fw_counter WHERE name = 'fresh'}),
	'>', 100, 'new keys were created during the run');

$node->stop;
done_testing();
