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
# Checked for each backend: no call fails, the loop itself fails nothing;
# every call has its two windows, each with a period of the definition;
# every call's rates come from one definition; and the run tested
# something: calls saw many versions, with and without overrides.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seconds = 8;
my $clients = 16;
my $admins = 2;

my $node = PostgreSQL::Test::Cluster->new('admin_load');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
max_connections = 40
fixed_window.debug_now = '2026-07-01 10:00:00+00'
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION fixed_window;
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

foreach my $storage ('shmem', 'table')
{
	$node->safe_psql('postgres',
		"ALTER DATABASE postgres SET fixed_window.storage = '$storage'");

	my @admins = map { [ admin_loop($storage) ] } 1 .. $admins;
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
	}
		});
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

$node->stop;
done_testing();
