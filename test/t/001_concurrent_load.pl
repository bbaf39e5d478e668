# Many sessions at once on one key and on many keys: pgbench drives eight
# clients calling fw_limit, with the clock fixed inside one window, and every
# call's answer is logged.  Exactly "rate" calls per key are allowed, never
# one more: with counters in shared memory, then in the table.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('load', conf => q{
fixed_window.max_counters = 10000
fixed_window.debug_now = '2026-06-01 12:00:00+00'
max_connections = 40
});

foreach my $storage ('shmem', 'table')
{
	# new sessions use this storage
	$node->safe_psql('postgres', qq{
ALTER DATABASE postgres SET fixed_window.storage = '$storage';
CREATE UNLOGGED TABLE calls_$storage (key text, ok boolean);
});

	# One hot key: 8 clients x 300 calls = 2400 calls against a rate of 1000.
	$node->pgbench(
		'--no-vacuum --client=8 --jobs=2 --transactions=300',
		0,
		[qr{processed: 2400/2400}],
		[qr{^$}],
		"pgbench on one hot key ($storage)",
		{
			"001_hot_$storage" => qq{
	INSERT INTO calls_$storage SELECT 'hot', ok FROM fw_limit('load_$storage', 'hot', 1000, '1 hour');
	}
		});

	is( $node->safe_psql('postgres',
			qq{SELECT count(*) FILTER (WHERE ok) || '/' || count(*) FROM calls_$storage WHERE key = 'hot'}),
		'1000/2400',
		"exactly the rate is allowed on a hot key ($storage)");

	# 1000 keys at random, rate 3: each key allows min(3, its calls).
	$node->pgbench(
		'--no-vacuum --client=8 --jobs=2 --transactions=1000',
		0,
		[qr{processed: 8000/8000}],
		[qr{^$}],
		"pgbench on 1000 random keys ($storage)",
		{
			"001_random_$storage" => qq{
	\\set k random(1, 1000)
	INSERT INTO calls_$storage SELECT :k::text, ok FROM fw_limit('load_$storage', :k::text, 3, '1 hour');
	}
		});

	is( $node->safe_psql('postgres', qq{
			SELECT count(*) FROM (
				SELECT key, count(*) FILTER (WHERE ok) AS allowed, count(*) AS calls
				FROM calls_$storage WHERE key <> 'hot' GROUP BY key) AS per_key
			WHERE allowed <> least(3, calls)}),
		'0',
		"every random key allowed exactly min(rate, calls) ($storage)");

	is( $node->safe_psql('postgres',
			qq{SELECT count(*) FROM calls_$storage WHERE key <> 'hot'}),
		'8000',
		"every random call was answered ($storage)");

	# The counters agree with the log: a further call on any key is denied
	# exactly when the key has had rate calls.
	is( $node->safe_psql('postgres', qq{
			SELECT count(*) FROM (
				SELECT key, count(*) FILTER (WHERE ok) AS allowed
				FROM calls_$storage WHERE key <> 'hot' GROUP BY key) AS per_key
			WHERE (fw_check('load_$storage', key, 3, '1 hour', cost => 0)).remaining <> 3 - allowed}),
		'0',
		"remaining tokens match the allowed calls of every key ($storage)");
}

$node->stop;
done_testing();
