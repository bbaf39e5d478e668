# Many sessions at once on one key and on many keys: pgbench drives eight
# clients calling fw_limit, with the clock fixed inside one window, and every
# call's answer is logged.  Exactly "rate" calls per key are allowed, never
# one more.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('load');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
fixed_window.max_counters = 10000
fixed_window.debug_now = '2026-06-01 12:00:00+00'
max_connections = 40
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION fixed_window;
CREATE UNLOGGED TABLE calls (key text, ok boolean);
});

# One hot key: 8 clients x 300 calls = 2400 calls against a rate of 1000.
$node->pgbench(
	'--no-vacuum --client=8 --jobs=2 --transactions=300',
	0,
	[qr{processed: 2400/2400}],
	[qr{^$}],
	'pgbench on one hot key',
	{
		'001_hot' => q{
INSERT INTO calls SELECT 'hot', ok FROM fw_limit('load', 'hot', 1000, '1 hour');
}
	});

is( $node->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE ok) || '/' || count(*) FROM calls WHERE key = 'hot'}),
	'1000/2400',
	'exactly the rate is allowed on a hot key');

# 1000 keys at random, rate 3: each key allows min(3, its calls).
$node->pgbench(
	'--no-vacuum --client=8 --jobs=2 --transactions=1000',
	0,
	[qr{processed: 8000/8000}],
	[qr{^$}],
	'pgbench on 1000 random keys',
	{
		'001_random' => q{
\set k random(1, 1000)
INSERT INTO calls SELECT :k::text, ok FROM fw_limit('load', :k::text, 3, '1 hour');
}
	});

is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT key, count(*) FILTER (WHERE ok) AS allowed, count(*) AS calls
			FROM calls WHERE key <> 'hot' GROUP BY key) AS per_key
		WHERE allowed <> least(3, calls)}),
	'0',
	'every random key allowed exactly min(rate, calls)');

is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM calls WHERE key <> 'hot'}),
	'8000',
	'every random call was answered');

# The counters agree with the log: a further call on any key is denied
# exactly when the key has had rate calls.
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT key, count(*) FILTER (WHERE ok) AS allowed
			FROM calls WHERE key <> 'hot' GROUP BY key) AS per_key
		WHERE (fw_check('load', key, 3, '1 hour', cost => 0)).remaining <> 3 - allowed}),
	'0',
	'remaining tokens match the allowed calls of every key');

$node->stop;
done_testing();
