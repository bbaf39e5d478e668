# A named call on a policy of two windows is one atomic decision (issue 11):
# "Under 16 sessions on one key with windows of 1 s (rate 50) and 1 min
# (rate 1,000), no window over-admits and no call spends in one window while
# denied by another."
#
# Policy "atom" has a window of 1 second (rate 50) and one of 1 minute
# (rate 1,000).  16 pgbench sessions call fw_limit_windows('atom', 'hot')
# on the real clock for 24 seconds, with shared-memory counters and then
# with table counters.  Each call is logged in the statement that makes it,
# one row per window with that window's verdict, together with the time the
# statement began and a time after the call ended.  At 50 calls a second the
# minute's 1,000 tokens are gone after about 20 seconds, so the run sees
# calls denied by the second window alone (the minute still had tokens) and
# calls denied by the minute window alone (the second still had tokens).
#
# The minute window's grid is anchored at the whole second the policy is
# (re)defined, just before each run, so that the run lies in one minute
# window (with the epoch grid a run could straddle a minute boundary, and
# then the minute would never run dry).  The rates and periods are the
# issue's; the second window keeps the default epoch grid.
#
# Checked from the log, for each backend, with "allowed" meaning the call's
# answer, bool_and(ok) over its windows:
#
# - no call fails (pgbench counts a deadlock or serialization failure as a
#   failed transaction, on stdout, not as an error);
# - every call has one row per window, as defined; every row names a whole
#   window of its grid; the two windows of a call overlap each other and the
#   time of the call (one clock reading per call);
# - a window that denies holds nothing (remaining 0, cost 1);
# - in every window (period, window_start): allowed calls <= rate, and the
#   remaining values the allowed calls report are exactly rate-1, rate-2,
#   ..., rate-m, each once: every allowed call spent exactly one token there
#   and nothing else spent between them;
# - a call denied by another window reports what this window holds, between
#   rate - m and rate and at least 1; in a 1-second window, a call denied by
#   the minute window reports exactly 50 - m (the minute runs dry only after
#   its last allowed call, so nothing else can have spent): denied calls
#   spent nothing;
# - a window that denied a call had admitted exactly its rate; a 1-second
#   window in which the minute denied nothing admitted min(50, calls);
# - the two windows saw the allowed calls of a second in the same order (the
#   calls are serializable);
# - right after the run, fw_counters and fw_check_windows(..., 0) hold
#   rate - m in the windows they show, and fw_stats counted each call once;
# - the run is a real test: the minute window admitted exactly 1,000 and
#   denied calls, and the second window denied calls while the minute had
#   tokens.
#
# What the test assumes of the machine: 16 sessions make well over 50 calls a
# second on one key on either backend (thousands, on the machine this was
# written on), and the run ends within a minute of its policy's definition.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $seconds = 24;
my $clients = 16;

my $node = new_node('atomicity', conf => q{
max_connections = 40
});

$node->safe_psql('postgres', q{
SELECT fw_define('atom', 50, '1 second');

-- every window row of every call, as fw_limit_windows answered it;
-- t0: the statement began (before the call), t1: after the call returned
CREATE TABLE call_log (
    run text, call bigint, t0 timestamptz,
    period interval, rate integer, capacity integer, shadow boolean,
    ok boolean, retry_after interval, remaining integer, reset_after interval,
    window_start timestamptz, window_end timestamptz,
    t1 timestamptz);

-- one row per call: its answer and its two windows side by side
CREATE TABLE calls (
    run text, call bigint, nrows integer, s_rows integer, m_rows integer,
    ok boolean, t0 timestamptz, t1 timestamptz,
    s_ok boolean, s_rem integer, s_start timestamptz, s_end timestamptz,
    m_ok boolean, m_rem integer, m_start timestamptz, m_end timestamptz,
    PRIMARY KEY (run, call));

-- the counters right after a run, as two readers show them
CREATE TABLE after_run (
    run text, source text, period interval, remaining integer,
    window_start timestamptz);

-- each window row with the answer of its call
CREATE VIEW judged AS
    SELECT l.run, l.call, l.period, l.rate, l.ok AS window_ok, c.ok AS call_ok,
           l.remaining, l.window_start
    FROM call_log AS l JOIN calls AS c USING (run, call);

-- every window (period, window_start) any call was judged in
CREATE VIEW instances AS
    SELECT run, period, rate, window_start,
           count(*) AS calls,
           count(*) FILTER (WHERE call_ok) AS allowed,
           count(*) FILTER (WHERE NOT window_ok) AS denied_here,
           count(*) FILTER (WHERE window_ok AND NOT call_ok) AS denied_elsewhere,
           count(DISTINCT remaining) FILTER (WHERE call_ok) AS allowed_distinct,
           min(remaining) FILTER (WHERE call_ok) AS allowed_min,
           max(remaining) FILTER (WHERE call_ok) AS allowed_max,
           min(remaining) FILTER (WHERE window_ok AND NOT call_ok) AS held_min,
           max(remaining) FILTER (WHERE window_ok AND NOT call_ok) AS held_max
    FROM judged
    GROUP BY run, period, rate, window_start;
});

# Runs a query listing what is wrong and expects it to list nothing; on
# failure the first ten rows are the evidence.
sub none_of
{
	my ($query, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($node->safe_psql('postgres', "SELECT * FROM ($query) AS wrong LIMIT 10"),
		'', $name);
}

# fw_stats of the policy: calls|allowed|denied
sub stats
{
	return $node->safe_psql('postgres', q{
		SELECT coalesce(sum(calls), 0) || '|' || coalesce(sum(allowed), 0) || '|'
		       || coalesce(sum(denied), 0)
		FROM fw_stats WHERE name = 'atom'});
}

foreach my $storage ('shmem', 'table')
{
	my $r = "run = '$storage'";

	# new sessions use this storage
	$node->safe_psql('postgres',
		"ALTER DATABASE postgres SET fixed_window.storage = '$storage'");

	my ($calls0, $allowed0, $denied0) = split /\|/, stats();

	# The minute window's grid starts at the current whole second, so that
	# the whole run lies in the minute window [start, start + 1 minute).
	my $start = $node->safe_psql('postgres',
		"SELECT extract(epoch FROM date_trunc('second', clock_timestamp()))::bigint");
	$node->safe_psql('postgres',
		"SELECT fw_define('atom', 1000, '1 minute', start => to_timestamp($start))");
	my $start_ts = "to_timestamp($start)";

	$node->pgbench(
		"--no-vacuum --client=$clients --jobs=2 --protocol=prepared --time=$seconds",
		0,
		[ qr{processed: \d+}, qr{number of failed transactions: 0 \(} ],
		[qr{^$}],
		"$clients sessions for $seconds seconds on one key, no call failing ($storage)",
		{
			"010_atom_$storage" => qq{
	INSERT INTO call_log (run, call, t0, period, rate, capacity, shadow, ok,
	                      retry_after, remaining, reset_after, window_start, window_end, t1)
	SELECT '$storage', pg_current_xact_id()::text::bigint, statement_timestamp(),
	       w.period, w.rate, w.capacity, w.shadow, w.ok, w.retry_after, w.remaining,
	       w.reset_after, w.window_start, w.window_end, clock_timestamp()
	FROM fw_limit_windows('atom', 'hot') AS w;
	}
		});

	# Right away, while the minute window is still current: what the
	# counters hold, and what the statistics counted.
	my ($calls1, $allowed1, $denied1) = split /\|/, stats();
	$node->safe_psql('postgres', qq{
		INSERT INTO after_run
		SELECT '$storage', 'fw_counters', period, remaining, window_start
		FROM fw_counters
		WHERE name = 'atom' AND key = 'hot' AND storage = '$storage';
		INSERT INTO after_run
		SELECT '$storage', 'fw_check_windows', period, remaining, window_start
		FROM fw_check_windows('atom', 'hot', 0);
	});

	$node->safe_psql('postgres', qq{
		INSERT INTO calls
		SELECT run, call, count(*),
		       count(*) FILTER (WHERE period = '1 second' AND rate = 50
		                        AND capacity = 50 AND NOT shadow),
		       count(*) FILTER (WHERE period = '1 minute' AND rate = 1000
		                        AND capacity = 1000 AND NOT shadow),
		       bool_and(ok), min(t0), min(t1),
		       bool_and(ok) FILTER (WHERE period = '1 second'),
		       max(remaining) FILTER (WHERE period = '1 second'),
		       max(window_start) FILTER (WHERE period = '1 second'),
		       max(window_end) FILTER (WHERE period = '1 second'),
		       bool_and(ok) FILTER (WHERE period = '1 minute'),
		       max(remaining) FILTER (WHERE period = '1 minute'),
		       max(window_start) FILTER (WHERE period = '1 minute'),
		       max(window_end) FILTER (WHERE period = '1 minute')
		FROM call_log WHERE $r
		GROUP BY run, call;
		ANALYZE call_log;
		ANALYZE calls;
	});

	my ($calls, $allowed, $s_only, $m_only, $both, $seconds_seen, $saturated,
		$dry_after) = split /\|/, $node->safe_psql('postgres', qq{
		SELECT count(*), count(*) FILTER (WHERE ok),
		       count(*) FILTER (WHERE NOT s_ok AND m_ok),
		       count(*) FILTER (WHERE s_ok AND NOT m_ok),
		       count(*) FILTER (WHERE NOT s_ok AND NOT m_ok),
		       (SELECT count(*) FROM instances WHERE $r AND period = '1 second'),
		       (SELECT count(*) FROM instances WHERE $r AND period = '1 second'
		                                           AND allowed = rate),
		       coalesce(round(extract(epoch FROM
		             max(t1) FILTER (WHERE ok AND m_rem = 0) - $start_ts), 1)::text
		                || ' s', 'never')
		FROM calls WHERE $r});
	note "$storage: $calls calls, $allowed allowed; denied by the second only "
	  . "$s_only, by the minute only $m_only, by both $both; $seconds_seen "
	  . "one-second windows, $saturated of them admitted 50; the minute ran dry "
	  . "after: $dry_after";

	# --- the log is complete and well formed ---

	cmp_ok($calls, '>', 0, "calls were logged ($storage)");

	none_of(qq{
		SELECT call, nrows, s_rows, m_rows FROM calls
		WHERE $r AND NOT (nrows = 2 AND s_rows = 1 AND m_rows = 1)},
		"every call has one row per window, with the rate, capacity and shadow defined ($storage)");

	none_of(qq{
		SELECT call, period, window_start, window_end FROM call_log
		WHERE $r AND NOT (window_end - window_start = period
		    AND CASE WHEN period = '1 second'
		             THEN window_start = date_trunc('second', window_start)
		             ELSE window_start = $start_ts END)},
		"every row names a whole window of its grid, and all calls fell in one minute window ($storage)");

	none_of(qq{
		SELECT call, t0, t1, s_start, m_start FROM calls
		WHERE $r AND NOT (greatest(s_start, m_start, t0) < least(s_end, m_end)
		                  AND greatest(s_start, m_start, t0) <= t1)},
		"every call's two windows overlap each other and the time of the call ($storage)");

	none_of(qq{
		SELECT call, period, remaining FROM call_log
		WHERE $r AND NOT ok AND remaining <> 0},
		"a window that denies holds no token ($storage)");

	# --- no window over-admits ---

	none_of(qq{
		SELECT period, window_start, allowed, rate FROM instances
		WHERE $r AND allowed > rate},
		"no window admitted more calls than its rate ($storage)");

	none_of(qq{
		SELECT period, window_start, allowed, allowed_distinct, allowed_min, allowed_max
		FROM instances
		WHERE $r AND allowed > 0
		  AND NOT (allowed_distinct = allowed AND allowed_min = rate - allowed
		           AND allowed_max = rate - 1)},
		"in every window the allowed calls left rate-1, rate-2, ..., rate-m tokens, each once ($storage)");

	# --- no call spends in one window while denied by another ---

	none_of(qq{
		SELECT period, window_start, allowed, held_min, held_max FROM instances
		WHERE $r AND denied_elsewhere > 0
		  AND NOT (held_min >= greatest(1, rate - allowed) AND held_max <= rate)},
		"a call denied by another window found this one holding between rate - m and rate ($storage)");

	none_of(qq{
		SELECT window_start, allowed, held_min, held_max FROM instances
		WHERE $r AND period = '1 second' AND denied_elsewhere > 0
		  AND NOT (held_min = rate - allowed AND held_max = rate - allowed)},
		"a call the minute denied found its second holding exactly 50 - m: denied calls spent nothing ($storage)");

	none_of(qq{
		SELECT period, window_start, allowed, denied_here FROM instances
		WHERE $r AND denied_here > 0 AND allowed <> rate},
		"a window that denied a call had admitted exactly its rate ($storage)");

	none_of(qq{
		SELECT s_start, count(*) AS calls, count(*) FILTER (WHERE ok) AS allowed
		FROM calls WHERE $r
		GROUP BY s_start
		HAVING bool_and(m_ok) AND count(*) FILTER (WHERE ok) <> least(50, count(*))},
		"a second in which the minute denied nothing admitted min(50, calls) ($storage)");

	none_of(qq{
		SELECT s_start, call, s_rem, m_rem, n FROM (
			SELECT s_start, call, s_rem, m_rem,
			       row_number() OVER (PARTITION BY s_start ORDER BY m_rem DESC) AS n
			FROM calls WHERE $r AND ok) AS c
		WHERE s_rem <> 50 - n},
		"both windows saw the allowed calls of every second in the same order ($storage)");

	# --- the counters and the statistics agree with the log ---

	none_of(qq{
		SELECT a.source, a.period, a.window_start, a.remaining, i.allowed
		FROM after_run AS a
		LEFT JOIN instances AS i
		       ON i.run = a.run AND i.period = a.period AND i.window_start = a.window_start
		WHERE a.run = '$storage'
		  AND a.remaining <> CASE WHEN a.period = '1 minute' THEN 1000 ELSE 50 END
		                     - coalesce(i.allowed, 0)},
		"after the run every counter holds rate minus the allowed calls of its window ($storage)");

	is( $node->safe_psql('postgres', qq{
			SELECT string_agg(source || ' ' || period || ' '
			                  || (window_start = $start_ts), ', ' ORDER BY source)
			FROM after_run WHERE run = '$storage' AND period = '1 minute'}),
		'fw_check_windows 00:01:00 true, fw_counters 00:01:00 true',
		"fw_counters and fw_check_windows show the run's minute window ($storage)");

	is(($calls1 - $calls0) . '|' . ($allowed1 - $allowed0) . '|' . ($denied1 - $denied0),
		"$calls|$allowed|" . ($calls - $allowed),
		"fw_stats counted every call once, with its answer ($storage)");

	# --- the run tested something ---

	is($node->safe_psql('postgres', qq{
			SELECT allowed FROM instances WHERE $r AND period = '1 minute'}),
		'1000', "the minute window admitted exactly 1000 ($storage)");
	cmp_ok($m_only, '>', 0,
		"the minute window denied calls the second window had tokens for ($storage)");
	cmp_ok($s_only, '>', 0,
		"the second window denied calls the minute window had tokens for ($storage)");
}

$node->stop;
done_testing();
